// Tunables of the host (sysfs, procfs, systemctl), the nvidia module (modprobe.d and /proc/driver/nvidia/params), the
// environment file and the GPUs (GpuControl).
#include "tune/machine.hpp"

#include "core/error.hpp"
#include "host/facts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace gsq::tune {

namespace fs = std::filesystem;

namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

Field<std::string> read_line(const fs::path& p) {
  auto f = host::read_first_line(p);
  if (!f.ok()) return Field<std::string>::none(fmt::format("{} is missing here", p.filename().string()));
  return trim(*f);
}

void write_file(const fs::path& p, const std::string& value, const std::string& id) {
  std::ofstream out(p);
  if (!out || !(out << value << '\n') || !out.flush())
    throw Error(ExitCode::findings, fmt::format("{}: writing '{}' to {} failed (root needed?)", id, value, p.string()));
}

// "always [madvise] never" → "madvise".
Field<std::string> bracketed(const fs::path& p) {
  auto line = read_line(p);
  if (!line.ok()) return line;
  const auto b = line->find('['), e = line->find(']');
  if (b == std::string::npos && line->find(' ') == std::string::npos) return line;  // one word: the value itself
  if (b == std::string::npos || e == std::string::npos || e < b)
    return Field<std::string>::none(fmt::format("{}: no [selected] word in '{}'", p.string(), *line));
  return line->substr(b + 1, e - b - 1);
}

std::string listed_word(const fs::path& p, const std::string& value) {
  auto line = read_line(p);
  if (!line.ok()) return "";
  std::string words = *line;
  words.erase(std::remove_if(words.begin(), words.end(), [](char c) { return c == '[' || c == ']'; }), words.end());
  std::istringstream in(words);
  for (std::string w; in >> w;)
    if (w == value) return "";
  return fmt::format("'{}' is not offered here (offered: {})", value, words);
}

Tunable sysfs_word(const Machine& m, const std::string& id, const std::string& path) {
  const auto p = m.at(path);
  Tunable t;
  t.id = id;
  t.read = [p] { return bracketed(p); };
  t.check = [p](const std::string& v) { return listed_word(p, v); };
  t.write = [p, id](const std::string& v) { write_file(p, v, id); };
  return t;
}

// ---- cpufreq governors: one value for all CPUs, or "cpu0:a cpu1:b" when they differ ----
std::vector<fs::path> governor_files(const Machine& m) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(m.at("/sys/devices/system/cpu"), ec)) {
    const auto name = e.path().filename().string();
    if (std::regex_match(name, std::regex("cpu[0-9]+")) && fs::exists(e.path() / "cpufreq/scaling_governor"))
      out.push_back(e.path() / "cpufreq/scaling_governor");
  }
  std::sort(out.begin(), out.end());
  return out;
}

Tunable governor(const Machine& m) {
  Tunable t;
  t.id = "host.cpu_governor";
  t.read = [m] {
    const auto files = governor_files(m);
    if (files.empty()) return Field<std::string>::none("no cpufreq here (a VM or a container)");
    std::map<std::string, std::string> each;
    for (const auto& f : files)
      each[f.parent_path().parent_path().filename().string()] = trim(*host::read_first_line(f));
    const auto& first = each.begin()->second;
    if (std::all_of(each.begin(), each.end(), [&](const auto& kv) { return kv.second == first; }))
      return Field<std::string>(first);
    std::string spec;
    for (const auto& [cpu, g] : each) spec += fmt::format("{}{}:{}", spec.empty() ? "" : " ", cpu, g);
    return Field<std::string>(spec);
  };
  t.check = [m](const std::string& v) {
    const auto files = governor_files(m);
    if (files.empty() || v.find(':') != std::string::npos) return std::string();
    return listed_word(files.front().parent_path() / "scaling_available_governors", v);
  };
  t.write = [m](const std::string& v) {
    for (const auto& f : governor_files(m)) {
      std::string value = v;
      if (v.find(':') != std::string::npos) {  // restoring a per-CPU spec
        const auto cpu = f.parent_path().parent_path().filename().string();
        std::istringstream in(v);
        for (std::string item; in >> item;)
          if (item.rfind(cpu + ":", 0) == 0) value = item.substr(cpu.size() + 1);
      }
      write_file(f, value, "host.cpu_governor");
    }
  };
  return t;
}

