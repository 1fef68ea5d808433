// The fleet from report.json files: each report's environment snapshot (configuration, health counters, the load
// phase's clocks) and the ceilings its bench sections measured.
#include "core/error.hpp"
#include "core/json_io.hpp"
#include "fleet/fleet.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace gsq::fleet {

using nlohmann::json;

namespace {

// A snapshot field is a value, or an object {"unsupported": why} where NVML had none.
std::optional<std::string> text(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_object() || it->is_null() || it->is_array()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_boolean()) return it->get<bool>() ? std::string("on") : std::string("off");
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  if (it->is_number()) return fmt::format("{:g}", it->get<double>());
  return std::nullopt;
}

std::optional<double> number(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  if (it->is_number()) return it->get<double>();
  if (it->is_boolean()) return it->get<bool>() ? 1.0 : 0.0;
  return std::nullopt;
}

// The cold-mode (or given mode's) throughput of the first result named `name` whose axes include `axes`.
std::optional<double> throughput(const json& bench, std::string_view name, const json& axes, const char* mode,
                                 const char* quantity) {
  for (const auto& r : bench.value("results", json::array())) {
    if (r.value("name", "") != name) continue;
    const auto& a = r.value("axes", json::object());
    bool match = true;
    for (const auto& [k, v] : axes.items()) match = match && a.contains(k) && a[k] == v;
    if (!match) continue;
    for (const auto& m : r.value("measurements", json::array()))
      if (m.value("mode", "") == mode)
        if (auto v = m.value("throughput", json::object()).value(quantity, 0.0); v > 0) return v;
  }
  return std::nullopt;
}

std::vector<Gpu> read_report(const json& report, const std::string& origin);

}  // namespace

std::vector<Gpu> gpus_from_report(const json& report, const std::string& origin) {
  try {
    return read_report(report, origin);
  } catch (const json::exception& e) {  // a field of the wrong type: the file is not a report this version wrote
    throw_bad_input(fmt::format("{}: not a readable gpusqueeze report: {}", origin, e.what()));
  }
}

namespace {

std::vector<Gpu> read_report(const json& report, const std::string& origin) {
  if (!report.is_object() || !report.contains("sections") || !report["sections"].is_object())
    throw_bad_input(origin + ": no \"sections\" object: not a gpusqueeze report");
  const auto& sections = report["sections"];
  const auto& snap = sections.value("environment", json::object()).value("snapshot", json::object());
  const auto& host = snap.value("host", json::object());
  const std::string node = text(host, "hostname").value_or("unknown host");
  std::vector<Gpu> out;
  for (const auto& g : snap.value("gpus", json::array())) {
    Gpu gpu{
        node, text(g, "index").value_or("?"), text(g, "uuid").value_or(""), text(g, "name").value_or(""), origin, {},
        {}};
    auto config = [&](const char* field, const json& from, const char* key) {
      if (auto v = text(from, key)) gpu.config[field] = *v;
    };
    config("driver", host, "driver_version");
    config("cuda_driver", host, "cuda_driver_version");
    config("aspm", host, "aspm_policy");
    config("cpu_governor", host, "cpu_governor");
    config("vbios", g, "vbios_version");
    if (auto w = number(g, "power_enforced_limit_w")) gpu.config["power_limit_w"] = fmt::format("{:.0f}", *w);
    config("sm_clock_max_mhz", g, "sm_clock_max_mhz");
    config("sm_clock_app_mhz", g, "sm_clock_app_mhz");
    config("pcie_gen_max", g, "pcie_gen_max");
    config("pcie_width", g, "pcie_width_current");
    config("mig", g, "mig_mode_current");
    config("ecc", g, "ecc_mode_current");
    config("persistence", g, "persistence_mode");
    if (auto v = number(g, "ecc_volatile_uncorrected")) gpu.signals["ecc_uncorrected"] = *v;
    if (auto v = number(g, "remap_pending")) gpu.signals["remap_pending"] = *v;
    if (const auto& load = g.value("under_load", json::object()); load.is_object() && load.contains("samples")) {
      // Doctor's load phase (about 2 s at 10 Hz): the lowest clock and the highest temperature it saw, and the PCIe
      // replays during it. Which clock-event reasons held the clock is one mask for the whole phase, not a share of
      // time: it is left out (a median of zeros and ones judges nothing).
      if (auto v = number(load, "samples")) gpu.signals["under_load_samples"] = *v;
      if (auto v = number(load, "sm_clock_min_mhz")) gpu.signals["clock_under_load_mhz"] = *v;
      if (auto v = number(load, "temperature_max_c")) gpu.signals["temperature_under_load_c"] = *v;
      if (auto v = number(load, "pcie_replay_delta")) gpu.signals["pcie_replays"] = *v;
    }
    out.push_back(std::move(gpu));
  }
  // The ceilings the report measured, on the GPU its bench runs name.
  for (const auto& [id, sec] : sections.items()) {
    if (!sec.is_object() || sec.value("schema", "").rfind("gpusqueeze.bench/", 0) != 0) continue;
    const auto& gpu_j = sec.value("gpu", json::object());
    const std::string uuid = gpu_j.is_object() ? gpu_j.value("uuid", "") : "";
    if (uuid.empty()) continue;
    auto gpu = std::find_if(out.begin(), out.end(), [&](const Gpu& g) { return g.uuid == uuid; });
    if (gpu == out.end()) continue;
    // The sizes `report` measures: one size per ceiling, so that reports compare like with like.
    if (auto v = throughput(sec, "mem.copy", {{"bytes", "1Gi"}, {"variant", "flat"}}, "cold", "bytes_per_s"))
      gpu->signals["hbm_copy_gbps"] = *v / 1e9;
    if (auto v = throughput(sec, "pcie.h2d", {{"bytes", "64Mi"}, {"memory", "pinned"}}, "cold", "bytes_per_s"))
      gpu->signals["pcie_h2d_gbps"] = *v / 1e9;
    if (auto v = throughput(sec, "launch.empty", {{"graph", "no"}}, "host", "items_per_s"))
      gpu->signals["launch_us"] = 1e6 / *v;
    if (auto v = throughput(sec, "gemm.cublas", {{"dtype", "bf16"}, {"mnk", "4096"}}, "cold", "flops_per_s"))
      gpu->signals["gemm_tflops"] = *v / 1e12;
  }
  return out;
}

}  // namespace

