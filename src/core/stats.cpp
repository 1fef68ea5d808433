// Percentiles, confidence intervals and the Mann-Whitney test over raw samples.
#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

namespace gsq::stats {

namespace {

std::vector<double> sorted_copy(std::span<const double> s) {
  std::vector<double> v(s.begin(), s.end());
  std::sort(v.begin(), v.end());
  return v;
}

// Inverse of the standard normal CDF (Acklam's rational approximation, |error| < 1.2e-9).
double inverse_normal_cdf(double p) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                                 1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01, -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                 3.754408661907416e+00};
  const double plow = 0.02425;
  if (p < plow) {
    const double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - plow) return -inverse_normal_cdf(1 - p);
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

}  // namespace

double z_for_confidence(double confidence) {
  return inverse_normal_cdf(0.5 + confidence / 2);
}

double percentile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) throw std::invalid_argument("percentile of no samples");
  q = std::clamp(q, 0.0, 1.0);
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double percentile(std::span<const double> samples, double q) {
  const auto v = sorted_copy(samples);
  return percentile_sorted(v, q);
}

Summary summarize(std::span<const double> samples) {
  Summary s;
  s.n = samples.size();
  if (samples.empty()) return s;
  const auto v = sorted_copy(samples);
  s.min = v.front();
  s.max = v.back();
  s.p50 = percentile_sorted(v, 0.50);
  s.p90 = percentile_sorted(v, 0.90);
  s.p99 = percentile_sorted(v, 0.99);
  s.p999 = percentile_sorted(v, 0.999);
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.stdev = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0;
  s.rel_noise = s.mean == 0 ? 0 : s.stdev / s.mean;
  return s;
}

Interval median_ci_order_stats(std::span<const double> sorted, double confidence) {
  const size_t n = sorted.size();
  if (n == 0) throw std::invalid_argument("median CI of no samples");
  const double z = z_for_confidence(confidence);
  const double half = z * std::sqrt(static_cast<double>(n)) / 2;
  const double center = static_cast<double>(n) / 2;
  const auto lo = static_cast<long>(std::floor(center - half));
  const auto hi = static_cast<long>(std::ceil(center + half));
  const auto clamp = [&](long i) { return static_cast<size_t>(std::clamp<long>(i, 0, static_cast<long>(n) - 1)); };
  return {sorted[clamp(lo)], sorted[clamp(hi)]};
}

Interval bootstrap_quantile_ci(std::span<const double> samples, double q, double confidence, int resamples,
                               uint64_t seed) {
  if (samples.empty()) throw std::invalid_argument("bootstrap of no samples");
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, samples.size() - 1);
  std::vector<double> stat(static_cast<size_t>(resamples)), buf(samples.size());
  // percentile_sorted's two order statistics, found without sorting each resample (same values, O(n) not O(n log n)).
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(buf.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const double frac = pos - static_cast<double>(lo);
  for (auto& st : stat) {
    for (auto& x : buf) x = samples[pick(rng)];
    std::nth_element(buf.begin(), buf.begin() + static_cast<long>(lo), buf.end());
    const double at_lo = buf[lo];
    const double at_hi =
        lo + 1 < buf.size() ? *std::min_element(buf.begin() + static_cast<long>(lo) + 1, buf.end()) : at_lo;
    st = at_lo + (at_hi - at_lo) * frac;
  }
  std::sort(stat.begin(), stat.end());
  const double alpha = (1 - confidence) / 2;
  return {percentile_sorted(stat, alpha), percentile_sorted(stat, 1 - alpha)};
}

RatioEstimate bootstrap_median_ratio(std::span<const double> a, std::span<const double> b, double confidence,
                                     int resamples, uint64_t seed) {
  if (a.empty() || b.empty()) throw std::invalid_argument("ratio of no samples");
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pa(0, a.size() - 1), pb(0, b.size() - 1);
  std::vector<double> ra(a.size()), rb(b.size()), ratios(static_cast<size_t>(resamples));
  for (auto& r : ratios) {
    for (auto& x : ra) x = a[pa(rng)];
    for (auto& x : rb) x = b[pb(rng)];
    // nth_element: the median of a resample without a full sort.
    std::nth_element(ra.begin(), ra.begin() + static_cast<long>(ra.size() / 2), ra.end());
    std::nth_element(rb.begin(), rb.begin() + static_cast<long>(rb.size() / 2), rb.end());
    const double ma = ra[ra.size() / 2], mb = rb[rb.size() / 2];
    r = ma == 0 ? 1 : mb / ma;
  }
  std::sort(ratios.begin(), ratios.end());
  const double alpha = (1 - confidence) / 2;
  const double med_a = percentile(a, 0.5), med_b = percentile(b, 0.5);
  return {med_a == 0 ? 1 : med_b / med_a, {percentile_sorted(ratios, alpha), percentile_sorted(ratios, 1 - alpha)}};
}

double mann_whitney_p(std::span<const double> a, std::span<const double> b) {
  const size_t n1 = a.size(), n2 = b.size();
  if (n1 == 0 || n2 == 0) throw std::invalid_argument("Mann-Whitney of no samples");
  std::vector<std::pair<double, int>> all;
  all.reserve(n1 + n2);
  for (double x : a) all.emplace_back(x, 0);
  for (double x : b) all.emplace_back(x, 1);
  std::sort(all.begin(), all.end(), [](const auto& l, const auto& r) { return l.first < r.first; });
  double rank_sum_a = 0, tie_term = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j + 1 < all.size() && all[j + 1].first == all[i].first) ++j;
    const double avg_rank = (static_cast<double>(i + j) / 2) + 1;
    const double t = static_cast<double>(j - i + 1);
    tie_term += t * t * t - t;
    for (size_t k = i; k <= j; ++k)
      if (all[k].second == 0) rank_sum_a += avg_rank;
    i = j + 1;
  }
  const double dn1 = static_cast<double>(n1), dn2 = static_cast<double>(n2), n = dn1 + dn2;
  const double u = rank_sum_a - dn1 * (dn1 + 1) / 2;
  const double mu = dn1 * dn2 / 2;
  const double sigma = std::sqrt(dn1 * dn2 / 12 * ((n + 1) - tie_term / (n * (n - 1))));
  if (sigma == 0) return 1.0;
  const double z = (std::abs(u - mu) - 0.5) / sigma;  // continuity correction
  return std::erfc(std::max(z, 0.0) / std::sqrt(2.0));
}

}  // namespace gsq::stats
