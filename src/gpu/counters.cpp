// Hardware counters sampled beside a program (see counters.hpp): the GPM reader and the sampling thread.
#include "gpu/counters.hpp"

#include "gpu/collect.hpp"
#include "gpu/cost.hpp"
#include "gpu/peaks.hpp"

#include <time.h>

#include <chrono>
#include <cmath>
#include <iterator>
#include <utility>

namespace gsq::gpu {

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

namespace {

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
enum Basic : size_t {
  sm_clock = kGpmCount,
  power,
  temperature,
  clock_events,
  mem_clock,
  memory_temperature,
  throttle_first,  // the cumulative throttle counters of kThrottleFields, in that order
  basic_end = throttle_first + 5
};

// NVML's cumulative clock-event counters (ns the clock was held down for each reason since the driver loaded), read
// as field values; the jitter analysis turns their differences into the fraction of time throttled.
constexpr std::pair<unsigned, const char*> kThrottleFields[] = {
    {NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP, "throttle_sw_power_cap"},
    {NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN, "throttle_sw_thermal_slowdown"},
    {NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN, "throttle_hw_thermal_slowdown"},
    {NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN, "throttle_hw_power_brake_slowdown"},
    {NVML_FI_DEV_CLOCKS_EVENT_REASON_SYNC_BOOST, "throttle_sync_boost"},
};

}  // namespace

std::span<const GpmMetric> gpm_metrics() {
  return kGpm;
}

GpmReader::GpmReader(const Nvml& nvml, uint32_t gpu_index) : api_(nvml.api()) {
  if (api_.nvmlDeviceGetHandleByIndex_v2(gpu_index, &dev_) != NVML_SUCCESS) {
    reason_ = "no NVML device " + std::to_string(gpu_index);
    return;
  }
  if (!api_.nvmlGpmQueryDeviceSupport || !api_.nvmlGpmSampleAlloc || !api_.nvmlGpmSampleGet ||
      !api_.nvmlGpmMetricsGet || !api_.nvmlGpmSampleFree) {
    reason_ = "this NVML has no GPM entry points";
    return;
  }
  nvmlGpmSupport_t s{};
  s.version = NVML_GPM_SUPPORT_VERSION;
  const nvmlReturn_t rc = api_.nvmlGpmQueryDeviceSupport(dev_, &s);
  if (rc != NVML_SUCCESS || !s.isSupportedDevice) {
    reason_ = rc == NVML_SUCCESS ? "GPM not supported on this GPU (Hopper or later)" : nvml_error_name(rc);
    return;
  }
  if (api_.nvmlGpmSampleAlloc(&samples_[0]) != NVML_SUCCESS || api_.nvmlGpmSampleAlloc(&samples_[1]) != NVML_SUCCESS) {
    reason_ = "nvmlGpmSampleAlloc failed";
    return;
  }
  const nvmlReturn_t first = api_.nvmlGpmSampleGet(dev_, samples_[0]);
  if (first != NVML_SUCCESS) {
    reason_ = std::string("nvmlGpmSampleGet: ") + nvml_error_name(first);
    return;
  }
  request_ = std::make_unique<nvmlGpmMetricsGet_t>();
  ok_ = true;
}

GpmReader::~GpmReader() {
  for (auto* s : samples_)
    if (s) api_.nvmlGpmSampleFree(s);
}

std::vector<std::optional<double>> GpmReader::read() {
  CostScope cost("gpm sample + metrics");
  std::vector<std::optional<double>> out;
  if (!ok_ || api_.nvmlGpmSampleGet(dev_, samples_[cur_]) != NVML_SUCCESS) return out;
  *request_ = nvmlGpmMetricsGet_t{};
  request_->version = NVML_GPM_METRICS_GET_VERSION;
  request_->numMetrics = kGpmCount;
  request_->sample1 = samples_[1 - cur_];
  request_->sample2 = samples_[cur_];
  cur_ = 1 - cur_;  // this sample starts the next interval
  for (size_t i = 0; i < kGpmCount; ++i) request_->metrics[i].metricId = kGpm[i].id;
  if (api_.nvmlGpmMetricsGet(request_.get()) != NVML_SUCCESS) return out;
  out.resize(kGpmCount);
  for (size_t i = 0; i < kGpmCount; ++i)
    if (request_->metrics[i].nvmlReturn == NVML_SUCCESS && std::isfinite(request_->metrics[i].value))
      out[i] = request_->metrics[i].value * kGpm[i].scale;  // NVML has returned NaN for an interval
  return out;
}

namespace {
nlohmann::json describe_device(const Nvml& nvml, uint32_t gpu_index) {
  const NvmlApi& api = nvml.api();
  nvmlDevice_t dev{};
  nlohmann::json d = {{"index", gpu_index}};
  if (api.nvmlDeviceGetHandleByIndex_v2(gpu_index, &dev) == NVML_SUCCESS) {
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    if (api.nvmlDeviceGetName && api.nvmlDeviceGetName(dev, name, sizeof name) == NVML_SUCCESS) d["name"] = name;
    unsigned mem_mhz = 0, bus_bits = 0;
    if (api.nvmlDeviceGetMaxClockInfo && api.nvmlDeviceGetMemoryBusWidth &&
        api.nvmlDeviceGetMaxClockInfo(dev, NVML_CLOCK_MEM, &mem_mhz) == NVML_SUCCESS &&
        api.nvmlDeviceGetMemoryBusWidth(dev, &bus_bits) == NVML_SUCCESS)
      d["dram_peak_bytes_per_s"] = dram_peak_bytes_per_s(mem_mhz, bus_bits);
    // The limits the jitter analysis measures margins against.
    auto threshold = [&](nvmlTemperatureThresholds_t t, const char* key) {
      unsigned v = 0;
      if (api.nvmlDeviceGetTemperatureThreshold && api.nvmlDeviceGetTemperatureThreshold(dev, t, &v) == NVML_SUCCESS)
        d[key] = v;
    };
    threshold(NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, "temperature_slowdown_c");
    threshold(NVML_TEMPERATURE_THRESHOLD_MEM_MAX, "memory_temperature_max_c");
    unsigned limit_mw = 0;
    if (api.nvmlDeviceGetEnforcedPowerLimit && api.nvmlDeviceGetEnforcedPowerLimit(dev, &limit_mw) == NVML_SUCCESS)
      d["power_limit_w"] = limit_mw / 1000.0;
    unsigned max_sm = 0;
    if (api.nvmlDeviceGetMaxClockInfo && api.nvmlDeviceGetMaxClockInfo(dev, NVML_CLOCK_SM, &max_sm) == NVML_SUCCESS)
      d["sm_clock_max_hz"] = max_sm * 1e6;
  }
  return d;
}
}  // namespace

nlohmann::json device_info(uint32_t gpu_index) {
  return describe_device(Nvml::open(), gpu_index);
}

CounterSampler::CounterSampler(uint32_t gpu_index, int interval_ms)
    : nvml_(Nvml::open()),
      index_(gpu_index),
      interval_ms_(interval_ms < 100 ? 100 : interval_ms),
      gpm_(nvml_, gpu_index) {
  device_ = describe_device(nvml_, gpu_index);
  series_.resize(basic_end);
  for (size_t i = 0; i < kGpmCount; ++i) series_[i] = {kGpm[i].name, kGpm[i].unit, {}, {}};
  series_[sm_clock] = {"sm_clock", "hertz", {}, {}};
  series_[power] = {"power", "watts", {}, {}};
  series_[temperature] = {"temperature", "celsius", {}, {}};
  series_[clock_events] = {"clock_event_reasons", "bitmask", {}, {}};
  series_[mem_clock] = {"mem_clock", "hertz", {}, {}};
  series_[memory_temperature] = {"memory_temperature", "celsius", {}, {}};
  for (size_t i = 0; i < std::size(kThrottleFields); ++i)
    series_[throttle_first + i] = {kThrottleFields[i].second, "nanoseconds", {}, {}};
  thread_ = std::thread([this] { run(); });
}

CounterSampler::~CounterSampler() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void CounterSampler::run() {
  int64_t previous = monotonic_ns();
  auto next = std::chrono::steady_clock::now();
  while (!stop_) {
    next += std::chrono::milliseconds(interval_ms_);
    while (!stop_ && std::chrono::steady_clock::now() < next) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const int64_t now = monotonic_ns();
    const int64_t mid = previous + (now - previous) / 2;  // a GPM value is the average over the interval
    const auto values = gpm_.read();
    for (size_t i = 0; i < values.size(); ++i) {
      if (!values[i]) continue;
      series_[i].t_ns.push_back(mid);
      series_[i].values.push_back(*values[i]);
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
    read_extra(now);
    previous = now;
  }
}

// Memory clock, memory temperature and the cumulative throttle counters: one NVML call each (the field values in one
// call); a reading the driver does not support is simply absent from its track.
void CounterSampler::read_extra(int64_t now) {
  const NvmlApi& api = nvml_.api();
  nvmlDevice_t dev{};
  if (api.nvmlDeviceGetHandleByIndex_v2(index_, &dev) != NVML_SUCCESS) return;
  auto put = [&](size_t s, double v) {
    series_[s].t_ns.push_back(now);
    series_[s].values.push_back(v);
  };
  unsigned mhz = 0;
  if (api.nvmlDeviceGetClockInfo && api.nvmlDeviceGetClockInfo(dev, NVML_CLOCK_MEM, &mhz) == NVML_SUCCESS)
    put(mem_clock, mhz * 1e6);
  if (!api.nvmlDeviceGetFieldValues) return;
  nvmlFieldValue_t fields[1 + std::size(kThrottleFields)] = {};
  fields[0].fieldId = NVML_FI_DEV_MEMORY_TEMP;
  for (size_t i = 0; i < std::size(kThrottleFields); ++i) fields[1 + i].fieldId = kThrottleFields[i].first;
  if (api.nvmlDeviceGetFieldValues(dev, static_cast<int>(std::size(fields)), fields) != NVML_SUCCESS) return;
  auto number = [](const nvmlFieldValue_t& f) -> std::optional<double> {
    if (f.nvmlReturn != NVML_SUCCESS) return std::nullopt;
    switch (f.valueType) {
      case NVML_VALUE_TYPE_DOUBLE:
        return f.value.dVal;
      case NVML_VALUE_TYPE_UNSIGNED_INT:
        return f.value.uiVal;
      case NVML_VALUE_TYPE_UNSIGNED_LONG:
        return static_cast<double>(f.value.ulVal);
      case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
        return static_cast<double>(f.value.ullVal);
      case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        return static_cast<double>(f.value.sllVal);
      case NVML_VALUE_TYPE_SIGNED_INT:
        return f.value.siVal;
      default:
        return std::nullopt;
    }
  };
  if (const auto t = number(fields[0])) put(memory_temperature, *t);
  for (size_t i = 0; i < std::size(kThrottleFields); ++i)
    if (const auto v = number(fields[1 + i])) put(throttle_first + i, *v);
}

nlohmann::json CounterSampler::finish() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  nlohmann::json tracks = nlohmann::json::array();
  for (const auto& s : series_)
    if (!s.t_ns.empty()) tracks.push_back({{"name", s.name}, {"unit", s.unit}, {"t_ns", s.t_ns}, {"values", s.values}});
  return {{"source", gpm_.supported() ? "nvml-gpm" : "nvml"},
          {"device", index_},
          {"device_info", device_},
          {"interval_ms", interval_ms_},
          {"clock", "monotonic"},
          {"gpm", gpm_.supported() ? "supported" : gpm_.reason()},
          {"tracks", std::move(tracks)}};
}

}  // namespace gsq::gpu