Collection collect_reports(const std::filesystem::path& dir, std::optional<double> since_s) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw_bad_input(
        fmt::format("{}: not a folder (fleet --reports reads the report.json files below a folder)", dir.string()));
  Collection c;
  struct Newest {
    Gpu gpu;
    fs::file_time_type when;
    std::map<std::string, fs::file_time_type> signal_when;  // when each signal was measured (its report's time)
  };
  std::map<std::string, Newest> newest;  // by uuid, else node + index
  size_t files = 0, old = 0;
  const auto now = fs::file_time_type::clock::now();
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code fe;  // one entry's trouble (a dangling link) is not the walk's: `ec` ends the loop
    if (it->path().filename().string().starts_with('.')) {  // a report still being written (deploy/slurm: .JOB.tmp.PID)
      if (it->is_directory(fe)) it.disable_recursion_pending();
      continue;
    }
    if (it->path().filename() != "report.json" || !it->is_regular_file(fe)) continue;
    const auto when = it->last_write_time(fe);
    if (fe) continue;
    if (since_s && now - when > std::chrono::duration<double>(*since_s)) {
      ++old;
      continue;
    }
    const std::string name = fs::relative(it->path(), dir, fe).string();
    try {
      const json report = read_json_file(it->path(), "gpusqueeze.report/1");
      if (!report.value("this_machine", true)) {  // a page of the bundled or replayed files: no GPU of the fleet
        c.notes.push_back(
            fmt::format("{}: skipped: not of the machine that wrote it ({})", name, report.value("provenance", "")));
        continue;
      }
      ++files;
      for (auto& g : gpus_from_report(report, name)) {
        const std::string key = g.uuid.empty() ? g.node + "/" + g.index : g.uuid;
        // Settings and health from the newest report of the GPU; each signal from the newest report that measured
        // it (a later job may not have loaded this GPU).
        auto n = newest.find(key);
        if (n == newest.end()) {
          newest.emplace(key, Newest{std::move(g), when, {}});
          continue;
        }
        Newest& have = n->second;
        for (const auto& [signal, v] : have.gpu.signals)  // each signal's own time, the report it came from
          have.signal_when.try_emplace(signal, have.when);
        for (const auto& [signal, v] : g.signals)
          if (auto seen = have.signal_when.find(signal); seen == have.signal_when.end() || seen->second < when) {
            have.gpu.signals[signal] = v;
            have.signal_when[signal] = when;
          }
        if (have.when < when) {
          auto signals = std::move(have.gpu.signals);
          have.gpu = std::move(g);
          have.gpu.signals = std::move(signals);
          have.when = when;
        }
      }
    } catch (const std::exception& e) {  // one bad file must not hide the fleet
      c.notes.push_back(fmt::format("{}: skipped: {}", name, e.what()));
    }
  }
  if (ec) throw_bad_input(fmt::format("{}: cannot read the folder: {}", dir.string(), ec.message()));
  if (files == 0)
    throw_bad_input(fmt::format("{}: no readable report.json below it{}", dir.string(),
                                old ? fmt::format(" ({} older than --since)", old) : std::string()));
  for (auto& [key, n] : newest) c.gpus.push_back(std::move(n.gpu));
  c.source = fmt::format("{} ({} report.json file{}, the newest per GPU{})", dir.string(), files, files == 1 ? "" : "s",
                         old ? fmt::format("; {} older than --since left out", old) : std::string());
  return c;
}

}  // namespace gsq::fleet
