// Live collection of snapshots: the GPUs through NVML, the host through src/host.
#include "gpu/collect.hpp"

#include "gpu/cost.hpp"

#include "core/error.hpp"
#include "cuda/device.hpp"
#include "host/facts.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace gsq::gpu {

namespace {

namespace fs = std::filesystem;

std::string nvml_why(const NvmlApi& api, nvmlReturn_t rc) {
  std::string s = nvml_error_name(rc);
  if (api.nvmlErrorString) s += fmt::format(" ({})", api.nvmlErrorString(rc));
  return s;
}

// Calls an NVML getter that fills one out-parameter; a missing symbol or an error becomes "unsupported".
template <class T, class Fn, class... Args>
Field<T> get(const NvmlApi& api, Fn fn, Args... args) {
  if (fn == nullptr) return Field<T>::none("symbol missing in this driver's NVML");
  T out{};
  const nvmlReturn_t rc = fn(args..., &out);
  if (rc != NVML_SUCCESS) return Field<T>::none(nvml_why(api, rc));
  return Field<T>(out);
}

template <class Fn>
Field<std::string> get_string(const NvmlApi& api, Fn fn, nvmlDevice_t dev) {
  if (fn == nullptr) return Field<std::string>::none("symbol missing in this driver's NVML");
  char buf[256] = {};
  const nvmlReturn_t rc = fn(dev, buf, sizeof buf);
  if (rc != NVML_SUCCESS) return Field<std::string>::none(nvml_why(api, rc));
  return std::string(buf);
}

Field<bool> enabled(const Field<nvmlEnableState_t>& f) {
  if (!f.ok()) return Field<bool>::none(f.unsupported);
  return *f == NVML_FEATURE_ENABLED;
}

Field<double> milliwatts_to_w(const Field<unsigned>& f) {
  if (!f.ok()) return Field<double>::none(f.unsupported);
  return static_cast<double>(*f) / 1000.0;
}

Field<std::string> cuda_version_text(const Field<int>& v) {
  if (!v.ok()) return Field<std::string>::none(v.unsupported);
  return fmt::format("{}.{}", *v / 1000, (*v % 1000) / 10);
}

std::string architecture_name(nvmlDeviceArchitecture_t a) {
  switch (a) {
    case NVML_DEVICE_ARCH_VOLTA:
      return "volta";
    case NVML_DEVICE_ARCH_TURING:
      return "turing";
    case NVML_DEVICE_ARCH_AMPERE:
      return "ampere";
    case NVML_DEVICE_ARCH_ADA:
      return "ada";
    case NVML_DEVICE_ARCH_HOPPER:
      return "hopper";
    case NVML_DEVICE_ARCH_BLACKWELL:
      return "blackwell";
    default:
      return fmt::format("arch_{}", static_cast<int>(a));
  }
}

std::string process_name(uint32_t pid) {
  auto comm = host::read_first_line(fs::path("/proc") / std::to_string(pid) / "comm");
  return comm.ok() ? *comm : "";
}

Field<uint64_t> ecc_count(const NvmlApi& api, nvmlDevice_t dev, nvmlMemoryErrorType_t type,
                          nvmlEccCounterType_t counter) {
  auto f = get<unsigned long long>(api, api.nvmlDeviceGetTotalEccErrors, dev, type, counter);
  if (!f.ok()) return Field<uint64_t>::none(f.unsupported);
  return static_cast<uint64_t>(*f);
}

template <class Fn>
Field<std::string> system_string(const NvmlApi& api, Fn fn) {
  if (fn == nullptr) return Field<std::string>::none("symbol missing in this driver's NVML");
  char buf[96] = {};
  if (const nvmlReturn_t rc = fn(buf, sizeof buf); rc != NVML_SUCCESS)
    return Field<std::string>::none(nvml_why(api, rc));
  return std::string(buf);
}

Field<int32_t> temperature_threshold(const NvmlApi& api, nvmlDevice_t dev, nvmlTemperatureThresholds_t t) {
  auto f = get<unsigned>(api, api.nvmlDeviceGetTemperatureThreshold, dev, t);
  if (!f.ok()) return Field<int32_t>::none(f.unsupported);
  return static_cast<int32_t>(*f);
}

Field<int32_t> temperature_now(const NvmlApi& api, nvmlDevice_t dev) {
  if (api.nvmlDeviceGetTemperatureV == nullptr) return Field<int32_t>::none("symbol missing in this driver's NVML");
  nvmlTemperature_t t{};
  t.version = nvmlTemperature_v1;
  t.sensorType = NVML_TEMPERATURE_GPU;
  if (const auto rc = api.nvmlDeviceGetTemperatureV(dev, &t); rc != NVML_SUCCESS)
    return Field<int32_t>::none(nvml_why(api, rc));
  return static_cast<int32_t>(t.temperature);
}

Field<uint32_t> app_clock(const NvmlApi& api, nvmlDevice_t dev, nvmlClockType_t type, nvmlClockId_t id) {
  return get<unsigned>(api, api.nvmlDeviceGetClock, dev, type, id);
}

void collect_processes(const NvmlApi& api, nvmlDevice_t dev, GpuSnapshot& g) {
  if (api.nvmlDeviceGetComputeRunningProcesses_v3 == nullptr) {
    g.processes = Field<std::vector<GpuProcess>>::none("symbol missing in this driver's NVML");
    return;
  }
  std::vector<nvmlProcessInfo_t> infos(64);
  unsigned count = static_cast<unsigned>(infos.size());
  nvmlReturn_t rc = api.nvmlDeviceGetComputeRunningProcesses_v3(dev, &count, infos.data());
  if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
    infos.resize(count + 16);
    count = static_cast<unsigned>(infos.size());
    rc = api.nvmlDeviceGetComputeRunningProcesses_v3(dev, &count, infos.data());
  }
  if (rc != NVML_SUCCESS) {
    g.processes = Field<std::vector<GpuProcess>>::none(nvml_why(api, rc));
    return;
  }
  std::vector<GpuProcess> procs;
  for (unsigned i = 0; i < count; ++i) {
    GpuProcess p;
    p.pid = infos[i].pid;
    // NVML reports NVML_VALUE_NOT_AVAILABLE (all ones) when memory use is hidden, e.g. inside containers.
    if (infos[i].usedGpuMemory == static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE)) {
      p.used_memory_bytes = Field<uint64_t>::none("not available (hidden by the driver)");
    } else {
      p.used_memory_bytes = infos[i].usedGpuMemory;
    }
    p.name = process_name(p.pid);
    procs.push_back(std::move(p));
  }
  g.processes = std::move(procs);
}

