// The doctor's checks. Thresholds name their source; evidence carries units.
#include "doctor/checks.hpp"

#include "doctor/env_checks.hpp"

#include "gpu/clock_events.hpp"
#include "host/facts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <sstream>

namespace gsq::doctor {

namespace {

using gpu::GpuSnapshot;
using gpu::Snapshot;
using gsq::Field;

std::string subject(const GpuSnapshot& g) {
  return fmt::format("GPU {} ({})", g.index, g.name.ok() ? *g.name : "unknown model");
}

template <class T>
std::string show(const Field<T>& f, std::string_view unit = "") {
  if (!f.ok()) return "unsupported (" + f.unsupported + ")";
  if constexpr (std::is_same_v<T, bool>)
    return *f ? "on" : "off";
  else if constexpr (std::is_same_v<T, double>)
    return fmt::format("{:.1f}{}", *f, unit);
  else
    return fmt::format("{}{}", *f, unit);
}

std::string gib(uint64_t bytes) {
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1ULL << 30));
}

Finding make(const char* id, Severity sev, const std::string& subj, std::string title, std::vector<Evidence> ev,
             std::string fix, std::string source) {
  Finding f;
  f.id = id;
  f.severity = sev;
  f.subject = subj;
  f.title = std::move(title);
  f.evidence = std::move(ev);
  f.fix = sev == Severity::pass ? "" : std::move(fix);
  f.source = std::move(source);
  f.step = 0;
  return f;
}

Finding unsupported(const char* id, const std::string& subj, const std::string& what, const std::string& why) {
  return make(id, Severity::info, subj, fmt::format("{}: cannot be checked", what), {{"reason", why}}, "", "");
}

void pcie_link(const GpuSnapshot& g, std::vector<Finding>& out) {
  const auto s = subject(g);
  if (!g.pcie_width_current.ok() || !g.pcie_width_max.ok()) {
    out.push_back(unsupported("pcie-link-width", s, "PCIe link width", g.pcie_width_current.unsupported));
  } else {
    const bool low = *g.pcie_width_current < *g.pcie_width_max;
    out.push_back(make("pcie-link-width", low ? Severity::fail : Severity::pass, s,
                       low ? fmt::format("PCIe link trained at x{} of x{}", *g.pcie_width_current, *g.pcie_width_max)
                           : fmt::format("PCIe link at full width x{}", *g.pcie_width_current),
                       {{"pcie_width_current", show(g.pcie_width_current)}, {"pcie_width_max", show(g.pcie_width_max)}},
                       "Reseat the card or move it to a full x16 slot; check riser/retimer and BIOS lane bifurcation. "
                       "A narrow link halves host-device copy bandwidth.",
                       "width below the maximum is a fault (DCGM diag PCIe test checks link width)"));
  }
  // The link generation drops at idle to save power; judge it from the reading taken under gpusqueeze's load.
  if (!g.pcie_gen_max.ok()) {
    out.push_back(unsupported("pcie-link-gen", s, "PCIe link generation", g.pcie_gen_max.unsupported));
    return;
  }
  if (g.under_load.ok() && g.under_load->pcie_gen_max_seen.ok()) {
    const uint32_t seen = *g.under_load->pcie_gen_max_seen;
    const bool low = seen < *g.pcie_gen_max;
    out.push_back(
        make("pcie-link-gen", low ? Severity::fail : Severity::pass, s,
             low ? fmt::format("PCIe link at gen {} under load, gen {} possible", seen, *g.pcie_gen_max)
                 : fmt::format("PCIe link reaches gen {} under load", seen),
             {{"pcie_gen_under_load", std::to_string(seen)},
              {"pcie_gen_max", show(g.pcie_gen_max)},
              {"pcie_gen_idle", show(g.pcie_gen_current)}},
             "Check the BIOS PCIe speed setting and the slot's generation; a gen 4 link halves gen 5 bandwidth.",
             "generation below the link's maximum while busy (NVML max = min of GPU and slot)"));
  } else {
    const bool low = g.pcie_gen_current.ok() && *g.pcie_gen_current < *g.pcie_gen_max;
    out.push_back(make("pcie-link-gen", low ? Severity::info : Severity::pass, s,
                       low ? fmt::format("PCIe link at gen {} while idle (gen {} possible); not measured under load",
                                         *g.pcie_gen_current, *g.pcie_gen_max)
                           : fmt::format("PCIe link at gen {}", show(g.pcie_gen_current)),
                       {{"pcie_gen_current", show(g.pcie_gen_current)}, {"pcie_gen_max", show(g.pcie_gen_max)}},
                       "Run `gpusqueeze doctor` without --no-load: GPUs lower the link generation when idle.",
                       "NVML: the current generation may drop at idle to save power"));
  }
}