Tunable irqbalance(const Machine& m) {
  Tunable t;
  t.id = "host.irqbalance";
  t.read = [m] {
    const bool installed = fs::exists(m.at("/usr/sbin/irqbalance")) || fs::exists(m.at("/usr/bin/irqbalance"));
    if (!installed) return Field<std::string>::none("irqbalance is not installed here");
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(m.at("/proc"), ec)) {
      const auto name = e.path().filename().string();
      if (!name.empty() && std::all_of(name.begin(), name.end(), ::isdigit)) {
        auto comm = host::read_first_line(e.path() / "comm");
        if (comm.ok() && trim(*comm) == "irqbalance") return Field<std::string>("active");
      }
    }
    return Field<std::string>("inactive");
  };
  t.write = [m](const std::string& v) {
    const auto r = m.run({"systemctl", v == "active" ? "start" : "stop", "irqbalance"});
    if (r.exit_code != 0)
      throw Error(ExitCode::findings, fmt::format("host.irqbalance: systemctl {} irqbalance failed ({}): {}",
                                                  v == "active" ? "start" : "stop", r.exit_code, trim(r.err)));
  };
  return t;
}

// Sets key = value in a file's settings (kUnset removes it). False when nothing of ours is left: the file is removed,
// so the folder is as it was before gpusqueeze wrote it; true when the caller should write the file (folder made).
bool set_or_remove(std::map<std::string, std::string>& settings, const std::string& key, const std::string& value,
                   const fs::path& file) {
  if (value == kUnset)
    settings.erase(key);
  else
    settings[key] = value;
  if (settings.empty()) {
    std::error_code ec;
    fs::remove(file, ec);
    return false;
  }
  fs::create_directories(file.parent_path());
  return true;
}

// ---- the nvidia module: options in modprobe.d, values in effect in /proc/driver/nvidia/params ----
std::string params_name(const std::string& key) {
  return key == "RestrictProfilingToAdminUsers" ? "RmProfilingAdminOnly" : key;  // nv-procfs.c prints this name
}

std::map<std::string, std::string> read_params(const Machine& m, std::string& why) {
  std::map<std::string, std::string> out;
  std::ifstream in(m.at("/proc/driver/nvidia/params"));
  if (!in) {
    why = "no nvidia module loaded (/proc/driver/nvidia/params is missing)";
    return out;
  }
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    auto value = trim(line.substr(colon + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    out[trim(line.substr(0, colon))] = value;
  }
  return out;
}

// `options nvidia NVreg_K=V …` lines of one modprobe.d file → K → V.
std::map<std::string, std::string> read_options(const fs::path& file) {
  std::map<std::string, std::string> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string verb, module;
    if (!(words >> verb >> module) || verb != "options" || module != "nvidia") continue;
    for (std::string kv; words >> kv;) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos || kv.rfind("NVreg_", 0) != 0) continue;
      auto v = kv.substr(eq + 1);
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      out[kv.substr(6, eq - 6)] = v;
    }
  }
  return out;
}

Field<std::string> configured_option(const Machine& m, const std::string& key) {
  // modprobe reads /etc/modprobe.d after /lib and /usr/lib; within a folder, files in name order; later wins.
  std::optional<std::string> value;
  for (const char* dir : {"/usr/lib/modprobe.d", "/lib/modprobe.d", "/etc/modprobe.d"}) {
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(m.at(dir), ec))
      if (e.path().extension() == ".conf") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files)
      if (auto o = read_options(f); o.count(key)) value = o.at(key);
  }
  return value ? Field<std::string>(*value) : Field<std::string>(kUnset);
}

Tunable module_option(const Machine& m, const std::string& id) {
  const auto key = id.substr(std::string("module.nvidia.").size());
  Tunable t;
  t.id = id;
  t.lasting = Lasting::next_load;
  t.read = [m, key] {
    std::string why;
    const auto params = read_params(m, why);
    if (!why.empty()) return Field<std::string>::none(why);
    const auto it = params.find(params_name(key));
    if (it == params.end()) return Field<std::string>::none("not a parameter of the loaded nvidia module");
    return Field<std::string>(it->second);
  };
  t.configured = [m, key] { return configured_option(m, key); };
  t.check = [m, key](const std::string& v) {
    std::string why;
    if (const auto params = read_params(m, why); why.empty() && !params.count(params_name(key)))
      return fmt::format("not a parameter of the loaded nvidia module ({} lists {} names)",
                         m.at("/proc/driver/nvidia/params").string(), params.size());
    std::ifstream version(m.at("/proc/driver/nvidia/version"));
    std::stringstream text;
    text << version.rdbuf();
    if (key == "EnableGpuFirmware" && (v == "0" || v == "16") &&
        text.str().find("Open Kernel Module") != std::string::npos)
      return std::string(
          "the open kernel modules require GSP firmware; EnableGpuFirmware=0 is ignored there (use the proprietary "
          "module to run without GSP)");
    return std::string();
  };
  t.write = [m, key, id](const std::string& v) {
    auto options = read_options(m.modprobe_file());
    if (!set_or_remove(options, key, v, m.modprobe_file())) return;
    std::string line = "options nvidia";
    for (const auto& [k, x] : options)
      line += !x.empty() && x.find_first_of(" ;=") == std::string::npos ? fmt::format(" NVreg_{}={}", k, x)
                                                                        : fmt::format(" NVreg_{}=\"{}\"", k, x);
    write_file(m.modprobe_file(),
               "# Written by gpusqueeze tune: in effect from the next load of the nvidia module (rebuild the "
               "initramfs if it loads from there).\n" +
                   line,
               id);
  };
  return t;
}

