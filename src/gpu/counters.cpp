#include "gpu/counters.hpp"

#include "gpu/collect.hpp"

#include <time.h>

#include <chrono>

namespace gsq::gpu {

namespace {

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct GpmMetric {
  unsigned id;
  const char* name;
  const char* unit;
  double scale;  // NVML value -> stored value
};
// GPM percentages become ratios (Prometheus-style base units); MiB/s become bytes/s.
constexpr GpmMetric kGpm[] = {
    {NVML_GPM_METRIC_SM_UTIL, "sm_active", "ratio", 0.01},
    {NVML_GPM_METRIC_SM_OCCUPANCY, "sm_occupancy", "ratio", 0.01},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, "dram_bandwidth_utilization", "ratio", 0.01},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, "tensor_active", "ratio", 0.01},
    {NVML_GPM_METRIC_FP16_UTIL, "fp16_active", "ratio", 0.01},
    {NVML_GPM_METRIC_FP32_UTIL, "fp32_active", "ratio", 0.01},
    {NVML_GPM_METRIC_FP64_UTIL, "fp64_active", "ratio", 0.01},
    {NVML_GPM_METRIC_PCIE_TX_PER_SEC, "pcie_tx", "bytes_per_second", 1048576.0},
    {NVML_GPM_METRIC_PCIE_RX_PER_SEC, "pcie_rx", "bytes_per_second", 1048576.0},
    {NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, "nvlink_tx", "bytes_per_second", 1048576.0},
    {NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, "nvlink_rx", "bytes_per_second", 1048576.0},
};
constexpr size_t kGpmCount = sizeof(kGpm) / sizeof(kGpm[0]);
// Series after the GPM ones: what every NVML GPU reports.
enum Basic : size_t { sm_clock = kGpmCount, power, temperature, clock_events, basic_end };

}  // namespace

CounterSampler::CounterSampler(uint32_t gpu_index, int interval_ms)
    : nvml_(Nvml::open()), index_(gpu_index), interval_ms_(interval_ms < 100 ? 100 : interval_ms) {
  const NvmlApi& api = nvml_.api();
  nvmlDevice_t dev{};
  if (api.nvmlDeviceGetHandleByIndex_v2(index_, &dev) != NVML_SUCCESS) {
    gpm_reason_ = "no NVML device " + std::to_string(index_);
  } else if (!api.nvmlGpmQueryDeviceSupport || !api.nvmlGpmSampleAlloc || !api.nvmlGpmSampleGet ||
             !api.nvmlGpmMetricsGet || !api.nvmlGpmSampleFree) {
    gpm_reason_ = "this NVML has no GPM entry points";
  } else {
    nvmlGpmSupport_t s{};
    s.version = NVML_GPM_SUPPORT_VERSION;
    const nvmlReturn_t rc = api.nvmlGpmQueryDeviceSupport(dev, &s);
    gpm_ = rc == NVML_SUCCESS && s.isSupportedDevice;
    if (!gpm_)
      gpm_reason_ = rc == NVML_SUCCESS ? "GPM not supported on this GPU (Hopper or later)" : nvml_error_name(rc);
  }
  series_.resize(basic_end);
  for (size_t i = 0; i < kGpmCount; ++i) series_[i] = {kGpm[i].name, kGpm[i].unit, {}, {}};
  series_[sm_clock] = {"sm_clock", "hertz", {}, {}};
  series_[power] = {"power", "watts", {}, {}};
  series_[temperature] = {"temperature", "celsius", {}, {}};
  series_[clock_events] = {"clock_event_reasons", "bitmask", {}, {}};
  thread_ = std::thread([this] { run(); });
}

CounterSampler::~CounterSampler() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void CounterSampler::run() {
  const NvmlApi& api = nvml_.api();
  nvmlDevice_t dev{};
  if (api.nvmlDeviceGetHandleByIndex_v2(index_, &dev) != NVML_SUCCESS) return;
  nvmlGpmSample_t samples[2] = {nullptr, nullptr};
  bool gpm = gpm_ && api.nvmlGpmSampleAlloc(&samples[0]) == NVML_SUCCESS &&
             api.nvmlGpmSampleAlloc(&samples[1]) == NVML_SUCCESS &&
             api.nvmlGpmSampleGet(dev, samples[0]) == NVML_SUCCESS;
  auto request = std::make_unique<nvmlGpmMetricsGet_t>();  // ~20 kB: not on this thread's stack
  int64_t previous = monotonic_ns();
  int cur = 1;
  auto next = std::chrono::steady_clock::now();
  while (!stop_) {
    next += std::chrono::milliseconds(interval_ms_);
    while (!stop_ && std::chrono::steady_clock::now() < next) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const int64_t now = monotonic_ns();
    const int64_t mid = previous + (now - previous) / 2;  // a GPM value is the average over the interval
    if (gpm && api.nvmlGpmSampleGet(dev, samples[cur]) == NVML_SUCCESS) {
      *request = nvmlGpmMetricsGet_t{};
      request->version = NVML_GPM_METRICS_GET_VERSION;
      request->numMetrics = kGpmCount;
      request->sample1 = samples[1 - cur];
      request->sample2 = samples[cur];
      for (size_t i = 0; i < kGpmCount; ++i) request->metrics[i].metricId = kGpm[i].id;
      if (api.nvmlGpmMetricsGet(request.get()) == NVML_SUCCESS) {
        for (size_t i = 0; i < kGpmCount; ++i) {
          if (request->metrics[i].nvmlReturn != NVML_SUCCESS) continue;
          series_[i].t_ns.push_back(mid);
          series_[i].values.push_back(request->metrics[i].value * kGpm[i].scale);
        }
      }
      cur = 1 - cur;
    }
    const LiveReading live = read_live(nvml_, index_);
    auto put = [&](size_t s, bool ok, double v) {
      if (!ok) return;
      series_[s].t_ns.push_back(now);
      series_[s].values.push_back(v);
    };
    put(sm_clock, live.sm_clock_mhz.ok(), live.sm_clock_mhz.ok() ? *live.sm_clock_mhz * 1e6 : 0);
    put(power, live.power_w.ok(), live.power_w.ok() ? *live.power_w : 0);
    put(temperature, live.temperature_c.ok(), live.temperature_c.ok() ? *live.temperature_c : 0);
    put(clock_events, live.clock_event_reasons_mask.ok(),
        live.clock_event_reasons_mask.ok() ? static_cast<double>(*live.clock_event_reasons_mask) : 0);
    previous = now;
  }
  for (auto* s : samples)
    if (s) api.nvmlGpmSampleFree(s);
}

nlohmann::json CounterSampler::finish() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  nlohmann::json tracks = nlohmann::json::array();
  for (const auto& s : series_)
    if (!s.t_ns.empty()) tracks.push_back({{"name", s.name}, {"unit", s.unit}, {"t_ns", s.t_ns}, {"values", s.values}});
  return {{"source", gpm_ ? "nvml-gpm" : "nvml"},
          {"device", index_},
          {"interval_ms", interval_ms_},
          {"clock", "monotonic"},
          {"gpm", gpm_ ? "supported" : gpm_reason_},
          {"tracks", std::move(tracks)}};
}

}  // namespace gsq::gpu