void clock_events(const GpuSnapshot& g, std::vector<Finding>& out) {
  const auto s = subject(g);
  if (!g.under_load.ok() || !g.under_load->clock_event_reasons_mask.ok()) {
    out.push_back(make(
        "clock-events-under-load", Severity::info, s, "Clock event reasons not sampled under load",
        {{"reason", g.under_load.ok() ? g.under_load->clock_event_reasons_mask.unsupported : g.under_load.unsupported}},
        "Run `gpusqueeze doctor` on the live machine (without --no-load).", ""));
    return;
  }
  const auto& l = *g.under_load;
  const uint64_t mask = *l.clock_event_reasons_mask;
  namespace ce = gpu::clock_events;
  const auto names = gpu::clock_event_reason_names(mask & ~ce::kBenign);
  std::string joined;
  for (const auto& n : names) joined += (joined.empty() ? "" : ", ") + n;
  const Severity sev = (mask & ce::kSlowdowns)    ? Severity::fail
                       : (mask & ce::kSwPowerCap) ? Severity::warn
                                                  : Severity::pass;
  std::vector<Evidence> ev{
      {"reasons_seen_under_load", joined.empty() ? "none" : joined},
      {"sm_clock_under_load", fmt::format("{}–{} MHz", show(l.sm_clock_min_mhz), show(l.sm_clock_max_mhz))},
      {"sm_clock_max", show(g.sm_clock_max_mhz, " MHz")},
      {"load", fmt::format("{:.1f} s, {} samples", l.duration_s, l.samples)},
      {"power_max_under_load", show(l.power_max_w, " W")},
      {"power_limit", show(g.power_limit_w, " W")}};
  const std::string title = sev == Severity::fail   ? "Clocks slowed by " + joined + " under load"
                            : sev == Severity::warn ? "Clocks held back by the power cap under load"
                                                    : "No clock slowdown under load";
  out.push_back(
      make("clock-events-under-load", sev, s, title, std::move(ev),
           sev == Severity::fail ? "Thermal or hardware slowdown: check cooling (inlet temperature, fans, "
                                   "airflow), the PSU and power-brake signal; nvidia-smi -q -d PERFORMANCE shows "
                                   "the reason live."
                                 : "The power cap limits clocks: expected on heavy kernels at the default limit; "
                                   "if the power limit is below its default, raise it back (nvidia-smi -pl).",
           "NVML clocks event reasons; slowdown bits fail, SW power cap warns (DCGM health watches the same bits)"));
}

void thermal(const GpuSnapshot& g, std::vector<Finding>& out) {
  const auto s = subject(g);
  Field<int32_t> t = g.temperature_c;
  if (g.under_load.ok() && g.under_load->temperature_max_c.ok()) t = g.under_load->temperature_max_c;
  if (!t.ok() || !g.temperature_slowdown_c.ok()) {
    out.push_back(unsupported("temperature-margin", s, "Temperature margin",
                              t.ok() ? g.temperature_slowdown_c.unsupported : t.unsupported));
    return;
  }
  constexpr int kMarginC = 10;
  const int margin = *g.temperature_slowdown_c - *t;
  const Severity sev = margin <= 0 ? Severity::fail : margin < kMarginC ? Severity::warn : Severity::pass;
  out.push_back(make("temperature-margin", sev, s, fmt::format("{} °C, {} °C below the slowdown threshold", *t, margin),
                     {{"temperature", fmt::format("{} °C", *t)},
                      {"slowdown_threshold", show(g.temperature_slowdown_c, " °C")},
                      {"shutdown_threshold", show(g.temperature_shutdown_c, " °C")}},
                     "Improve cooling: inlet air, fan curve, blocked airflow, neighbour cards.",
                     "NVML slowdown threshold; gpusqueeze warns within 10 °C of it"));
}

