// Comparing two bench runs: pairs configurations, bootstraps the ratio of medians, and gives a verdict per pair.
#pragma once

#include "bench/runner.hpp"
#include "core/stats.hpp"
#include "env/fingerprint.hpp"

#include <set>
#include <string>
#include <vector>

namespace gsq::bench {

enum class Verdict { faster, slower, same, uncertain };
[[nodiscard]] std::string_view to_string(Verdict v) noexcept;

struct CompareOptions {
  double min_effect = 0.02;  // ratios within ±2% are SAME; beyond it with the CI clear of the band, FASTER/SLOWER
  double confidence = 0.95;
  std::set<std::string> ignore_axes;  // pair configurations that differ only in these axes (an A/B of a parameter)
};

struct Comparison {
  std::string label, mode;
  double base_p50_ns = 0, new_p50_ns = 0;
  double ratio = 1;  // new / base of the median time: > 1 is slower
  stats::Interval ci;
  double p_value = 1;  // Mann-Whitney U, two-sided
  Verdict verdict = Verdict::uncertain;
  size_t base_n = 0, new_n = 0;
};

struct CompareReport {
  std::vector<Comparison> rows;
  std::vector<env::Drift> env_drift;  // locked fields that differ between the two runs
  std::vector<std::string> only_in_base, only_in_new;
  [[nodiscard]] bool regression() const;
};

[[nodiscard]] Verdict decide(const stats::Interval& ratio_ci, double min_effect);
[[nodiscard]] CompareReport compare_runs(const Run& base, const Run& next, const CompareOptions& o);

}  // namespace gsq::bench