void collect_mig(const NvmlApi& api, nvmlDevice_t dev, GpuSnapshot& g) {
  unsigned cur = 0, pend = 0;
  if (api.nvmlDeviceGetMigMode == nullptr) {
    g.mig_mode_current = g.mig_mode_pending = Field<bool>::none("symbol missing in this driver's NVML");
    return;
  }
  if (const auto rc = api.nvmlDeviceGetMigMode(dev, &cur, &pend); rc != NVML_SUCCESS) {
    g.mig_mode_current = g.mig_mode_pending = Field<bool>::none(nvml_why(api, rc));
    return;
  }
  g.mig_mode_current = cur == NVML_DEVICE_MIG_ENABLE;
  g.mig_mode_pending = pend == NVML_DEVICE_MIG_ENABLE;
  if (cur != NVML_DEVICE_MIG_ENABLE || !api.nvmlDeviceGetMaxMigDeviceCount || !api.nvmlDeviceGetMigDeviceHandleByIndex)
    return;
  unsigned max = 0;
  if (api.nvmlDeviceGetMaxMigDeviceCount(dev, &max) != NVML_SUCCESS) return;
  for (unsigned i = 0; i < max; ++i) {
    nvmlDevice_t mig{};
    if (api.nvmlDeviceGetMigDeviceHandleByIndex(dev, i, &mig) != NVML_SUCCESS) continue;
    MigInstance m;
    m.index = i;
    m.uuid = get_string(api, api.nvmlDeviceGetUUID, mig);
    if (api.nvmlDeviceGetMemoryInfo_v2) {
      nvmlMemory_v2_t mem{};
      mem.version = nvmlMemory_v2;
      if (api.nvmlDeviceGetMemoryInfo_v2(mig, &mem) == NVML_SUCCESS) m.memory_total_bytes = mem.total;
    }
    g.mig_instances.push_back(std::move(m));
  }
}