void ecc(const GpuSnapshot& g, std::vector<Finding>& out) {
  const auto s = subject(g);
  if (!g.ecc_mode_current.ok()) {
    out.push_back(unsupported("ecc-errors", s, "ECC", g.ecc_mode_current.unsupported));
    return;
  }
  if (!*g.ecc_mode_current) {
    out.push_back(
        make("ecc-errors", Severity::warn, s, "ECC is off", {{"ecc_mode", "off"}},
             "Data-center GPUs should run with ECC on (nvidia-smi -e 1, then a reset); off, memory errors go unseen.",
             "NVIDIA data-center defaults ship with ECC on"));
    return;
  }
  const uint64_t vol = g.ecc_volatile_uncorrected.ok() ? *g.ecc_volatile_uncorrected : 0;
  const uint64_t agg = g.ecc_aggregate_uncorrected.ok() ? *g.ecc_aggregate_uncorrected : 0;
  const Severity sev = vol > 0 ? Severity::fail : agg > 0 ? Severity::warn : Severity::pass;
  out.push_back(make("ecc-errors", sev, s,
                     sev == Severity::pass
                         ? "No uncorrectable ECC errors"
                         : fmt::format("{} uncorrectable ECC errors since boot, {} over the card's life", vol, agg),
                     {{"volatile_uncorrected", show(g.ecc_volatile_uncorrected)},
                      {"aggregate_uncorrected", show(g.ecc_aggregate_uncorrected)},
                      {"volatile_corrected", show(g.ecc_volatile_corrected)}},
                     "Drain the GPU, reset it, and run DCGM diag level 3; repeated uncorrectable errors mean an RMA.",
                     "any uncorrectable (double-bit) error since boot fails, as in DCGM health"));
}

void remapping(const GpuSnapshot& g, std::vector<Finding>& out) {
  const auto s = subject(g);
  if (!g.remap_failure.ok()) {
    out.push_back(unsupported("row-remapping", s, "Row remapping", g.remap_failure.unsupported));
    return;
  }
  const bool pending = g.remap_pending.ok() && *g.remap_pending;
  const Severity sev = *g.remap_failure ? Severity::fail : pending ? Severity::warn : Severity::pass;
  out.push_back(make("row-remapping", sev, s,
                     *g.remap_failure ? "Row remapping failed: the memory has no spare rows left"
                     : pending        ? "A row remap is pending until the GPU is reset"
                                      : "No row remapping pending or failed",
                     {{"remap_failure", show(g.remap_failure)},
                      {"remap_pending", show(g.remap_pending)},
                      {"remapped_rows_uncorrectable", show(g.remapped_rows_uncorrectable)},
                      {"retired_pages_double_bit", show(g.retired_pages_double_bit)}},
                     pending ? "Reset the GPU (drain it first) so the remap takes effect."
                             : "The card is out of spare rows: replace it (RMA).",
                     "NVIDIA GPU memory error management guide: failure = RMA, pending = reset needed"));
}

