// Statistics over raw samples: percentiles, distribution-free and bootstrap confidence intervals, two-sample tests.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace gsq::stats {

struct Summary {
  size_t n = 0;
  double min = 0, p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0, mean = 0, stdev = 0;
  double rel_noise = 0;  // stdev / mean
};

struct Interval {
  double lo = 0, hi = 0;
  [[nodiscard]] double rel_half_width(double center) const { return center == 0 ? 0 : (hi - lo) / (2 * center); }
};

// Linear interpolation between order statistics (Hyndman–Fan type 7, numpy's default). q in [0, 1].
[[nodiscard]] double percentile_sorted(std::span<const double> sorted, double q);
[[nodiscard]] double percentile(std::span<const double> samples, double q);
[[nodiscard]] Summary summarize(std::span<const double> samples);

// Distribution-free CI of the median from binomial order statistics (normal approximation to the ranks); cheap enough
// to evaluate after every sample in a stopping rule.
[[nodiscard]] Interval median_ci_order_stats(std::span<const double> sorted, double confidence = 0.95);

// Percentile bootstrap of a quantile, deterministic for a seed.
[[nodiscard]] Interval bootstrap_quantile_ci(std::span<const double> samples, double q, double confidence = 0.95,
                                             int resamples = 2000, uint64_t seed = 0x5eed);

// Bootstrap CI of median(b) / median(a), resampling each side independently; also the point ratio.
struct RatioEstimate {
  double ratio = 1;
  Interval ci;
};
[[nodiscard]] RatioEstimate bootstrap_median_ratio(std::span<const double> a, std::span<const double> b,
                                                   double confidence = 0.95, int resamples = 2000,
                                                   uint64_t seed = 0x5eed);

// Two-sided Mann-Whitney U test with tie correction (normal approximation); returns the p-value.
[[nodiscard]] double mann_whitney_p(std::span<const double> a, std::span<const double> b);

// z for a two-sided confidence level (0.95 → 1.95996).
[[nodiscard]] double z_for_confidence(double confidence);

}  // namespace gsq::stats
