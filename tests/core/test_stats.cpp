// Statistics against known distributions and hand-computed values.
#include "core/stats.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace gsq::stats {
namespace {

std::vector<double> normal(size_t n, double mean, double sd, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(mean, sd);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(Percentile, MatchesNumpyLinearInterpolation) {
  const std::vector<double> v{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_DOUBLE_EQ(percentile(v, 0.5), 5.5);    // numpy.percentile(range(1,11), 50)
  EXPECT_DOUBLE_EQ(percentile(v, 0.9), 9.1);    // 90 → 9.1
  EXPECT_DOUBLE_EQ(percentile(v, 0.99), 9.91);  // 99 → 9.91
  EXPECT_DOUBLE_EQ(percentile(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(v, 1.0), 10.0);
  EXPECT_THROW((void)percentile(std::vector<double>{}, 0.5), std::invalid_argument);
}

TEST(Summary, NormalSampleHasItsMoments) {
  const auto v = normal(200000, 100, 10, 1);
  const auto s = summarize(v);
  EXPECT_NEAR(s.mean, 100, 0.1);
  EXPECT_NEAR(s.stdev, 10, 0.1);
  EXPECT_NEAR(s.p50, 100, 0.15);
  EXPECT_NEAR(s.p90, 100 + 10 * 1.2816, 0.2);
  EXPECT_NEAR(s.p99, 100 + 10 * 2.3263, 0.3);
  EXPECT_NEAR(s.rel_noise, 0.1, 0.002);
}

TEST(Summary, ExponentialTail) {
  std::mt19937_64 rng(3);
  std::exponential_distribution<double> d(1.0);
  std::vector<double> v(200000);
  for (auto& x : v) x = d(rng);
  const auto s = summarize(v);
  EXPECT_NEAR(s.p50, std::log(2.0), 0.01);
  EXPECT_NEAR(s.p99, std::log(100.0), 0.06);
  EXPECT_NEAR(s.p999, std::log(1000.0), 0.25);
}

TEST(ConfidenceLevel, ZValues) {
  EXPECT_NEAR(z_for_confidence(0.95), 1.959964, 1e-5);
  EXPECT_NEAR(z_for_confidence(0.99), 2.575829, 1e-5);
}

// Coverage: over many repeated experiments the 95% interval should hold the true median about 95% of the time.
TEST(MedianCi, OrderStatisticsCoverTheTrueMedian) {
  int covered = 0;
  constexpr int kTrials = 400;
  for (int t = 0; t < kTrials; ++t) {
    auto v = normal(101, 50, 5, 1000 + t);
    std::sort(v.begin(), v.end());
    const auto ci = median_ci_order_stats(v);
    covered += (ci.lo <= 50 && 50 <= ci.hi);
  }
  EXPECT_GE(covered, static_cast<int>(0.92 * kTrials));
  EXPECT_LE(covered, static_cast<int>(0.99 * kTrials));
}

TEST(BootstrapCi, CoversTheTrueP99AndNarrowsWithN) {
  int covered = 0;
  const double true_p99 = 100 + 10 * 2.3263;
  for (int t = 0; t < 100; ++t) {
    const auto v = normal(2000, 100, 10, 5000 + t);
    const auto ci = bootstrap_quantile_ci(v, 0.99, 0.95, 500, t);
    covered += (ci.lo <= true_p99 && true_p99 <= ci.hi);
  }
  EXPECT_GE(covered, 85);
  const auto small = bootstrap_quantile_ci(normal(200, 100, 10, 9), 0.5);
  const auto large = bootstrap_quantile_ci(normal(20000, 100, 10, 9), 0.5);
  EXPECT_LT(large.hi - large.lo, (small.hi - small.lo) / 5);
}

TEST(BootstrapCi, DeterministicForASeed) {
  const auto v = normal(500, 1, 0.1, 4);
  const auto a = bootstrap_quantile_ci(v, 0.5, 0.95, 300, 42), b = bootstrap_quantile_ci(v, 0.5, 0.95, 300, 42);
  EXPECT_EQ(a.lo, b.lo);
  EXPECT_EQ(a.hi, b.hi);
}

TEST(BootstrapCi, EqualsSortingEveryResample) {
  // The reference: the same draws, each resample sorted in full and read with percentile_sorted.
  for (const double q : {0.0, 0.5, 0.9, 0.99, 1.0})
    for (const size_t n : {size_t{1}, size_t{2}, size_t{7}, size_t{501}}) {
      const auto v = normal(n, 10, 3, n + 11);
      std::mt19937_64 rng(7);
      std::uniform_int_distribution<size_t> pick(0, n - 1);
      std::vector<double> stat(200), buf(n);
      for (auto& st : stat) {
        for (auto& x : buf) x = v[pick(rng)];
        std::sort(buf.begin(), buf.end());
        st = percentile_sorted(buf, q);
      }
      std::sort(stat.begin(), stat.end());
      const auto ci = bootstrap_quantile_ci(v, q, 0.9, 200, 7);
      EXPECT_EQ(ci.lo, percentile_sorted(stat, 0.05)) << "q=" << q << " n=" << n;
      EXPECT_EQ(ci.hi, percentile_sorted(stat, 0.95)) << "q=" << q << " n=" << n;
    }
}

TEST(MedianRatio, SameMedianIsOneShiftedDataIsTheShift) {
  const auto a = normal(2000, 100, 2, 11);
  // Other samples with the same median: each mirrored about it, so every value but the middle ones differs.
  const double med = percentile(a, 0.5);
  std::vector<double> mirrored;
  for (double x : a) mirrored.push_back(2 * med - x);
  const auto same = bootstrap_median_ratio(a, mirrored);
  EXPECT_NEAR(same.ratio, 1.0, 1e-12);
  EXPECT_LE(same.ci.lo, 1.0);
  EXPECT_GE(same.ci.hi, 1.0);
  std::vector<double> b = normal(2000, 100, 2, 12);
  for (auto& x : b) x *= 1.10;
  const auto slower = bootstrap_median_ratio(a, b);
  EXPECT_NEAR(slower.ratio, 1.10, 0.005);
  EXPECT_GT(slower.ci.lo, 1.09);
  EXPECT_LT(slower.ci.hi, 1.11);
}

TEST(MannWhitney, DetectsShiftAndNotNoise) {
  const auto a = normal(500, 100, 5, 21), b = normal(500, 100, 5, 22);
  EXPECT_GT(mann_whitney_p(a, b), 0.01);
  auto c = normal(500, 103, 5, 23);  // 0.6 standard deviations
  EXPECT_LT(mann_whitney_p(a, c), 1e-8);
  // All ties: no evidence either way.
  const std::vector<double> t(50, 3.0);
  EXPECT_DOUBLE_EQ(mann_whitney_p(t, t), 1.0);
}

TEST(MannWhitney, SmallExampleMatchesScipy) {
  // scipy.stats.mannwhitneyu([1,2,3,4,5],[6,7,8,9,10], method="asymptotic", use_continuity=True).pvalue = 0.01208...
  const std::vector<double> a{1, 2, 3, 4, 5}, b{6, 7, 8, 9, 10};
  EXPECT_NEAR(mann_whitney_p(a, b), 0.012185, 1e-4);
}

}  // namespace
}  // namespace gsq::stats