void pcie_replays(const GpuSnapshot& g, std::vector<Finding>& out) {
  const auto s = subject(g);
  if (!g.pcie_replay_counter.ok()) {
    out.push_back(unsupported("pcie-replays", s, "PCIe replay counter", g.pcie_replay_counter.unsupported));
    return;
  }
  // DCGM's PCIe health watch warns above 8 replays a minute (DCGM_FR_PCI_REPLAY_RATE, "Detected more than 8 PCIe
  // replays per minute"): a link retransmits now and then, and a count since boot says nothing of its rate. While
  // doctor's load runs: more than 8 a minute (at least 8) fails, fewer warns; only a count since boot is information.
  const bool measured = g.under_load.ok() && g.under_load->pcie_replay_delta.ok();
  const uint64_t during = measured ? *g.under_load->pcie_replay_delta : 0;
  const double minutes = measured ? std::max(1.0, g.under_load->duration_s / 60.0) : 1.0;
  const bool over_rate = measured && static_cast<double>(during) > 8.0 * minutes;
  const Severity sev = over_rate                    ? Severity::fail
                       : during > 0                 ? Severity::warn
                       : *g.pcie_replay_counter > 0 ? Severity::info
                                                    : Severity::pass;
  std::vector<Evidence> ev{{"pcie_replay_counter", show(g.pcie_replay_counter)}};
  if (g.under_load.ok()) ev.push_back({"replays_during_load", show(g.under_load->pcie_replay_delta)});
  out.push_back(make(
      "pcie-replays", sev, s,
      over_rate    ? fmt::format("{} PCIe replays during {:.0f} s of load: past DCGM's 8 a minute, the link is failing",
                                 during, g.under_load->duration_s)
      : during > 0 ? fmt::format("{} PCIe replay{} during {:.0f} s of load: the link retransmitted while busy", during,
                                 during == 1 ? "" : "s", g.under_load->duration_s)
      : *g.pcie_replay_counter > 0 ? fmt::format("{} PCIe replay{} since boot, none during load",
                                                 *g.pcie_replay_counter, *g.pcie_replay_counter == 1 ? "" : "s")
                                   : "No PCIe replays",
      std::move(ev),
      sev == Severity::info
          ? "Nothing to do unless it grows: watch gsq_gpu_pcie_replays_total's rate (the exporter) against 8 a minute"
          : "Reseat the card, check riser cables and retimers; replays cost bandwidth and precede link drops.",
      "DCGM's PCIe health watch: more than 8 replays a minute warns (DCGM_FR_PCI_REPLAY_RATE); here more than 8 a "
      "minute of load fails, fewer while busy warns, a count since boot alone is information"));
}

void persistence(const GpuSnapshot& g, std::vector<Finding>& out) {
  const auto s = subject(g);
  if (!g.persistence_mode.ok()) {
    out.push_back(unsupported("persistence-mode", s, "Persistence mode", g.persistence_mode.unsupported));
    return;
  }
  out.push_back(make(
      "persistence-mode", *g.persistence_mode ? Severity::pass : Severity::warn, s,
      *g.persistence_mode ? "Persistence mode on" : "Persistence mode off: each first CUDA call re-initialises the GPU",
      {{"persistence_mode", show(g.persistence_mode)}},
      "Run nvidia-persistenced (systemctl enable --now nvidia-persistenced); `nvidia-smi -pm 1` is legacy.",
      "NVIDIA driver persistence documentation"));
}

void compute_mode(const GpuSnapshot& g, std::vector<Finding>& out) {
  const auto s = subject(g);
  if (!g.compute_mode.ok()) {
    out.push_back(unsupported("compute-mode", s, "Compute mode", g.compute_mode.unsupported));
    return;
  }
  const bool def = *g.compute_mode == "default";
  out.push_back(make("compute-mode", def ? Severity::pass : Severity::warn, s,
                     def ? "Compute mode default"
                         : fmt::format("Compute mode {}: other processes cannot share this GPU", *g.compute_mode),
                     {{"compute_mode", *g.compute_mode}},
                     "If this is not intended (MPS setups use exclusive_process), set it back: nvidia-smi -c DEFAULT.",
                     "NVML compute modes"));
}

void other_processes(const GpuSnapshot& g, std::vector<Finding>& out) {
  const auto s = subject(g);
  if (!g.processes.ok()) {
    out.push_back(unsupported("other-processes", s, "Processes on the GPU", g.processes.unsupported));
    return;
  }
  const auto& procs = *g.processes;
  std::string list;
  for (const auto& p : procs) {
    list += fmt::format("{}{} {} ({})", list.empty() ? "" : ", ", p.pid, p.name.empty() ? "?" : p.name,
                        p.used_memory_bytes.ok() ? gib(*p.used_memory_bytes) : "memory hidden");
  }
  out.push_back(
      make("other-processes", procs.empty() ? Severity::pass : Severity::warn, s,
           procs.empty() ? "No other compute process on the GPU"
                         : fmt::format("{} other compute process(es) on the GPU", procs.size()),
           {{"processes", procs.empty() ? "none" : list}, {"utilization_gpu", show(g.utilization_gpu_pct, " %")}},
           "A baseline on a shared GPU is not a baseline: stop them or pick an idle GPU (CUDA_VISIBLE_DEVICES).",
           "gpusqueeze: benchmarks need an idle GPU"));
}