void collect_nvlink(const NvmlApi& api, nvmlDevice_t dev, GpuSnapshot& g) {
  if (api.nvmlDeviceGetNvLinkState == nullptr) return;
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t active{};
    // NOT_SUPPORTED / INVALID_ARGUMENT: this GPU has no such link (a single PCIe card has none at all).
    if (api.nvmlDeviceGetNvLinkState(dev, link, &active) != NVML_SUCCESS) continue;
    NvLink l;
    l.link = link;
    l.active = active == NVML_FEATURE_ENABLED;
    auto counter = [&](nvmlNvLinkErrorCounter_t c) -> Field<uint64_t> {
      auto f = get<unsigned long long>(api, api.nvmlDeviceGetNvLinkErrorCounter, dev, link, c);
      if (!f.ok()) return Field<uint64_t>::none(f.unsupported);
      return static_cast<uint64_t>(*f);
    };
    l.replay_errors = counter(NVML_NVLINK_ERROR_DL_REPLAY);
    l.recovery_errors = counter(NVML_NVLINK_ERROR_DL_RECOVERY);
    l.crc_flit_errors = counter(NVML_NVLINK_ERROR_DL_CRC_FLIT);
    l.crc_data_errors = counter(NVML_NVLINK_ERROR_DL_CRC_DATA);
    g.nvlinks.push_back(l);
  }
}

// The fields that change while the GPU runs: counters, clocks, power, temperature, link state, memory, processes.
void refresh_gpu(const NvmlApi& api, nvmlDevice_t dev, GpuSnapshot& g) {
  {
    CostScope c("ecc, remapped rows, pages");
    g.ecc_volatile_corrected = ecc_count(api, dev, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC);
    g.ecc_volatile_uncorrected = ecc_count(api, dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC);
    g.ecc_aggregate_corrected = ecc_count(api, dev, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC);
    g.ecc_aggregate_uncorrected = ecc_count(api, dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC);
    if (api.nvmlDeviceGetRemappedRows) {
      unsigned corr = 0, unc = 0, pending = 0, failure = 0;
      if (const auto rc = api.nvmlDeviceGetRemappedRows(dev, &corr, &unc, &pending, &failure); rc == NVML_SUCCESS) {
        g.remapped_rows_correctable = corr;
        g.remapped_rows_uncorrectable = unc;
        g.remap_pending = pending != 0;
        g.remap_failure = failure != 0;
      } else {
        g.remapped_rows_correctable = g.remapped_rows_uncorrectable = Field<uint32_t>::none(nvml_why(api, rc));
        g.remap_pending = g.remap_failure = Field<bool>::none(nvml_why(api, rc));
      }
    }
    auto retired = [&](nvmlPageRetirementCause_t cause) -> Field<uint32_t> {
      if (!api.nvmlDeviceGetRetiredPages) return Field<uint32_t>::none("symbol missing in this driver's NVML");
      unsigned count = 0;  // count 0 asks only for the number of pages
      const auto rc = api.nvmlDeviceGetRetiredPages(dev, cause, &count, nullptr);
      if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE) return Field<uint32_t>::none(nvml_why(api, rc));
      return count;
    };
    g.retired_pages_single_bit = retired(NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS);
    g.retired_pages_double_bit = retired(NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR);
  }
  {
    CostScope c("clocks, reasons, power, temp");
    g.sm_clock_mhz = get<unsigned>(api, api.nvmlDeviceGetClockInfo, dev, NVML_CLOCK_SM);
    g.mem_clock_mhz = get<unsigned>(api, api.nvmlDeviceGetClockInfo, dev, NVML_CLOCK_MEM);
    if (auto r = get<unsigned long long>(api, api.nvmlDeviceGetCurrentClocksEventReasons, dev); r.ok())
      g.clock_event_reasons_mask = *r;
    else
      g.clock_event_reasons_mask = Field<uint64_t>::none(r.unsupported);
    g.power_draw_w = milliwatts_to_w(get<unsigned>(api, api.nvmlDeviceGetPowerUsage, dev));
    g.temperature_c = temperature_now(api, dev);
  }
  {
    CostScope c("pcie link, replays, bar1");
    g.pcie_gen_current = get<unsigned>(api, api.nvmlDeviceGetCurrPcieLinkGeneration, dev);
    g.pcie_width_current = get<unsigned>(api, api.nvmlDeviceGetCurrPcieLinkWidth, dev);
    g.pcie_replay_counter = get<unsigned>(api, api.nvmlDeviceGetPcieReplayCounter, dev);
    if (auto bar1 = get<nvmlBAR1Memory_t>(api, api.nvmlDeviceGetBAR1MemoryInfo, dev); bar1.ok()) {
      g.bar1_total_bytes = static_cast<uint64_t>(bar1->bar1Total);
      g.bar1_used_bytes = static_cast<uint64_t>(bar1->bar1Used);
    } else {
      g.bar1_total_bytes = g.bar1_used_bytes = Field<uint64_t>::none(bar1.unsupported);
    }
  }
  {
    CostScope c("memory, utilization");
    if (api.nvmlDeviceGetMemoryInfo_v2) {
      nvmlMemory_v2_t mem{};
      mem.version = nvmlMemory_v2;
      if (const auto rc = api.nvmlDeviceGetMemoryInfo_v2(dev, &mem); rc == NVML_SUCCESS) {
        g.memory_total_bytes = static_cast<uint64_t>(mem.total);
        g.memory_used_bytes = static_cast<uint64_t>(mem.used);
        g.memory_reserved_bytes = static_cast<uint64_t>(mem.reserved);
      } else {
        g.memory_total_bytes = g.memory_used_bytes = g.memory_reserved_bytes = Field<uint64_t>::none(nvml_why(api, rc));
      }
    }
    if (auto u = get<nvmlUtilization_t>(api, api.nvmlDeviceGetUtilizationRates, dev); u.ok()) {
      g.utilization_gpu_pct = u->gpu;
      g.utilization_memory_pct = u->memory;
    } else {
      g.utilization_gpu_pct = g.utilization_memory_pct = Field<uint32_t>::none(u.unsupported);
    }
  }
  {
    CostScope c("processes");
    collect_processes(api, dev, g);
  }
  {
    CostScope c("nvlink");
    collect_nvlink(api, dev, g);
  }
}

