// Jitter on NVML readings recorded on an H200 beside real workloads (tests/fixtures/h200-hw-*.gsqt, 100 ms samples),
// on copies of them with throttle intervals injected (EDITED, marked where made), and on a recorded bench run.
#include "triage/jitter.hpp"

#include "core/json_io.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <sstream>

namespace gsq::triage {
namespace {

const trace::CounterTrack* track(const trace::TraceFile& t, const std::string& name) {
  for (const auto& c : t.counters)
    if (c.name == name) return &c;
  return nullptr;
}

bool has(const std::vector<Finding>& f, const std::string& id) {
  for (const auto& x : f)
    if (x.id == id) return true;
  return false;
}

double reason(const GpuJitter& g, const std::string& name) {
  for (const auto& r : g.reasons)
    if (r.reason == name) return r.fraction;
  return 0;
}

TEST(Jitter, TheRecordedGemmWasPowerCappedForTheShareItsReasonsSay) {
  const auto t = trace::read_trace(std::string(GSQ_FIXTURE_DIR) + "/h200-hw-matmul.gsqt");
  const auto r = analyze_jitter(t);
  ASSERT_EQ(r.gpus.size(), 1u);
  // The share recomputed here: each sample's mask stands for the interval ending at it; bit 0x4 = SW power cap.
  const auto* mask = track(t, "clock_event_reasons");
  ASSERT_NE(mask, nullptr);
  double capped = 0;
  for (size_t i = 1; i < mask->t_ns.size(); ++i)
    if (static_cast<uint64_t>(mask->values[i]) & 0x4) capped += static_cast<double>(mask->t_ns[i] - mask->t_ns[i - 1]);
  capped /= static_cast<double>(mask->t_ns.back() - mask->t_ns.front());
  EXPECT_NEAR(reason(r.gpus[0], "sw_power_cap"), capped, 1e-12);
  EXPECT_GT(capped, 0.5);
  EXPECT_TRUE(has(r.findings, "power-capped"));
  EXPECT_FALSE(has(r.findings, "thermal-slowdown"));
  EXPECT_LT(*r.gpus[0].sm_clock_p5_mhz, *r.gpus[0].sm_clock_max_mhz);
}

TEST(Jitter, AFewBlocksWorkloadAtFullClockRaisesNothing) {
  const auto r = analyze_jitter(trace::read_trace(std::string(GSQ_FIXTURE_DIR) + "/h200-hw-fewblocks.gsqt"));
  ASSERT_EQ(r.gpus.size(), 1u);
  EXPECT_TRUE(r.findings.empty());
  EXPECT_DOUBLE_EQ(*r.gpus[0].sm_clock_min_mhz, *r.gpus[0].sm_clock_max_mhz);
  EXPECT_FALSE(r.gpus[0].temperature_slope_c_per_min.has_value());  // 3 s: too short for a trend
}

TEST(Jitter, InjectedThermalIntervalGivesItsHandComputedShare) {
  auto t = trace::read_trace(std::string(GSQ_FIXTURE_DIR) + "/h200-hw-fewblocks.gsqt");
  trace::CounterTrack* mask = nullptr;
  for (auto& c : t.counters)
    if (c.name == "clock_event_reasons") mask = &c;
  ASSERT_NE(mask, nullptr);
  ASSERT_GE(mask->values.size(), 21u);
  // EDITED: SW thermal slowdown (0x20) set on samples 11..20, i.e. the ten intervals ending at them.
  for (size_t i = 11; i <= 20; ++i)
    mask->values[i] = static_cast<double>(static_cast<uint64_t>(mask->values[i]) | 0x20);
  const double expected = static_cast<double>(mask->t_ns[20] - mask->t_ns[10]) /
                          static_cast<double>(mask->t_ns.back() - mask->t_ns.front());
  const auto r = analyze_jitter(t);
  EXPECT_NEAR(reason(r.gpus[0], "sw_thermal_slowdown"), expected, 1e-12);
  EXPECT_TRUE(has(r.findings, "thermal-slowdown"));
  // SYNTHETIC counter track: NVML's cumulative ns, 40 ms held per 100 ms for 20 intervals out of 60 → 4/30.
  trace::CounterTrack counter;
  counter.name = "throttle_hw_thermal_slowdown";
  counter.device = mask->device;
  double held = 5e9;  // the counter's value since the driver loaded
  for (int i = 0; i <= 60; ++i) {
    counter.t_ns.push_back(int64_t{1'000'000'000} + int64_t{i} * 100'000'000);
    if (i > 40) held += 40e6;
    counter.values.push_back(held);
  }
  t.counters.push_back(counter);
  const auto with_counter = analyze_jitter(t);
  EXPECT_NEAR(reason(with_counter.gpus[0], "hw_thermal_slowdown"), 20 * 40e6 / 6e9, 1e-12);
}

TEST(Jitter, BenchOutliersThatAreTheThrottledSamplesAreNamed) {
  const auto run = read_json_file(std::string(GSQ_FIXTURE_DIR) + "/h200-bench-d2d.json", "gpusqueeze.bench/1");
  const auto plain = bench_outliers(run);
  ASSERT_FALSE(plain.rows.empty());
  for (const auto& row : plain.rows) EXPECT_GT(row.outliers, 0u);
  // EDITED: in the first measurement with samples, flag exactly the samples above its P99.
  auto edited = run;
  bool done = false;
  for (auto& res : edited["results"]) {
    for (auto& m : res["measurements"]) {
      if (done || !m.contains("samples_ns") || m["samples_ns"].size() < 100) continue;
      auto samples = m["samples_ns"].get<std::vector<double>>();
      auto sorted = samples;
      std::sort(sorted.begin(), sorted.end());
      const double p99 = sorted[static_cast<size_t>(0.99 * static_cast<double>(sorted.size() - 1))];
      std::vector<int> flags;
      for (double s : samples) flags.push_back(s > p99 ? 1 : 0);
      m["throttled"] = flags;
      m.erase("sm_clock_samples_mhz");
      done = true;
    }
  }
  ASSERT_TRUE(done);
  const auto flagged = bench_outliers(edited);
  EXPECT_TRUE(has(flagged.findings, "clock-unstable"));
}

TEST(Jitter, ARecordingWrittenAsJitterWritesItReadsBackWhole) {
  // The payload shape CounterSampler::finish() writes, with values of the recorded matmul trace.
  const auto t = trace::read_trace(std::string(GSQ_FIXTURE_DIR) + "/h200-hw-matmul.gsqt");
  nlohmann::json tracks = nlohmann::json::array();
  for (const auto& c : t.counters)
    tracks.push_back({{"name", c.name}, {"unit", c.unit}, {"t_ns", c.t_ns}, {"values", c.values}});
  const nlohmann::json payload{
      {"source", "nvml"},
      {"device", 0},
      {"device_info", {{"name", "NVIDIA H200"}, {"temperature_slowdown_c", 87}, {"power_limit_w", 700.0}}},
      {"interval_ms", 100},
      {"clock", "monotonic"},
      {"tracks", tracks}};
  const std::string file = ::testing::TempDir() + "gsq-jitter-roundtrip.gsqt";
  write_jitter_trace(file, "python3 gemm.py", t.counters.front().t_ns.front() - 1000, 0, 0, {payload});
  const auto back = trace::read_trace(file);
  EXPECT_TRUE(back.complete);
  ASSERT_EQ(back.counters.size(), t.counters.size());
  EXPECT_EQ(back.counters.front().t_ns, t.counters.front().t_ns);
  const auto a = analyze_jitter(t), b = analyze_jitter(back);
  EXPECT_DOUBLE_EQ(reason(a.gpus[0], "sw_power_cap"), reason(b.gpus[0], "sw_power_cap"));
  EXPECT_EQ(*b.gpus[0].temperature_slowdown_c, 87);
  EXPECT_EQ(*b.gpus[0].power_limit_w, 700);
  // Perfetto shows the recording: counter events for every track.
  std::ostringstream chrome;
  trace::write_chrome(back, chrome);
  EXPECT_NE(chrome.str().find("\"ph\":\"C\""), std::string::npos);
  EXPECT_NE(chrome.str().find("clock_event_reasons"), std::string::npos);
  std::remove(file.c_str());
}

}  // namespace
}  // namespace gsq::triage