void bar1(const GpuSnapshot& g, std::vector<Finding>& out) {
  const auto s = subject(g);
  if (!g.bar1_total_bytes.ok() || !g.memory_total_bytes.ok()) {
    out.push_back(unsupported("bar1-size", s, "BAR1 size", g.bar1_total_bytes.unsupported));
    return;
  }
  const bool small = *g.bar1_total_bytes < *g.memory_total_bytes;
  out.push_back(
      make("bar1-size", small ? Severity::warn : Severity::pass, s,
           small ? fmt::format("BAR1 {} is smaller than the {} of GPU memory", gib(*g.bar1_total_bytes),
                               gib(*g.memory_total_bytes))
                 : fmt::format("BAR1 {} maps all GPU memory", gib(*g.bar1_total_bytes)),
           {{"bar1_total", gib(*g.bar1_total_bytes)}, {"memory_total", gib(*g.memory_total_bytes)}},
           "Enable Above-4G decoding and Resizable BAR in the BIOS (and in the hypervisor for VMs); GPUDirect "
           "RDMA/Storage and large peer mappings need a large BAR1.",
           "data-center GPUs expose a BAR1 at least as large as their memory when Above-4G decoding is on"));
}

void nvlinks(const GpuSnapshot& g, std::vector<Finding>& out) {
  if (g.nvlinks.empty()) return;  // single PCIe card: no links to check
  const auto s = subject(g);
  size_t down = 0;
  uint64_t errors = 0;
  for (const auto& l : g.nvlinks) {
    if (!l.active) ++down;
    for (const auto* f : {&l.replay_errors, &l.recovery_errors, &l.crc_flit_errors, &l.crc_data_errors})
      if (f->ok()) errors += **f;
  }
  const Severity sev = down > 0 ? Severity::fail : errors > 0 ? Severity::warn : Severity::pass;
  out.push_back(
      make("nvlink-health", sev, s,
           fmt::format("{} of {} NVLink links up, {} link errors", g.nvlinks.size() - down, g.nvlinks.size(), errors),
           {{"links", std::to_string(g.nvlinks.size())},
            {"links_down", std::to_string(down)},
            {"error_counters_total", std::to_string(errors)}},
           "Check the fabric manager (nvidia-fabricmanager) and NVSwitch health; a down link reroutes traffic "
           "over PCIe. Run `nvidia-smi nvlink -s` and DCGM diag.",
           "any inactive link fails; error counters warn (DCGM health NVLink watch)"));
}

void affinity(const Snapshot& snap, const GpuSnapshot& g, std::vector<Finding>& out) {
  const auto s = subject(g);
  if (!g.cpu_affinity.ok() || !snap.host.process_cpu_affinity.ok()) {
    out.push_back(
        unsupported("numa-affinity", s, "CPU/NUMA affinity",
                    g.cpu_affinity.ok() ? snap.host.process_cpu_affinity.unsupported : g.cpu_affinity.unsupported));
    return;
  }
  const auto gpu_cpus = host::parse_cpulist(*g.cpu_affinity);
  const auto proc_cpus = host::parse_cpulist(*snap.host.process_cpu_affinity);
  const std::set<int> near(gpu_cpus.begin(), gpu_cpus.end());
  const size_t far =
      static_cast<size_t>(std::count_if(proc_cpus.begin(), proc_cpus.end(), [&](int c) { return !near.contains(c); }));
  const bool all_near = far == 0;
  const bool none_near = far == proc_cpus.size();
  const Severity sev = all_near ? Severity::pass : none_near ? Severity::warn : Severity::info;
  out.push_back(make("numa-affinity", sev, s,
                     all_near    ? "This process runs on CPUs near the GPU"
                     : none_near ? "This process runs only on CPUs far from the GPU (another NUMA node)"
                                 : fmt::format("This process may run on {} CPUs far from the GPU", far),
                     {{"gpu_near_cpus", *g.cpu_affinity},
                      {"gpu_numa_node", show(g.numa_node)},
                      {"process_cpus", *snap.host.process_cpu_affinity}},
                     fmt::format("Pin the serving process near the GPU: numactl --cpunodebind={} --membind={} CMD "
                                 "(or taskset -c {}); torchrun/Slurm: bind each rank to its GPU's node.",
                                 g.numa_node.ok() ? std::to_string(*g.numa_node) : "N",
                                 g.numa_node.ok() ? std::to_string(*g.numa_node) : "N", *g.cpu_affinity),
                     "NVML CPU affinity of the GPU vs sched_getaffinity of this process"));
}

