// Hardware counters sampled while a traced program runs (step 2, hardware layer): NVML GPM metrics on Hopper and
// later (SM activity, SM occupancy, DRAM bandwidth, tensor/FP16/FP32/FP64 activity, PCIe and NVLink traffic) and the
// NVML readings every GPU has (SM clock, power, temperature, clock-event reasons). GPM metrics are averages over
// each interval between two samples; NVML documents 100 ms as the shortest useful interval.
#pragma once

#include "gpu/nvml.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace gsq::gpu {

struct CounterSeries {
  std::string name, unit;
  std::vector<int64_t> t_ns;  // CLOCK_MONOTONIC
  std::vector<double> values;
};

class CounterSampler {
 public:
  // Starts a thread sampling GPU `gpu_index` every `interval_ms` (≥ 100). Throws Error(no_gpu) without NVML.
  CounterSampler(uint32_t gpu_index, int interval_ms);
  ~CounterSampler();
  CounterSampler(const CounterSampler&) = delete;
  CounterSampler& operator=(const CounterSampler&) = delete;

  // Stops sampling and returns the counters chunk payload of the trace format ("clock": "monotonic").
  [[nodiscard]] nlohmann::json finish();
  [[nodiscard]] bool gpm_supported() const noexcept { return gpm_; }
  [[nodiscard]] const std::string& gpm_reason() const noexcept { return gpm_reason_; }

 private:
  void run();
  Nvml nvml_;
  uint32_t index_;
  int interval_ms_;
  bool gpm_ = false;
  std::string gpm_reason_;
  std::vector<CounterSeries> series_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace gsq::gpu