// ---- the environment file for systemd's EnvironmentFile= ----
std::map<std::string, std::string> read_env_file(const fs::path& p) {
  std::map<std::string, std::string> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) {
    line = trim(line);
    const auto eq = line.find('=');
    if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
    auto v = line.substr(eq + 1);
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    out[line.substr(0, eq)] = v;
  }
  return out;
}

Field<std::string> process_env(const Machine& m, const std::string& name) {
  std::ifstream in(m.at(fmt::format("/proc/{}/environ", *m.pid)), std::ios::binary);
  if (!in) return Field<std::string>::none(fmt::format("process {} is not readable (gone, or root needed)", *m.pid));
  for (std::string entry; std::getline(in, entry, '\0');)
    if (entry.rfind(name + "=", 0) == 0) return entry.substr(name.size() + 1);
  return Field<std::string>(kUnset);
}

Tunable env_var(const Machine& m, const std::string& id) {
  const auto name = id.substr(4);
  Tunable t;
  t.id = id;
  t.lasting = Lasting::process;
  t.configured = [m, name] {
    const auto vars = read_env_file(m.env_file());
    return vars.count(name) ? Field<std::string>(vars.at(name)) : Field<std::string>(kUnset);
  };
  t.read = m.pid ? std::function<Field<std::string>()>([m, name] { return process_env(m, name); }) : t.configured;
  t.write = [m, id, name](const std::string& v) {
    auto vars = read_env_file(m.env_file());
    if (!set_or_remove(vars, name, v, m.env_file())) return;
    std::string text = "# Written by gpusqueeze tune: the serving process's environment (systemd EnvironmentFile=).\n";
    for (const auto& [k, x] : vars)
      text += x.find_first_of(" \t\"'#") == std::string::npos ? fmt::format("{}={}\n", k, x)
                                                              : fmt::format("{}=\"{}\"\n", k, x);
    std::ofstream out(m.env_file());
    if (!(out << text) || !out.flush())
      throw Error(ExitCode::findings, fmt::format("{}: {} cannot be written", id, m.env_file().string()));
  };
  return t;
}

}  // namespace

fs::path Machine::at(const std::string& absolute) const {
  return root == "/" ? fs::path(absolute) : root / absolute.substr(1);
}

std::string Machine::boot_id() const {
  auto f = host::read_first_line(at("/proc/sys/kernel/random/boot_id"));
  return f.ok() ? trim(*f) : "";
}

std::string nvml_message(nvmlReturn_t rc) {
  const auto name = gpu::nvml_error_name(rc);
  switch (rc) {
    case NVML_ERROR_NO_PERMISSION:
      return name + ": run as root (every NVML setter is root-only)";
    case NVML_ERROR_NOT_SUPPORTED:
      return name + ": this GPU or driver does not offer it";
    case NVML_ERROR_GPU_IS_LOST:
      return name + ": the GPU fell off the bus (look for Xid 79 in `dmesg`); nothing more is written to it";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return name + ": the installed driver's NVML lacks this call (driver too old)";
    default:
      return name;
  }
}

std::vector<Setting> resolve(const Profile& p, const Machine& m) {
  std::vector<Setting> out;
  unsigned gpus = 0;
  if (m.gpu != nullptr && m.gpu->count(gpus) != NVML_SUCCESS) gpus = 0;
  std::map<std::string, unsigned> by_uuid;
  for (unsigned i = 0; i < gpus; ++i)
    if (GpuIdentity id; m.gpu->identity(i, id) == NVML_SUCCESS) by_uuid[id.uuid] = i;
  auto put = [&](Setting s) {
    for (auto& x : out)
      if (x.id == s.id) {
        x = std::move(s);
        return;
      }
    out.push_back(std::move(s));
  };
  for (int pass = 0; pass < 2; ++pass) {  // gpu.* first, then per-GPU settings over it
    for (const auto& s : p.settings) {
      const bool gpu = s.group() == "gpu";
      const auto sel = gpu ? s.id.substr(4, s.id.rfind('.') - 4) : "";
      if (!gpu) {
        if (pass == 0) put(s);
        continue;
      }
      if ((sel == "*") != (pass == 0)) continue;
      if (gpus == 0) {
        put(s);
        continue;
      }
      std::vector<unsigned> targets;
      if (sel == "*") {
        for (unsigned i = 0; i < gpus; ++i) targets.push_back(i);
      } else if (by_uuid.count(sel)) {
        targets.push_back(by_uuid.at(sel));
      } else if (std::all_of(sel.begin(), sel.end(), ::isdigit) && std::stoul(sel) < gpus) {
        targets.push_back(static_cast<unsigned>(std::stoul(sel)));
      } else {
        throw_bad_input(fmt::format("{}: no GPU '{}' on this machine ({} GPU(s))", s.origin, sel, gpus));
      }
      for (unsigned i : targets) {
        Setting x = s;
        x.id = fmt::format("gpu.{}.{}", i, s.key());
        put(std::move(x));
      }
    }
  }
  return out;
}

