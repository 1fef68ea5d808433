// Runs a suite: expands axes into configurations, checks the GPU is idle, and times each configuration.
#pragma once

#include "bench/benchmark.hpp"
#include "core/table.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace gsq::bench {

inline constexpr const char* kBenchSchema = "gpusqueeze.bench/1";

struct RunOptions {
  Settings settings;
  std::string filter;                                         // regex on benchmark names; empty = all
  std::map<std::string, std::vector<std::string>> overrides;  // -a name=v1,v2
  std::string set = "default";                                // default | stress | boundary | warmup
  bool allow_busy = false;
  // The GPU's utilisation is this process's own work a moment ago (the report's previous section; NVML's figure lags):
  // only other processes on the GPU count as busy.
  bool own_utilization = false;
  int device = 0;  // CUDA ordinal
  std::function<void(const std::string&)> progress;
};

struct Run {
  std::string suite, created_at, tool_version;
  std::string gpu_name, gpu_uuid;
  std::string fingerprint;  // env fingerprint, "unavailable" without NVML
  std::map<std::string, std::string> env_fields;
  Settings settings;
  std::string set;
  int pinned_cpu = -1;          // the CPU the launching thread ran on, -1 if not pinned
  uint64_t l2_cache_bytes = 0;  // of the GPU the run used
  std::vector<Result> results;
};

// Cartesian product of the axes after overrides; the boundary set keeps each axis's first and last value.
// Throws bad_input for an override naming an axis no selected benchmark has.
[[nodiscard]] std::vector<std::map<std::string, std::string>> expand_axes(
    const std::vector<Axis>& axes, const std::map<std::string, std::vector<std::string>>& overrides, bool boundary);

// Applies the sample-set presets to the settings (stress: ≥ 1000 samples for P99; warmup: first calls only).
void apply_set(const std::string& set, Settings& s);

[[nodiscard]] Run run_suite(const std::string& suite_name, const Suite& suite, const RunOptions& options);

[[nodiscard]] nlohmann::json to_json(const Run& run, bool with_samples);
[[nodiscard]] Run run_from_json(const nlohmann::json& j, const std::string& origin);  // throws bad_input
[[nodiscard]] Run load_run(const std::filesystem::path& file);

// Derived statistics of a measurement, as printed and written.
struct Derived {
  size_t n = 0, dropped = 0;
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0, min = 0, max = 0, mean = 0, stdev = 0, rel_noise = 0;
  double p50_lo = 0, p50_hi = 0, p99_lo = 0, p99_hi = 0;
  double bytes_per_s = 0, items_per_s = 0, flops_per_s = 0, pct_of_peak = 0;
};
[[nodiscard]] Derived derive(const Result& r, const Measurement& m);

[[nodiscard]] Table results_table(const Run& run);  // the rows every human printer shows
[[nodiscard]] std::string render_markdown(const Run& run);
// Per benchmark: its best throughput (over sizes, widths and modes) next to its ceiling; for the memory probe also
// mem.copy against cudaMemcpy at the largest size both ran. Empty when nothing declares bytes.
[[nodiscard]] Table ceilings_table(const Run& run);

struct Ceiling {
  std::string name, where, peak_name;
  double bytes_per_s = 0, peak_bytes_per_s = 0;
};
// The rows of ceilings_table as data: best throughput per benchmark (L2-resident runs apart), with its ceiling.
[[nodiscard]] std::vector<Ceiling> ceilings(const Run& run);
[[nodiscard]] std::string render_csv(const Run& run);
[[nodiscard]] std::string config_label(const Result& r);  // "copy.kernel[bytes=1Gi,grid_fraction=1]"

}  // namespace gsq::bench