GpuSnapshot collect_gpu(const NvmlApi& api, uint32_t index, nvmlDevice_t dev) {
  CostScope cost("full GPU collection");
  GpuSnapshot g;
  g.index = index;
  g.name = get_string(api, api.nvmlDeviceGetName, dev);
  g.uuid = get_string(api, api.nvmlDeviceGetUUID, dev);
  g.serial = get_string(api, api.nvmlDeviceGetSerial, dev);
  g.vbios_version = get_string(api, api.nvmlDeviceGetVbiosVersion, dev);
  if (auto pci = get<nvmlPciInfo_t>(api, api.nvmlDeviceGetPciInfo_v3, dev); pci.ok())
    g.pci_bus_id = std::string(pci->busId);
  else
    g.pci_bus_id = Field<std::string>::none(pci.unsupported);
  if (auto a = get<nvmlDeviceArchitecture_t>(api, api.nvmlDeviceGetArchitecture, dev); a.ok())
    g.architecture = architecture_name(*a);
  else
    g.architecture = Field<std::string>::none(a.unsupported);
  if (api.nvmlDeviceGetCudaComputeCapability) {
    int major = 0, minor = 0;
    if (const auto rc = api.nvmlDeviceGetCudaComputeCapability(dev, &major, &minor); rc == NVML_SUCCESS) {
      g.compute_capability = fmt::format("{}.{}", major, minor);
    } else {
      g.compute_capability = Field<std::string>::none(nvml_why(api, rc));
    }
  }
  g.persistence_mode = enabled(get<nvmlEnableState_t>(api, api.nvmlDeviceGetPersistenceMode, dev));
  if (auto m = get<nvmlComputeMode_t>(api, api.nvmlDeviceGetComputeMode, dev); m.ok()) {
    g.compute_mode = *m == NVML_COMPUTEMODE_DEFAULT             ? "default"
                     : *m == NVML_COMPUTEMODE_EXCLUSIVE_PROCESS ? "exclusive_process"
                     : *m == NVML_COMPUTEMODE_PROHIBITED        ? "prohibited"
                                                                : fmt::format("mode_{}", static_cast<int>(*m));
  } else {
    g.compute_mode = Field<std::string>::none(m.unsupported);
  }
  collect_mig(api, dev, g);
  if (api.nvmlDeviceGetEccMode) {
    nvmlEnableState_t cur{}, pend{};
    if (const auto rc = api.nvmlDeviceGetEccMode(dev, &cur, &pend); rc == NVML_SUCCESS) {
      g.ecc_mode_current = cur == NVML_FEATURE_ENABLED;
      g.ecc_mode_pending = pend == NVML_FEATURE_ENABLED;
    } else {
      g.ecc_mode_current = g.ecc_mode_pending = Field<bool>::none(nvml_why(api, rc));
    }
  }
  g.sm_clock_max_mhz = get<unsigned>(api, api.nvmlDeviceGetMaxClockInfo, dev, NVML_CLOCK_SM);
  g.mem_clock_max_mhz = get<unsigned>(api, api.nvmlDeviceGetMaxClockInfo, dev, NVML_CLOCK_MEM);
  g.sm_clock_app_mhz = app_clock(api, dev, NVML_CLOCK_SM, NVML_CLOCK_ID_APP_CLOCK_TARGET);
  g.mem_clock_app_mhz = app_clock(api, dev, NVML_CLOCK_MEM, NVML_CLOCK_ID_APP_CLOCK_TARGET);
  g.sm_clock_app_default_mhz = app_clock(api, dev, NVML_CLOCK_SM, NVML_CLOCK_ID_APP_CLOCK_DEFAULT);
  g.mem_clock_app_default_mhz = app_clock(api, dev, NVML_CLOCK_MEM, NVML_CLOCK_ID_APP_CLOCK_DEFAULT);
  g.power_limit_w = milliwatts_to_w(get<unsigned>(api, api.nvmlDeviceGetPowerManagementLimit, dev));
  g.power_default_limit_w = milliwatts_to_w(get<unsigned>(api, api.nvmlDeviceGetPowerManagementDefaultLimit, dev));
  g.power_enforced_limit_w = milliwatts_to_w(get<unsigned>(api, api.nvmlDeviceGetEnforcedPowerLimit, dev));
  g.temperature_slowdown_c = temperature_threshold(api, dev, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN);
  g.temperature_shutdown_c = temperature_threshold(api, dev, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN);
  g.temperature_gpu_max_c = temperature_threshold(api, dev, NVML_TEMPERATURE_THRESHOLD_GPU_MAX);
  g.temperature_mem_max_c = temperature_threshold(api, dev, NVML_TEMPERATURE_THRESHOLD_MEM_MAX);
  g.pcie_gen_max = get<unsigned>(api, api.nvmlDeviceGetMaxPcieLinkGeneration, dev);
  g.pcie_gen_gpu_max = get<unsigned>(api, api.nvmlDeviceGetGpuMaxPcieLinkGeneration, dev);
  g.pcie_width_max = get<unsigned>(api, api.nvmlDeviceGetMaxPcieLinkWidth, dev);
  g.memory_bus_width_bits = get<unsigned>(api, api.nvmlDeviceGetMemoryBusWidth, dev);
  if (api.nvmlDeviceGetCpuAffinity) {
    std::array<unsigned long, 16> set{};  // 1024 CPUs
    if (const auto rc = api.nvmlDeviceGetCpuAffinity(dev, static_cast<unsigned>(set.size()), set.data());
        rc == NVML_SUCCESS) {
      std::vector<int> cpus;
      for (size_t w = 0; w < set.size(); ++w)
        for (size_t b = 0; b < 8 * sizeof(unsigned long); ++b)
          if (set[w] & (1UL << b)) cpus.push_back(static_cast<int>(w * 8 * sizeof(unsigned long) + b));
      g.cpu_affinity = host::format_cpulist(cpus);
    } else {
      g.cpu_affinity = Field<std::string>::none(nvml_why(api, rc));
    }
  }
  if (auto n = get<unsigned>(api, api.nvmlDeviceGetNumaNodeId, dev); n.ok())
    g.numa_node = static_cast<int32_t>(*n);
  else
    g.numa_node = Field<int32_t>::none(n.unsupported);
  if (api.nvmlGpmQueryDeviceSupport) {
    nvmlGpmSupport_t s{};
    s.version = NVML_GPM_SUPPORT_VERSION;
    if (const auto rc = api.nvmlGpmQueryDeviceSupport(dev, &s); rc == NVML_SUCCESS)
      g.gpm_supported = s.isSupportedDevice != 0;
    else
      g.gpm_supported = Field<bool>::none(nvml_why(api, rc));
  }
  refresh_gpu(api, dev, g);
  g.under_load = Field<LoadSample>::none("no load run (doctor --no-load, or env)");
  return g;
}

}  // namespace

