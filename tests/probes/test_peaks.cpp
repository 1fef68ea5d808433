// Byte accounting and peak formulas of the probes (CPU), checked against the H200 figures from its own attributes.
#include "gpu/peaks.hpp"
#include "probes/host_probes.hpp"
#include "probes/probe_kernels.hpp"
#include "support/fixtures.hpp"

#include <gtest/gtest.h>

namespace gsq {
namespace {

TEST(Peaks, HbmFromTheRecordedH200) {
  const auto s = gpu::load_snapshot(test::fixture("h200-snapshot.json"));
  const auto& g = s.gpus.at(0);
  // 3201 MHz × 2 × 6016 bit / 8 = 4814.304 GB/s
  EXPECT_NEAR(gpu::dram_peak_bytes_per_s(*g.mem_clock_max_mhz, *g.memory_bus_width_bits) / 1e9, 4814.304, 1e-6);
}

TEST(Peaks, PcieGenerationsAndWidths) {
  EXPECT_NEAR(gpu::pcie_peak_bytes_per_s(5, 16) / 1e9, 63.015, 0.001);
  EXPECT_NEAR(gpu::pcie_peak_bytes_per_s(4, 16) / 1e9, 31.508, 0.001);
  EXPECT_NEAR(gpu::pcie_peak_bytes_per_s(3, 16) / 1e9, 15.754, 0.001);
  EXPECT_NEAR(gpu::pcie_peak_bytes_per_s(5, 8) / 1e9, 31.508, 0.001);
  EXPECT_NEAR(gpu::pcie_peak_bytes_per_s(1, 1) / 1e9, 0.25, 1e-9);
  EXPECT_EQ(gpu::pcie_peak_bytes_per_s(9, 16), 0);
}

TEST(ByteAccounting, BabelStreamCounts) {
  using probes::MemOp;
  EXPECT_EQ(probes::bytes_moved(MemOp::read, 1000, 16), 16000);
  EXPECT_EQ(probes::bytes_moved(MemOp::write, 1000, 16), 16000);
  EXPECT_EQ(probes::bytes_moved(MemOp::copy, 1000, 16), 32000);
  EXPECT_EQ(probes::bytes_moved(MemOp::triad, 1000, 4), 12000);
}

// The summaries' arithmetic on hand-made results (the device run's JSON is what users see; this pins the rules).
bench::Result timed(const std::string& name, std::map<std::string, std::string> axes, double bytes, double ns) {
  bench::Result r;
  r.name = name;
  r.axes = std::move(axes);
  r.bytes_per_launch = bytes;
  bench::Measurement m;
  m.mode = "batch";
  m.samples_ns = {ns, ns, ns};
  m.throttled = {0, 0, 0};
  r.measurements.push_back(m);
  return r;
}

TEST(ProbeSummaries, L2TransitionIsTheLastSizeAboveHalfwayFromThePlateauToHbm) {
  bench::Run run;
  // bytes/s = bytes / ns * 1e9: 10 TB/s up to 32 MiB, 6.5 TB/s at 48 MiB (below the 7 TB/s midpoint), 4 TB/s beyond.
  const std::vector<std::pair<const char*, double>> sweep{{"2Mi", 2e12},    {"8Mi", 10e12}, {"32Mi", 10e12},
                                                          {"48Mi", 6.5e12}, {"64Mi", 4e12}, {"1Gi", 4e12}};
  for (const auto& [size, bw] : sweep) {
    const double bytes = static_cast<double>(*bench::parse_size(size));
    run.results.push_back(timed("l2.read", {{"bytes", size}}, bytes, bytes / bw * 1e9));
  }
  const auto t = probes::l2_transition(run);
  ASSERT_TRUE(t.has_value());
  EXPECT_NEAR(t->l2_bytes_per_s, 10e12, 1e3);
  EXPECT_NEAR(t->hbm_bytes_per_s, 4e12, 1e3);
  EXPECT_EQ(t->last_l2_size, 32 << 20);
  EXPECT_EQ(t->first_hbm_size, 48 << 20);
  // HBM close to the L2's rate (an H200: 4.6 of 5.5 TB/s, bench/results/2026-12-03-h200-probes-flat/l2.json) still
  // gives the edge at the plateau's end, not at the largest size.
  bench::Run close;
  for (const auto& [size, bw] : std::vector<std::pair<const char*, double>>{
           {"8Mi", 2.7e12}, {"40Mi", 5.5e12}, {"48Mi", 4.8e12}, {"64Mi", 4.6e12}, {"1Gi", 4.6e12}}) {
    const double bytes = static_cast<double>(*bench::parse_size(size));
    close.results.push_back(timed("l2.read", {{"bytes", size}}, bytes, bytes / bw * 1e9));
  }
  const auto c = probes::l2_transition(close);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->last_l2_size, 40 << 20);
  EXPECT_EQ(c->first_hbm_size, 48 << 20);
  run.results.resize(2);  // 2 and 8 MiB
  EXPECT_FALSE(probes::l2_transition(run).has_value()) << "two sizes are no sweep";
}

TEST(ProbeSummaries, OverlapSpeedupIsSerialOverStreamsPerMemoryKind) {
  bench::Run run;
  run.results.push_back(timed("overlap.copy_compute", {{"schedule", "serial"}, {"memory", "pinned"}}, 1, 9e6));
  run.results.push_back(timed("overlap.copy_compute", {{"schedule", "streams"}, {"memory", "pinned"}}, 1, 4.5e6));
  run.results.push_back(timed("overlap.copy_compute", {{"schedule", "serial"}, {"memory", "pageable"}}, 1, 20e6));
  const auto s = probes::overlap_speedups(run);
  ASSERT_EQ(s.size(), 1u) << "pageable has no streams run";
  EXPECT_EQ(s[0].first, "pinned");
  EXPECT_DOUBLE_EQ(s[0].second, 2.0);
}

TEST(ProbeSummaries, SizesParseWithBinarySuffixes) {
  EXPECT_EQ(bench::parse_size("4Ki"), 4096);
  EXPECT_EQ(bench::parse_size("1Gi"), int64_t{1} << 30);
  EXPECT_EQ(bench::parse_size("77"), 77);
  EXPECT_FALSE(bench::parse_size("4KB").has_value());
  EXPECT_FALSE(bench::parse_size("-1").has_value());
  EXPECT_FALSE(bench::parse_size("").has_value());
}

TEST(ProbeSummaries, RecordedH200SweepsShowTheL2EdgeAndThePipeliningGain) {
  // bench/device/probes.sh on the H200 (bench/results/2026-12-02-h200-probes-2).
  const auto l2 = probes::l2_transition(bench::load_run(test::fixture("h200-probe-l2.json")));
  ASSERT_TRUE(l2.has_value());
  EXPECT_EQ(l2->last_l2_size, 40 << 20);    // 5.9 TB/s at 40 MiB of the 60 MiB L2
  EXPECT_EQ(l2->first_hbm_size, 48 << 20);  // 4.6 TB/s at 48 MiB
  EXPECT_GT(l2->l2_bytes_per_s, l2->hbm_bytes_per_s);
  // A later call (bench/results/2026-12-03-h200-probes-flat): plateau 5.5 TB/s, HBM 4.6 TB/s at 1 GiB, 83% of it.
  const auto l2b = probes::l2_transition(bench::load_run(test::fixture("h200-probe-l2-2.json")));
  ASSERT_TRUE(l2b.has_value());
  EXPECT_EQ(l2b->last_l2_size, 40 << 20);
  EXPECT_EQ(l2b->first_hbm_size, 48 << 20);
  const auto ov = probes::overlap_speedups(bench::load_run(test::fixture("h200-probe-overlap.json")));
  ASSERT_EQ(ov.size(), 2u);
  EXPECT_EQ(ov[0].first, "pageable");
  EXPECT_EQ(ov[1].first, "pinned");
  EXPECT_GT(ov[1].second, ov[0].second) << "pinned memory pipelines, pageable barely does";
}

}  // namespace
}  // namespace gsq
