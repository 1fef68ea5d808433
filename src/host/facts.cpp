// Host facts from procfs and sysfs; see facts.hpp.
#include "host/facts.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>

extern char** environ;

namespace gsq::host {

namespace fs = std::filesystem;

Field<std::string> read_first_line(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return Field<std::string>::none(fmt::format("{} not readable", p.string()));
  std::string line;
  std::getline(in, line);
  return line;
}

std::string format_cpulist(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

Field<std::string> cpu_governor() {
  std::map<std::string, int> counts;
  for (int cpu = 0;; ++cpu) {
    const fs::path p = fmt::format("/sys/devices/system/cpu/cpu{}/cpufreq/scaling_governor", cpu);
    if (!fs::exists(fs::path(fmt::format("/sys/devices/system/cpu/cpu{}", cpu)))) break;
    auto g = read_first_line(p);
    if (g.ok()) counts[*g]++;
  }
  if (counts.empty())
    return Field<std::string>::none("no cpufreq in sysfs (virtual machine or driver without cpufreq)");
  if (counts.size() == 1) return counts.begin()->first;
  std::string s = "mixed:";
  for (const auto& [g, n] : counts) s += fmt::format(" {}×{}", g, n);
  return s;
}

Field<std::string> aspm_policy() {
  auto line = read_first_line("/sys/module/pcie_aspm/parameters/policy");
  if (!line.ok()) return line;
  // "default performance [powersave] powersupersave": the bracketed word is in force.
  const auto open = line->find('['), close = line->find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return *line;
  return line->substr(open + 1, close - open - 1);
}

Field<std::string> iommu_state() {
  std::error_code ec;
  size_t groups = 0;
  if (fs::exists("/sys/kernel/iommu_groups", ec)) {
    for (auto it = fs::directory_iterator("/sys/kernel/iommu_groups", ec); !ec && it != fs::directory_iterator();
         it.increment(ec))
      ++groups;
  } else {
    return Field<std::string>::none("/sys/kernel/iommu_groups not present");
  }
  std::string cmdline_hint;
  if (auto cmd = read_first_line("/proc/cmdline"); cmd.ok()) {
    std::istringstream ss(*cmd);
    for (std::string w; ss >> w;)
      if (w.starts_with("iommu") || w.starts_with("intel_iommu") || w.starts_with("amd_iommu")) cmdline_hint += " " + w;
  }
  return groups == 0 ? "off" + cmdline_hint : fmt::format("on ({} groups){}", groups, cmdline_hint);
}

std::vector<std::string> container_hints() {
  std::vector<std::string> hints;
  std::error_code ec;
  if (fs::exists("/.dockerenv", ec)) hints.emplace_back("/.dockerenv present (Docker)");
  if (fs::exists("/run/.containerenv", ec)) hints.emplace_back("/run/.containerenv present (Podman)");
  if (std::getenv("KUBERNETES_SERVICE_HOST")) hints.emplace_back("KUBERNETES_SERVICE_HOST set (Kubernetes pod)");
  if (auto cg = read_first_line("/proc/self/cgroup");
      cg.ok() && (cg->find("docker") != std::string::npos || cg->find("kubepods") != std::string::npos)) {
    hints.push_back("cgroup " + *cg);
  }
  if (auto cpu_max = read_first_line("/sys/fs/cgroup/cpu.max"); cpu_max.ok() && !cpu_max->starts_with("max")) {
    hints.push_back("cgroup CPU quota " + *cpu_max);
  }
  return hints;
}

std::vector<int> parse_cpulist(const std::string& text) {
  std::vector<int> cpus;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, ',');) {
    int a = 0, b = 0;
    const auto dash = part.find('-');
    const char* first = part.data();
    const char* last = part.data() + part.size();
    if (dash == std::string::npos) {
      if (std::from_chars(first, last, a).ec != std::errc{}) return {};
      cpus.push_back(a);
    } else {
      if (std::from_chars(first, first + dash, a).ec != std::errc{} ||
          std::from_chars(first + dash + 1, last, b).ec != std::errc{} || b < a || b - a > 65536) {
        return {};
      }
      for (int c = a; c <= b; ++c) cpus.push_back(c);
    }
  }
  return cpus;
}

std::optional<std::string> hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return std::nullopt;
  return std::string(name);
}

std::optional<std::string> kernel_release() {
  utsname u{};
  if (::uname(&u) != 0) return std::nullopt;
  return fmt::format("{} {}", u.release, u.machine);
}

Field<std::string> os_pretty_name() {
  std::ifstream in("/etc/os-release");
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("PRETTY_NAME=")) {
      std::string v = line.substr(12);
      std::erase(v, '"');
      return v;
    }
  }
  return Field<std::string>::none("/etc/os-release has no PRETTY_NAME");
}

Field<std::string> cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("model name") && line.find(':') != std::string::npos)
      return line.substr(std::min(line.size(), line.find(':') + 2));
  return Field<std::string>::none("/proc/cpuinfo has no model name");
}

uint32_t cpu_count() {
  return static_cast<uint32_t>(std::max(1L, ::sysconf(_SC_NPROCESSORS_CONF)));
}

Field<std::map<std::string, std::string>> nvidia_module_params() {
  std::ifstream in("/proc/driver/nvidia/params");
  if (!in)
    return Field<std::map<std::string, std::string>>::none(
        "/proc/driver/nvidia/params not readable (no NVIDIA kernel module)");
  std::map<std::string, std::string> params;
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string v = line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(' '));
    params[line.substr(0, colon)] = v;
  }
  return params;
}

std::optional<std::vector<int>> process_cpu_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return std::nullopt;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

std::vector<std::pair<std::string, std::string>> environment() {
  std::vector<std::pair<std::string, std::string>> vars;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string_view::npos) vars.emplace_back(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return vars;
}

}  // namespace gsq::host