std::vector<std::pair<std::string, ValueKind>> capturable(const Machine& m) {
  std::vector<std::pair<std::string, ValueKind>> out;
  unsigned gpus = 0;
  if (m.gpu != nullptr && m.gpu->count(gpus) != NVML_SUCCESS) gpus = 0;
  for (unsigned i = 0; i < gpus; ++i) {
    out.emplace_back(fmt::format("gpu.{}.persistence_mode", i), ValueKind::boolean);
    out.emplace_back(fmt::format("gpu.{}.compute_mode", i), ValueKind::text);
    out.emplace_back(fmt::format("gpu.{}.power_limit_w", i), ValueKind::number);
    out.emplace_back(fmt::format("gpu.{}.gpu_locked_clocks", i), ValueKind::clock_pair);
    out.emplace_back(fmt::format("gpu.{}.memory_locked_clocks", i), ValueKind::clock_pair);
  }
  for (const char* k : {"RestrictProfilingToAdminUsers", "EnableStreamMemOPs", "PreserveVideoMemoryAllocations",
                        "UsePageAttributeTable", "EnableGpuFirmware"})
    out.emplace_back(fmt::format("module.nvidia.{}", k), ValueKind::integer);
  out.emplace_back("module.nvidia.RegistryDwords", ValueKind::text);
  out.emplace_back("host.cpu_governor", ValueKind::text);
  out.emplace_back("host.pcie_aspm_policy", ValueKind::text);
  out.emplace_back("host.transparent_hugepage", ValueKind::text);
  out.emplace_back("host.transparent_hugepage_defrag", ValueKind::text);
  out.emplace_back("host.numa_balancing", ValueKind::integer);
  out.emplace_back("host.irqbalance", ValueKind::text);
  for (const auto& [k, v] : read_env_file(m.env_file())) out.emplace_back("env." + k, ValueKind::text);
  return out;
}

// The GPU tunables live in gpu_tunables.cpp.
Tunable gpu_tunable(const Machine& m, unsigned gpu, const std::string& key, const std::string& id);

Tunable tunable(const Machine& m, const std::string& id) {
  const auto dot = id.find('.');
  const auto group = id.substr(0, dot);
  if (group == "host") {
    const auto key = id.substr(dot + 1);
    if (key == "cpu_governor") return governor(m);
    if (key == "irqbalance") return irqbalance(m);
    if (key == "pcie_aspm_policy") return sysfs_word(m, id, "/sys/module/pcie_aspm/parameters/policy");
    if (key == "transparent_hugepage") return sysfs_word(m, id, "/sys/kernel/mm/transparent_hugepage/enabled");
    if (key == "transparent_hugepage_defrag") return sysfs_word(m, id, "/sys/kernel/mm/transparent_hugepage/defrag");
    if (key == "numa_balancing") {
      const auto p = m.at("/proc/sys/kernel/numa_balancing");
      Tunable t;
      t.id = id;
      t.read = [p] { return read_line(p); };
      t.write = [p, id](const std::string& v) { write_file(p, v, id); };
      return t;
    }
  }
  if (group == "module") return module_option(m, id);
  if (group == "env") return env_var(m, id);
  if (group == "framework") {
    Tunable t;
    t.id = id;
    t.lasting = Lasting::process;
    t.read = [] {
      return Field<std::string>::none(
          "set inside the PyTorch process: `gpusqueeze tune snippet PROFILE` prints the "
          "Python that sets and checks it");
    };
    return t;
  }
  if (group == "gpu") {
    const auto last = id.rfind('.');
    const auto sel = id.substr(dot + 1, last - dot - 1);
    if (m.gpu == nullptr || sel.empty() || !std::all_of(sel.begin(), sel.end(), ::isdigit)) {
      Tunable t;
      t.id = id;
      const auto why = m.gpu == nullptr ? m.gpu_missing : std::string("no such GPU here");
      t.read = [why] { return Field<std::string>::none(why); };
      return t;
    }
    return gpu_tunable(m, static_cast<unsigned>(std::stoul(sel)), id.substr(last + 1), id);
  }
  throw_bad_input(fmt::format("{}: not a setting tune knows", id));
}

}  // namespace gsq::tune
