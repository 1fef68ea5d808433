// Axis expansion, sample sets, and the bench JSON round trip (CPU only: no benchmark runs here).
#include "bench/runner.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace gsq::bench {
namespace {

TEST(Axes, CartesianProductInOrder) {
  const auto c = expand_axes({{"bytes", {"1Mi", "64Mi", "1Gi"}}, {"dtype", {"bf16", "fp16"}}}, {}, false);
  ASSERT_EQ(c.size(), 6u);
  EXPECT_EQ(c[0].at("bytes"), "1Mi");
  EXPECT_EQ(c[0].at("dtype"), "bf16");
  EXPECT_EQ(c[1].at("dtype"), "fp16");
  EXPECT_EQ(c[5].at("bytes"), "1Gi");
}

TEST(Axes, OverridesReplaceValues) {
  const auto c = expand_axes({{"bytes", {"1Mi", "64Mi"}}, {"graph", {"no", "yes"}}}, {{"graph", {"yes"}}}, false);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].at("graph"), "yes");
}

TEST(Axes, BoundarySetKeepsSmallestAndLargest) {
  const auto c = expand_axes({{"bytes", {"1Mi", "64Mi", "1Gi"}}, {"graph", {"no"}}}, {}, true);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].at("bytes"), "1Mi");
  EXPECT_EQ(c[1].at("bytes"), "1Gi");
}

TEST(Sets, StressGuaranteesAThousandSamples) {
  Settings s;
  apply_set("stress", s);
  EXPECT_GE(s.min_samples, 1000u);
  Settings w;
  apply_set("warmup", w);
  EXPECT_TRUE(w.first_calls);
  EXPECT_FALSE(w.cold);
  EXPECT_THROW(apply_set("nightly", w), Error);
}

bench::Run sample_run() {
  bench::Run r;
  r.suite = "core";
  r.created_at = "2026-12-02T00:00:00Z";
  r.gpu_name = "NVIDIA H200";
  r.fingerprint = "679f812531449fe7";
  r.env_fields = {{"host.driver_version", "580.159.04"}};
  Result res;
  res.name = "copy.memcpy_d2d";
  res.axes = {{"bytes", "1Gi"}};
  res.bytes_per_launch = 2.0 * (1 << 30);
  res.peak_bytes_per_s = 4.8e12;
  res.peak_name = "theoretical HBM";
  Measurement m;
  m.mode = "cold";
  m.samples_ns = {500000, 501000, 499000, 502000};
  m.throttled = {0, 0, 0, 1};
  m.sm_clock_mhz = {1980, 1980, 1980, 1500};
  m.throttled_dropped = true;
  m.stop_reason = "converged";
  res.measurements.push_back(m);
  r.results.push_back(res);
  return r;
}

TEST(BenchJson, RoundTripKeepsRawSamples) {
  const bench::Run r = sample_run();
  const bench::Run back = run_from_json(parse_json_text(to_json(r, true).dump(), "x", kBenchSchema), "x");
  ASSERT_EQ(back.results.size(), 1u);
  EXPECT_EQ(back.results[0].measurements[0].samples_ns, r.results[0].measurements[0].samples_ns);
  EXPECT_EQ(back.results[0].measurements[0].throttled, r.results[0].measurements[0].throttled);
  EXPECT_EQ(back.env_fields, r.env_fields);
  EXPECT_EQ(to_json(back, true), to_json(r, true));
}

TEST(BenchJson, DerivedFiguresUseKeptSamples) {
  const bench::Run r = sample_run();
  const Derived d = derive(r.results[0], r.results[0].measurements[0]);
  EXPECT_EQ(d.n, 3u);
  EXPECT_EQ(d.dropped, 1u);
  EXPECT_DOUBLE_EQ(d.p50, 500000);
  EXPECT_NEAR(d.bytes_per_s, 2.0 * (1 << 30) / 500e-6, 1);
  EXPECT_NEAR(d.pct_of_peak, 100 * d.bytes_per_s / 4.8e12, 1e-9);
}

TEST(BenchJson, BadFilesAreBadInput) {
  auto j = to_json(sample_run(), true);
  j["results"][0]["measurements"][0]["throttled"] = {0};
  EXPECT_THROW((void)run_from_json(j, "x"), Error);
  auto k = to_json(sample_run(), true);
  k["results"][0].erase("axes");
  EXPECT_THROW((void)run_from_json(k, "x"), Error);
}