// Host-wide checks.
void aspm(const Snapshot& snap, std::vector<Finding>& out) {
  const auto& p = snap.host.aspm_policy;
  if (!p.ok()) {
    out.push_back(unsupported("pcie-aspm", "host", "PCIe ASPM policy", p.unsupported));
    return;
  }
  const bool saving = p->find("powersave") != std::string::npos || *p == "powersupersave";
  out.push_back(
      make("pcie-aspm", saving ? Severity::warn : Severity::pass, "host",
           saving ? fmt::format("PCIe ASPM policy '{}' lets links sleep between transfers", *p)
                  : fmt::format("PCIe ASPM policy '{}'", *p),
           {{"aspm_policy", *p}},
           "Boot with pcie_aspm.policy=performance (or pcie_aspm=off); link wake-ups add latency to small copies.",
           "Linux pcie_aspm module: powersave/powersupersave enable L0s/L1"));
}

void profiling(const Snapshot& snap, std::vector<Finding>& out) {
  const auto& params = snap.host.nvidia_params;
  if (!params.ok()) {
    out.push_back(unsupported("profiling-permission", "host", "Profiling permission", params.unsupported));
    return;
  }
  const auto it = params->find("RmProfilingAdminOnly");
  if (it == params->end()) {
    out.push_back(unsupported("profiling-permission", "host", "Profiling permission",
                              "RmProfilingAdminOnly not in /proc/driver/nvidia/params"));
    return;
  }
  const bool admin_only = it->second == "1";
  const bool is_root = snap.host.uid.ok() && *snap.host.uid == 0;
  const Severity sev = !admin_only ? Severity::pass : is_root ? Severity::info : Severity::warn;
  out.push_back(
      make("profiling-permission", sev, "host",
           !admin_only ? "GPU performance counters open to all users"
           : is_root   ? "GPU performance counters restricted to admins (this run is root)"
                       : "GPU performance counters restricted to admins: CUPTI counters, ncu and PM sampling fail",
           {{"RmProfilingAdminOnly", it->second}, {"uid", show(snap.host.uid)}},
           "Load the module with NVreg_RestrictProfilingToAdminUsers=0 (/etc/modprobe.d/nvidia-profiling.conf, "
           "then rebuild the initramfs and reboot), or run profilers as root / with CAP_SYS_ADMIN.",
           "NVIDIA ERR_NVGPUCTRPERM documentation"));
}

// "13.0" → 13000 style comparison key; -1 when unparseable.
int version_key(const std::string& v) {
  int major = 0, minor = 0;
  const auto dot = v.find('.');
  if (dot == std::string::npos) return -1;
  if (std::from_chars(v.data(), v.data() + dot, major).ec != std::errc{}) return -1;
  if (std::from_chars(v.data() + dot + 1, v.data() + v.size(), minor).ec != std::errc{}) return -1;
  return major * 1000 + minor;
}

