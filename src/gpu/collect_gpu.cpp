// One GPU's snapshot through NVML: identity, clocks and their limits, power, ECC, MIG, NVLink, processes.
#include "gpu/nvml_get.hpp"

#include "gpu/cost.hpp"
#include "gpu/snapshot.hpp"
#include "host/facts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

namespace gsq::gpu::detail {

namespace {

namespace fs = std::filesystem;

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

Field<int32_t> temperature_threshold(const NvmlApi& api, nvmlDevice_t dev, nvmlTemperatureThresholds_t t) {
  auto f = get<unsigned>(api, api.nvmlDeviceGetTemperatureThreshold, dev, t);
  if (!f.ok()) return Field<int32_t>::none(f.unsupported);
  return static_cast<int32_t>(*f);
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

}  // namespace

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

}  // namespace gsq::gpu::detail