TEST(Output, MarkdownAndCsvNameTheConfiguration) {
  const bench::Run r = sample_run();
  EXPECT_NE(render_markdown(r).find("copy.memcpy_d2d[bytes=1Gi]"), std::string::npos);
  EXPECT_NE(render_markdown(r).find("-1 throttled"), std::string::npos);
  EXPECT_NE(render_csv(r).find("\"copy.memcpy_d2d[bytes=1Gi]\",cold"), std::string::npos);
}

}  // namespace
}  // namespace gsq::bench

namespace gsq::bench {
namespace {

TEST(Ceilings, RecordedD2dRunAgainstTheoreticalHbm) {
  const bench::Run run = load_run(std::filesystem::path(GSQ_FIXTURE_DIR) / "h200-bench-d2d.json");
  const Table t = ceilings_table(run);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0][0], "copy.memcpy_d2d");
  EXPECT_EQ(t.rows[0][4], "88.3%");  // 4252 GB/s of 4814 GB/s, recorded on the H200
}

TEST(Ceilings, CopyAgainstCudaMemcpyTakesTheBestVariantAtEachSize) {
  // `probe mem` at 4 GiB on the H200 (bench/results/2026-12-03-h200-probes-flat): five copy variants and cudaMemcpy.
  const bench::Run run = load_run(std::filesystem::path(GSQ_FIXTURE_DIR) / "h200-probe-copy-4g.json");
  const Table t = ceilings_table(run);
  const auto row =
      std::find_if(t.rows.begin(), t.rows.end(), [](const auto& r) { return r[0] == "mem.copy / cudaMemcpy"; });
  ASSERT_NE(row, t.rows.end());
  EXPECT_EQ((*row)[1], "0.9993×");  // flat 4276.4 GB/s against cudaMemcpy 4279.5 GB/s, cold
  EXPECT_EQ((*row)[2], "bytes=4Gi, width=16, variant=flat, cold") << "not the first variant listed, the fastest";
}

TEST(Ceilings, InterleavedRunSaysSo) {
  // `probe mem ... -a bytes=1Gi,4Gi --interleave` on the H200 (bench/results/2026-12-04-h200-interleave, round 1).
  const bench::Run run = load_run(std::filesystem::path(GSQ_FIXTURE_DIR) / "h200-probe-copy-interleaved.json");
  EXPECT_TRUE(run.settings.interleave);
  const Table t = ceilings_table(run);
  const auto row =
      std::find_if(t.rows.begin(), t.rows.end(), [](const auto& r) { return r[0] == "mem.copy / cudaMemcpy"; });
  ASSERT_NE(row, t.rows.end());
  // One row a size, smallest first: the verdict differs between them on this card.
  EXPECT_EQ((*row)[1], "1.0015×");  // flat 4289.8 GB/s against cudaMemcpy 4283.5 GB/s at 1 GiB, cold
  EXPECT_EQ((*row)[2], "bytes=1Gi, width=16, variant=flat, cold, interleaved");
  ASSERT_NE(row + 1, t.rows.end());
  EXPECT_EQ(row[1][0], "mem.copy / cudaMemcpy");
  EXPECT_EQ(row[1][1], "0.9978×");  // flat 4295.5 GB/s against cudaMemcpy 4304.7 GB/s at 4 GiB, cold
  EXPECT_EQ(row[1][2], "bytes=4Gi, width=16, variant=flat, cold, interleaved");
  EXPECT_FALSE(load_run(std::filesystem::path(GSQ_FIXTURE_DIR) / "h200-probe-copy-4g.json").settings.interleave);
}

TEST(Ceilings, L2ResidentBatchRunsAreNotCalledHbm) {
  bench::Run r = sample_run();
  r.l2_cache_bytes = 60u << 20;
  r.results[0].bytes_per_launch = 32u << 20;  // fits the L2
  r.results[0].measurements[0].mode = "batch";
  const Table t = ceilings_table(r);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0][0], "copy.memcpy_d2d (L2-resident)");
  EXPECT_EQ(t.rows[0][3], "");
}

}  // namespace
}  // namespace gsq::bench
