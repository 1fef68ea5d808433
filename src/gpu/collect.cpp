// Snapshots of the whole machine (host facts from src/host, each GPU through collect_gpu) and the live readings
// that bench, doctor's load phase and the exporter take while the GPU works.
#include "gpu/collect.hpp"

#include "core/error.hpp"
#include "cuda/device.hpp"
#include "gpu/cost.hpp"
#include "gpu/nvml_get.hpp"
#include "host/facts.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>

namespace gsq::gpu {

using detail::collect_gpu;
using detail::get;
using detail::milliwatts_to_w;
using detail::nvml_why;
using detail::refresh_gpu;
using detail::system_string;
using detail::temperature_now;

namespace {
Field<std::string> cuda_version_text(const Field<int>& v) {
  if (!v.ok()) return Field<std::string>::none(v.unsupported);
  return fmt::format("{}.{}", *v / 1000, (*v % 1000) / 10);
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