std::string utc_now_iso8601() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

HostSnapshot collect_host() {
  HostSnapshot h;
  if (auto name = host::hostname()) h.hostname = *name;
  if (auto k = host::kernel_release()) h.kernel = *k;
  h.os = host::os_pretty_name();
  h.cpu_model = host::cpu_model();
  h.cpu_count = host::cpu_count();
  h.cpu_governor = host::cpu_governor();
  h.cuda_runtime_version = cuda::cuda_runtime_version();
  h.nvidia_params = host::nvidia_module_params();
  h.aspm_policy = host::aspm_policy();
  h.iommu = host::iommu_state();
  h.container_hints = host::container_hints();
  if (auto cpus = host::process_cpu_affinity()) h.process_cpu_affinity = host::format_cpulist(*cpus);
  h.uid = static_cast<uint32_t>(::getuid());
  for (const auto& [name, value] : host::environment())
    if (is_recorded_env_var(name)) h.env.emplace(name, value);
  h.driver_version = h.cuda_driver_version = h.nvml_version = Field<std::string>::none("no NVIDIA driver");
  return h;
}

Snapshot collect_snapshot(const Nvml& nvml) {
  return collect_snapshot(nvml, collect_host());
}

Snapshot collect_snapshot(const Nvml& nvml, HostSnapshot host) {
  const NvmlApi& api = nvml.api();
  Snapshot s;
  s.captured_at = utc_now_iso8601();
  s.source = "live";
  s.host = std::move(host);
  s.host.driver_version = system_string(api, api.nvmlSystemGetDriverVersion);
  s.host.nvml_version = system_string(api, api.nvmlSystemGetNVMLVersion);
  s.host.cuda_driver_version = cuda_version_text(get<int>(api, api.nvmlSystemGetCudaDriverVersion));
  unsigned count = 0;
  if (const auto rc = api.nvmlDeviceGetCount_v2(&count); rc != NVML_SUCCESS) {
    throw_no_gpu(fmt::format("no NVIDIA GPU: nvmlDeviceGetCount failed with {}", nvml_why(api, rc)));
  }
  if (count == 0) throw_no_gpu("no NVIDIA GPU: the driver is loaded but NVML sees no device");
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev{};
    if (const auto rc = api.nvmlDeviceGetHandleByIndex_v2(i, &dev); rc != NVML_SUCCESS) {
      s.notes.push_back(fmt::format("GPU {}: no handle ({}); left out", i, nvml_why(api, rc)));
      continue;
    }
    s.gpus.push_back(collect_gpu(api, i, dev));
  }
  return s;
}