void driver_vs_runtime(const Snapshot& snap, std::vector<Finding>& out) {
  const auto& drv = snap.host.cuda_driver_version;
  if (!drv.ok()) {
    out.push_back(unsupported("driver-cuda-version", "host", "Driver CUDA version", drv.unsupported));
    return;
  }
  const int d = version_key(*drv), r = version_key(snap.host.cuda_runtime_version);
  // Same major: minor-version compatibility lets an older driver run a newer runtime of that major (CUDA 11.1+).
  const bool too_old = d >= 0 && r >= 0 && d / 1000 < r / 1000;
  out.push_back(
      make("driver-cuda-version", too_old ? Severity::fail : Severity::pass, "host",
           too_old ? fmt::format("Driver supports CUDA {}, gpusqueeze's runtime needs CUDA {}", *drv,
                                 snap.host.cuda_runtime_version)
                   : fmt::format("Driver supports CUDA {} (runtime {})", *drv, snap.host.cuda_runtime_version),
           {{"driver_cuda_version", *drv},
            {"runtime_cuda_version", snap.host.cuda_runtime_version},
            {"driver_version", show(snap.host.driver_version)}},
           "Update the NVIDIA driver to one supporting this CUDA major, or install the CUDA forward-compat package "
           "(data-center GPUs).",
           "CUDA compatibility guide: a runtime needs a driver of at least its major version"));
}

void governor(const Snapshot& snap, std::vector<Finding>& out) {
  const auto& g = snap.host.cpu_governor;
  if (!g.ok()) {
    out.push_back(unsupported("cpu-governor", "host", "CPU frequency governor", g.unsupported));
    return;
  }
  const bool perf = *g == "performance";
  out.push_back(make("cpu-governor", perf ? Severity::pass : Severity::warn, "host",
                     perf ? "CPU governor performance"
                          : fmt::format("CPU governor '{}': launch-bound work slows when cores clock down", *g),
                     {{"cpu_governor", *g}},
                     "cpupower frequency-set -g performance (or tuned-adm profile throughput-performance).",
                     "kernel launch throughput follows CPU single-thread speed"));
}

}  // namespace

const std::vector<CheckInfo>& check_catalog() {
  static const std::vector<CheckInfo> kCatalog{
      {"pcie-link-width", "PCIe link trained below its maximum width"},
      {"pcie-link-gen", "PCIe link generation below its maximum while busy"},
      {"clock-events-under-load", "clock event reasons other than idle while gpusqueeze's load kernel runs"},
      {"temperature-margin", "temperature within 10 °C of the slowdown threshold"},
      {"ecc-errors", "ECC off, or uncorrectable ECC errors"},
      {"row-remapping", "row-remapping failure or pending remap"},
      {"pcie-replays", "PCIe replays while busy (past 8 a minute fails, as DCGM warns)"},
      {"persistence-mode", "persistence mode off"},
      {"compute-mode", "compute mode not default"},
      {"other-processes", "other compute processes on the GPU"},
      {"bar1-size", "BAR1 smaller than GPU memory (Above-4G / resizable BAR off)"},
      {"nvlink-health", "NVLink links down or with error counts (multi-GPU)"},
      {"numa-affinity", "process CPU affinity far from the GPU's NUMA node"},
      {"pcie-aspm", "PCIe ASPM policy that power-saves links"},
      {"profiling-permission", "GPU performance counters restricted to admins"},
      {"driver-cuda-version", "driver older than the CUDA runtime needs"},
      {"cpu-governor", "CPU frequency governor not performance"},
      {"nccl-env", "NCCL variables that do not exist, were removed or renamed, or debugging switches left on"},
  };
  return kCatalog;
}

std::vector<Finding> run_checks(const Snapshot& s) {
  std::vector<Finding> out;
  for (const auto& g : s.gpus) {
    pcie_link(g, out);
    clock_events(g, out);
    thermal(g, out);
    ecc(g, out);
    remapping(g, out);
    pcie_replays(g, out);
    persistence(g, out);
    compute_mode(g, out);
    other_processes(g, out);
    bar1(g, out);
    nvlinks(g, out);
    affinity(s, g, out);
  }
  aspm(s, out);
  profiling(s, out);
  driver_vs_runtime(s, out);
  governor(s, out);
  nccl_env(s, out);
  return out;
}

}  // namespace gsq::doctor
