// Thermal and power jitter: NVML readings sampled while a workload ran (the counter tracks of a .gsqt file, as
// `gpusqueeze jitter` or `trace --gpu-metrics` record them) turned into the fraction of time each clock-event reason
// held the clock down, the clock's spread while busy, the temperature trend and margins; and, for a bench run, whether
// its P99 outliers are the throttled samples. Thresholds are fractions of time, never "any non-zero".
#pragma once

#include "core/finding.hpp"
#include "trace/format.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gsq::triage {

inline constexpr const char* kJitterSchema = "gpusqueeze.jitter/1";

struct ReasonShare {
  std::string reason;   // clock-event reason name (gpu/clock_events.hpp)
  double fraction = 0;  // of the sampled time
  std::string source;   // "counter" (NVML's cumulative ns) or "bitmask" (the reasons seen at each sample)
};

struct GpuJitter {
  uint32_t device = 0;
  std::string name;
  double duration_s = 0;
  size_t samples = 0, busy_samples = 0;  // busy: the gpu_idle reason not set
  std::optional<double> sm_clock_min_mhz, sm_clock_p5_mhz, sm_clock_p50_mhz, sm_clock_max_mhz;  // busy samples
  std::optional<double> mem_clock_min_mhz, mem_clock_max_mhz;
  std::optional<double> temperature_start_c, temperature_end_c, temperature_max_c, temperature_slope_c_per_min;
  std::optional<double> temperature_slowdown_c, memory_temperature_max_c, memory_temperature_limit_c;
  std::optional<double> power_mean_w, power_max_w, power_limit_w;
  std::vector<ReasonShare> reasons;  // every reason seen, largest share first
};

struct JitterReport {
  std::string origin;
  std::vector<GpuJitter> gpus;
  std::vector<Finding> findings;
};

// Writes a recording as a .gsqt file of counter tracks only: a header on the monotonic clock (no CUPTI records), the
// end chunk, then one counters chunk per GPU (`payloads`: CounterSampler::finish() of each). Throws Error(bad_input)
// when the file cannot be written.
void write_jitter_trace(const std::filesystem::path& file, const std::string& command, int64_t start_monotonic_ns,
                        int64_t start_realtime_ns, int exit_code, const std::vector<nlohmann::json>& payloads);

// The GPUs' counter tracks of a trace file → the report. GPUs without clock or temperature tracks are left out.
[[nodiscard]] JitterReport analyze_jitter(const trace::TraceFile& t);
[[nodiscard]] nlohmann::json to_json(const JitterReport& r);

// A bench run (gpusqueeze.bench/1) with raw samples: per measurement, whether the samples above its P99 carry the
// throttle flag or a low SM clock more often than the rest.
struct OutlierCoincidence {
  std::string config, mode;
  size_t samples = 0, outliers = 0;
  double p99_ns = 0;
  double throttled_among_outliers = 0, throttled_overall = 0;  // fractions flagged (reason or clock < 95% of max)
};
struct BenchJitter {
  std::vector<OutlierCoincidence> rows;
  std::vector<Finding> findings;
};
[[nodiscard]] BenchJitter bench_outliers(const nlohmann::json& bench_run);

}  // namespace gsq::triage