void refresh_snapshot(const Nvml& nvml, Snapshot& s) {
  const NvmlApi& api = nvml.api();
  s.captured_at = utc_now_iso8601();
  for (auto& g : s.gpus) {
    nvmlDevice_t dev{};
    if (api.nvmlDeviceGetHandleByIndex_v2(g.index, &dev) != NVML_SUCCESS)
      throw_no_gpu(fmt::format("GPU {}: NVML no longer has it", g.index));
    refresh_gpu(api, dev, g);
  }
}

ClockReading read_clock(const Nvml& nvml, uint32_t gpu_index) {
  const NvmlApi& api = nvml.api();
  ClockReading r;
  nvmlDevice_t dev{};
  if (api.nvmlDeviceGetHandleByIndex_v2(gpu_index, &dev) != NVML_SUCCESS) return r;
  r.sm_clock_mhz = get<unsigned>(api, api.nvmlDeviceGetClockInfo, dev, NVML_CLOCK_SM);
  if (auto m = get<unsigned long long>(api, api.nvmlDeviceGetCurrentClocksEventReasons, dev); m.ok())
    r.clock_event_reasons_mask = *m;
  else
    r.clock_event_reasons_mask = Field<uint64_t>::none(m.unsupported);
  return r;
}

LiveReading read_live(const Nvml& nvml, uint32_t gpu_index) {
  const NvmlApi& api = nvml.api();
  LiveReading r;
  nvmlDevice_t dev{};
  if (api.nvmlDeviceGetHandleByIndex_v2(gpu_index, &dev) != NVML_SUCCESS) return r;
  const ClockReading c = read_clock(nvml, gpu_index);
  r.sm_clock_mhz = c.sm_clock_mhz;
  r.clock_event_reasons_mask = c.clock_event_reasons_mask;
  r.pcie_gen = get<unsigned>(api, api.nvmlDeviceGetCurrPcieLinkGeneration, dev);
  r.pcie_replay_counter = get<unsigned>(api, api.nvmlDeviceGetPcieReplayCounter, dev);
  r.temperature_c = temperature_now(api, dev);
  r.power_w = milliwatts_to_w(get<unsigned>(api, api.nvmlDeviceGetPowerUsage, dev));
  return r;
}

