// compare verdicts on synthetic sample sets (same → SAME, shifted → SLOWER with the right ratio), pairing, env drift.
#include "bench/compare.hpp"

#include "core/error.hpp"

#include <gtest/gtest.h>

#include <random>

namespace gsq::bench {
namespace {

Measurement samples(double center, double sd, size_t n, uint64_t seed, const std::string& mode = "cold") {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(center, sd);
  Measurement m;
  m.mode = mode;
  for (size_t i = 0; i < n; ++i) {
    m.samples_ns.push_back(d(rng));
    m.throttled.push_back(0);
  }
  return m;
}

bench::Run run_with(std::vector<Result> results) {
  bench::Run r;
  r.suite = "core";
  r.gpu_name = "test";
  r.fingerprint = "f";
  r.results = std::move(results);
  return r;
}

Result result(const std::string& name, std::map<std::string, std::string> axes, Measurement m) {
  Result r;
  r.name = name;
  r.axes = std::move(axes);
  r.measurements.push_back(std::move(m));
  return r;
}

TEST(Decide, BandsAroundOne) {
  EXPECT_EQ(decide({1.03, 1.05}, 0.02), Verdict::slower);
  EXPECT_EQ(decide({0.90, 0.95}, 0.02), Verdict::faster);
  EXPECT_EQ(decide({0.995, 1.01}, 0.02), Verdict::same);
  EXPECT_EQ(decide({0.99, 1.04}, 0.02), Verdict::uncertain);
}

TEST(Compare, SameDataIsSame) {
  const auto a = run_with({result("copy", {{"bytes", "1Gi"}}, samples(500000, 1000, 500, 1))});
  const auto b = run_with({result("copy", {{"bytes", "1Gi"}}, samples(500000, 1000, 500, 2))});
  const auto rep = compare_runs(a, b, {});
  ASSERT_EQ(rep.rows.size(), 1u);
  EXPECT_EQ(rep.rows[0].verdict, Verdict::same);
  EXPECT_FALSE(rep.regression());
}

TEST(Compare, ShiftedDataIsSlowerWithTheRatio) {
  const auto a = run_with({result("copy", {{"bytes", "1Gi"}}, samples(500000, 1000, 500, 1))});
  const auto b = run_with({result("copy", {{"bytes", "1Gi"}}, samples(600000, 1200, 500, 2))});
  const auto rep = compare_runs(a, b, {});
  ASSERT_EQ(rep.rows.size(), 1u);
  EXPECT_EQ(rep.rows[0].verdict, Verdict::slower);
  EXPECT_NEAR(rep.rows[0].ratio, 1.2, 0.003);
  EXPECT_LT(rep.rows[0].p_value, 1e-10);
  EXPECT_TRUE(rep.regression());
  EXPECT_EQ(compare_runs(b, a, {}).rows[0].verdict, Verdict::faster);
}

TEST(Compare, NoisyOverlapIsUncertain) {
  const auto a = run_with({result("k", {}, samples(1000, 200, 20, 1))});
  const auto b = run_with({result("k", {}, samples(1030, 200, 20, 2))});
  EXPECT_EQ(compare_runs(a, b, {}).rows[0].verdict, Verdict::uncertain);
}

TEST(Compare, PairsByAxesAndModeAndReportsUnmatched) {
  const auto a = run_with({result("copy", {{"bytes", "1Mi"}}, samples(100, 1, 100, 1)),
                           result("copy", {{"bytes", "1Gi"}}, samples(500, 1, 100, 2))});
  const auto b = run_with(
      {result("copy", {{"bytes", "1Gi"}}, samples(500, 1, 100, 3)), result("gemm", {}, samples(9, 1, 100, 4))});
  const auto rep = compare_runs(a, b, {});
  ASSERT_EQ(rep.rows.size(), 1u);
  EXPECT_EQ(rep.rows[0].label, "copy[bytes=1Gi]");
  EXPECT_EQ(rep.only_in_base, std::vector<std::string>{"copy[bytes=1Mi] cold"});
  EXPECT_EQ(rep.only_in_new, std::vector<std::string>{"gemm cold"});
}

TEST(Compare, IgnoredAxisPairsAParameterAB) {
  const auto a = run_with({result("copy.kernel", {{"grid_fraction", "1"}}, samples(500, 1, 100, 1))});
  const auto b = run_with({result("copy.kernel", {{"grid_fraction", "0.5"}}, samples(700, 1, 100, 2))});
  EXPECT_TRUE(compare_runs(a, b, {}).rows.empty());
  CompareOptions o;
  o.ignore_axes = {"grid_fraction"};
  const auto rep = compare_runs(a, b, o);
  ASSERT_EQ(rep.rows.size(), 1u);
  EXPECT_EQ(rep.rows[0].verdict, Verdict::slower);
}

TEST(Compare, ThrottledSamplesStayOutWhenDropped) {
  Measurement m = samples(500, 1, 100, 1);
  for (size_t i = 0; i < 10; ++i) {
    m.samples_ns[i] = 5000;
    m.throttled[i] = 1;
  }
  m.throttled_dropped = true;
  const auto a = run_with({result("k", {}, m)});
  const auto b = run_with({result("k", {}, samples(500, 1, 100, 2))});
  const auto rep = compare_runs(a, b, {});
  EXPECT_EQ(rep.rows[0].base_n, 90u);
  EXPECT_EQ(rep.rows[0].verdict, Verdict::same);
}

TEST(Compare, EnvDriftIsListed) {
  auto a = run_with({result("k", {}, samples(500, 1, 100, 1))});
  auto b = a;
  a.env_fields = {{"host.driver_version", "580.159.04"}};
  b.env_fields = {{"host.driver_version", "580.200.01"}};
  const auto rep = compare_runs(a, b, {});
  ASSERT_EQ(rep.env_drift.size(), 1u);
  EXPECT_EQ(rep.env_drift[0].field, "host.driver_version");
}

TEST(Compare, MissingRawSamplesIsBadInput) {
  Measurement empty;
  empty.mode = "cold";
  const auto a = run_with({result("k", {}, empty)});
  EXPECT_THROW((void)compare_runs(a, a, {}), Error);
}

}  // namespace
}  // namespace gsq::bench

namespace gsq::bench {
namespace {

TEST(Compare, TimerStepsAreNotAChange) {
  // Cold samples of a 2.7 µs kernel come in 32 ns steps; medians two steps apart must not be called FASTER.
  Measurement a, b;
  a.mode = b.mode = "cold";
  for (int i = 0; i < 400; ++i) {
    a.samples_ns.push_back(2720 + 32 * (i % 3 == 0));
    b.samples_ns.push_back(2656 + 32 * (i % 3 == 0));
    a.throttled.push_back(0);
    b.throttled.push_back(0);
  }
  const auto rep = compare_runs(run_with({result("k", {}, a)}), run_with({result("k", {}, b)}), {});
  ASSERT_EQ(rep.rows.size(), 1u);
  EXPECT_NEAR(rep.rows[0].ratio, 2656.0 / 2720.0, 1e-9);
  EXPECT_EQ(rep.rows[0].verdict, Verdict::uncertain);
}

}  // namespace
}  // namespace gsq::bench
