// Hardware counters sampled while a traced program runs (step 2, hardware layer): NVML GPM metrics on Hopper and
// later (SM activity, SM occupancy, DRAM bandwidth, tensor/FP16/FP32/FP64 activity, PCIe and NVLink traffic) and the
// NVML readings every GPU has (SM and memory clocks, power, GPU and memory temperature, clock-event reasons and the
// cumulative throttle counters). GPM metrics are averages over
// each interval between two samples; NVML documents 100 ms as the shortest useful interval.
#pragma once

#include "gpu/nvml.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace gsq::gpu {

// One NVML GPM metric as gpusqueeze names and stores it (ratios 0–1, bytes per second).
struct GpmMetric {
  unsigned id;
  const char* name;
  const char* unit;
  double scale;  // NVML value -> stored value
};
[[nodiscard]] std::span<const GpmMetric> gpm_metrics();

// Reads the GPM metrics of one GPU over the interval between two calls of read() (the first interval starts at
// construction). Not thread-safe; one reader per GPU and thread.
class GpmReader {
 public:
  GpmReader(const Nvml& nvml, uint32_t gpu_index);
  ~GpmReader();
  GpmReader(const GpmReader&) = delete;
  GpmReader& operator=(const GpmReader&) = delete;
  [[nodiscard]] bool supported() const noexcept { return ok_; }
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }
  // One value per gpm_metrics() entry, nullopt where NVML gave none; empty when unsupported or the read failed.
  [[nodiscard]] std::vector<std::optional<double>> read();

 private:
  const NvmlApi& api_;
  nvmlDevice_t dev_{};
  bool ok_ = false;
  std::string reason_;
  nvmlGpmSample_t samples_[2] = {nullptr, nullptr};
  int cur_ = 1;
  std::unique_ptr<nvmlGpmMetricsGet_t> request_;  // ~20 kB: not on the caller's stack
};

struct CounterSeries {
  std::string name, unit;
  std::vector<int64_t> t_ns;  // CLOCK_MONOTONIC
  std::vector<double> values;
};

// CLOCK_MONOTONIC in ns: the clock of the samplers' time stamps and of .gsqt headers.
[[nodiscard]] int64_t monotonic_ns();

// What the counters chunk says of GPU `gpu_index` ("device_info": name, DRAM peak, limits). Throws Error(no_gpu)
// without NVML.
[[nodiscard]] nlohmann::json device_info(uint32_t gpu_index);

class CounterSampler {
 public:
  // Starts a thread sampling GPU `gpu_index` every `interval_ms` (≥ 100). Throws Error(no_gpu) without NVML.
  CounterSampler(uint32_t gpu_index, int interval_ms);
  ~CounterSampler();
  CounterSampler(const CounterSampler&) = delete;
  CounterSampler& operator=(const CounterSampler&) = delete;

  // Stops sampling and returns the counters chunk payload of the trace format ("clock": "monotonic").
  [[nodiscard]] nlohmann::json finish();
  [[nodiscard]] bool gpm_supported() const noexcept { return gpm_.supported(); }
  [[nodiscard]] const std::string& gpm_reason() const noexcept { return gpm_.reason(); }

 private:
  void run();
  void read_extra(int64_t now);
  Nvml nvml_;
  uint32_t index_;
  int interval_ms_;
  GpmReader gpm_;
  nlohmann::json device_;  // name and DRAM peak, for the analyzer's roofline
  std::vector<CounterSeries> series_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace gsq::gpu