Counters read_counters(const Nvml& nvml, uint32_t gpu_index) {
  const NvmlApi& api = nvml.api();
  Counters c;
  nvmlDevice_t dev{};
  if (api.nvmlDeviceGetHandleByIndex_v2(gpu_index, &dev) != NVML_SUCCESS) return c;
  {
    CostScope cost("energy");
    const auto energy = get<unsigned long long>(api, api.nvmlDeviceGetTotalEnergyConsumption, dev);
    c.energy_mj = energy.ok() ? Field<uint64_t>(*energy) : Field<uint64_t>::none(energy.unsupported);
  }
  CostScope cost("pcie throughput");  // NVML samples each direction over 20 ms
  c.pcie_tx_kb_per_s = get<unsigned>(api, api.nvmlDeviceGetPcieThroughput, dev, NVML_PCIE_UTIL_TX_BYTES);
  c.pcie_rx_kb_per_s = get<unsigned>(api, api.nvmlDeviceGetPcieThroughput, dev, NVML_PCIE_UTIL_RX_BYTES);
  return c;
}

LoadSample summarize_load(const std::vector<LiveReading>& readings, double duration_s) {
  LoadSample s;
  s.duration_s = duration_s;
  s.samples = static_cast<uint32_t>(readings.size());
  auto fold = [&](auto member, auto combine, auto& out) {
    for (const auto& r : readings) {
      const auto& f = r.*member;
      if (!f.ok()) continue;
      using T = std::remove_cvref_t<decltype(*out.value)>;
      out = out.ok() ? Field<T>(combine(*out, static_cast<T>(*f))) : Field<T>(static_cast<T>(*f));
    }
    if (!out.ok()) out.unsupported = "not readable during the load";
  };
  auto min = [](auto a, auto b) { return std::min(a, b); };
  auto max = [](auto a, auto b) { return std::max(a, b); };
  fold(&LiveReading::sm_clock_mhz, min, s.sm_clock_min_mhz);
  fold(&LiveReading::sm_clock_mhz, max, s.sm_clock_max_mhz);
  fold(&LiveReading::pcie_gen, max, s.pcie_gen_max_seen);
  fold(
      &LiveReading::clock_event_reasons_mask, [](uint64_t a, uint64_t b) { return a | b; }, s.clock_event_reasons_mask);
  fold(&LiveReading::temperature_c, max, s.temperature_max_c);
  fold(&LiveReading::power_w, max, s.power_max_w);
  Field<uint32_t> first, last;
  for (const auto& r : readings) {
    if (!r.pcie_replay_counter.ok()) continue;
    if (!first.ok()) first = r.pcie_replay_counter;
    last = r.pcie_replay_counter;
  }
  if (first.ok())
    s.pcie_replay_delta = static_cast<uint64_t>(*last - *first);
  else
    s.pcie_replay_delta = Field<uint64_t>::none("replay counter not readable");
  return s;
}

}  // namespace gsq::gpu
