// The benchmark API: a benchmark declares axes, sets up its buffers, declares its bytes/FLOPs, and hands the harness a
// launch function to time. Users register their own the same way the built-in suites do.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gsq::bench {

struct Axis {
  std::string name;
  std::vector<std::string>
      values;  // in order, smallest first where the axis is numeric (the boundary set uses both ends)
};

// Raw result of one timing mode for one configuration. Statistics are derived from it, never stored instead of it.
struct Measurement {
  // "cold": L2 flushed, one launch queued behind a blocking kernel; "batch": up to 256 launches queued behind the
  // blocking kernel, so the GPU runs them back to back with no host gaps; "host": launches back to back as fast as this
  // thread issues them (includes CPU launch cost, so it varies with the host); "first_calls": no warmup, one call each.
  std::string mode;
  uint32_t launches_per_sample = 1;
  std::vector<double> samples_ns;      // GPU time per launch
  std::vector<uint32_t> sm_clock_mhz;  // NVML SM clock after each sample; empty when NVML is unavailable
  std::vector<uint8_t> throttled;      // 1 = flagged by the throttle rule (docs/timing-protocol.md)
  std::string stop_reason;             // "converged", "time limit", "sample limit", "fixed count"
  double wall_s = 0;
  double overhead_ns_per_sample = 0;  // host time per sample beyond the GPU time it measured
  bool throttled_dropped = false;     // flagged samples left out of the statistics
  std::vector<double> kept() const;   // the samples the statistics use
};

struct Result {
  std::string name;
  std::map<std::string, std::string> axes;
  double bytes_per_launch = 0, items_per_launch = 0, flops_per_launch = 0;
  double peak_bytes_per_s = 0;  // the ceiling the benchmark compares itself to (theoretical HBM), 0 if none
  std::string peak_name;
  std::vector<Measurement> measurements;
  std::string skipped;  // reason, when the configuration could not run
};

struct Settings {
  uint32_t warmup_launches = 10;
  double warmup_seconds = 0.05;  // warm up at least this long too (clocks ramp, caches and TLBs fill)
  uint32_t min_samples = 20;
  uint32_t max_samples = 100000;
  double min_seconds = 0.5;      // per mode: average over clock and power-management states, not one instant
  double max_seconds = 2.0;      // per mode and configuration
  double target_rel_ci = 0.005;  // stop once the 95% CI of the median is within ±0.5%
  double batch_target_ms = 2.0;  // launches per batch sample so one sample lasts about this long
  bool cold = true, batch = true, host = false, first_calls = false;
  bool keep_throttled = false;
  double throttle_clock_ratio = 0.95;
  bool pin_cpu = true;  // run the launching thread on one CPU near the GPU: migrations add launch-time noise
  // Configurations take turns sample by sample (all set up at once) instead of running one after the other.
  bool interleave = false;
};

// The ceilings a benchmark may compare itself to, from the device's attributes (0 where unknown).
struct Peaks {
  double dram_bytes_per_s = 0;
  double pcie_bytes_per_s = 0;  // one direction, at the link's maximum generation and width
};

class State {
 public:
  State(const Settings& settings, std::map<std::string, std::string> axes, cudaStream_t stream, int device,
        std::function<void(uint32_t&, uint8_t&)> clock_probe, void* l2_flush_buffer, size_t l2_flush_bytes,
        Peaks peaks);

  [[nodiscard]] const std::string& axis(const std::string& name) const;  // throws bad_input for an unknown axis
  [[nodiscard]] int64_t axis_int(const std::string& name) const;         // accepts 64, 1Ki, 4Mi, 1Gi
  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }
  [[nodiscard]] int device() const noexcept { return device_; }

  void set_bytes_per_launch(double b) { result_.bytes_per_launch = b; }
  void set_items_per_launch(double n) { result_.items_per_launch = n; }
  void set_flops_per_launch(double f) { result_.flops_per_launch = f; }
  void compare_to_dram_peak() {
    result_.peak_bytes_per_s = peaks_.dram_bytes_per_s, result_.peak_name = "theoretical HBM";
  }
  void compare_to_pcie_peak(double directions = 1) {
    result_.peak_bytes_per_s = peaks_.pcie_bytes_per_s * directions, result_.peak_name = "PCIe link";
  }
  // For work that synchronises the host itself (pageable copies): queued behind the blocking kernel it would deadlock
  // until the kernel's timeout, so cold samples only flush the L2 and batch samples run unblocked.
  void no_blocking_kernel() { blockable_ = false; }
  // For benchmarks about cache-resident data (the L2 probe): no cold samples, whose L2 flush would defeat them.
  void warm_cache_only() { warm_only_ = true; }
  void skip(std::string reason) { result_.skipped = std::move(reason); }
  // Also time launches paced by this thread ("host" mode): for benchmarks about the CPU side of launching.
  void also_host_paced() { host_paced_ = true; }

  // Interleaved runs: called after every sample, where the harness hands the GPU to the next configuration; returns
  // the seconds this one waited for its turn, which its time limits and host overhead do not count.
  void between_samples(std::function<double()> f) { between_samples_ = std::move(f); }

  // Times `launch` (which enqueues work on the given stream and must not synchronize) under every enabled mode.
  void exec(const std::function<void(cudaStream_t)>& launch);

  [[nodiscard]] Result take_result() { return std::move(result_); }
  Result& result() { return result_; }

 private:
  struct Sample {
    double ns_per_launch = 0, gpu_s = 0;
    uint32_t sm_clock_mhz = 0;
    uint8_t slowdown = 0;
  };
  // The loop every timed mode shares: take samples, apply the stopping rule, derive overhead, flag throttling.
  void sample_until_stop(Measurement& m, const std::function<Sample()>& take);
  Measurement measure_cold(const std::function<void(cudaStream_t)>& launch);
  Measurement measure_batch(const std::function<void(cudaStream_t)>& launch, bool blocked);
  Measurement measure_first_calls(const std::function<void(cudaStream_t)>& launch);
  void warmup(const std::function<void(cudaStream_t)>& launch);
  void apply_throttle_rule(Measurement& m) const;

  const Settings& settings_;
  cudaStream_t stream_;
  int device_;
  std::function<void(uint32_t&, uint8_t&)> clock_probe_;  // SM MHz and slowdown flag; no-op without NVML
  std::function<double()> between_samples_;
  void* l2_flush_;
  size_t l2_flush_bytes_;
  Peaks peaks_;
  bool host_paced_ = false;
  bool blockable_ = true;
  bool warm_only_ = false;
  Result result_;
};

struct Benchmark {
  std::string name;
  std::string description;
  std::vector<Axis> axes;
  std::function<void(State&)> run;
};

// Suites by name. Built-in: "core"; the probes' suites are src/probes/suites.hpp's. Filled explicitly (no static
// initialisers).
using Suite = std::vector<Benchmark>;
[[nodiscard]] Suite core_suite();

// "64", "1Ki", "4Mi", "1Gi" → bytes (or a plain count); nullopt if not a non-negative integer with such a suffix.
[[nodiscard]] std::optional<int64_t> parse_size(std::string_view v);

// cudaMemcpyAsync device to device over axis `bytes`, read + write counted: the reference in `core` and `probe mem`.
void memcpy_d2d(State& st);

}  // namespace gsq::bench
