// `gpusqueeze fleet`'s judgement and sources. The collections built in code below are SYNTHETIC (values chosen around
// an H100's); the report.json files are real ones from bench/results; the PromQL answers have the shape Prometheus
// 2.x/3.x returns for /api/v1/query.
#include "core/error.hpp"
#include "core/json_io.hpp"
#include "fleet/fleet.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>

namespace gsq::fleet {
namespace {

namespace fs = std::filesystem;

// A healthy H100 of a synthetic fleet: node n, GPU i, with a little run-to-run spread in its measured signals.
Gpu h100(int node, int i, double jitter = 0) {
  Gpu g{fmt::format("node-{:02}", node),
        std::to_string(i),
        fmt::format("GPU-{:02}-{}", node, i),
        "NVIDIA H100 80GB HBM3",
        "test",
        {},
        {}};
  g.config = {
      {"driver", "580.159.04"}, {"power_limit_w", "700"}, {"pcie_gen_max", "5"}, {"pcie_width", "16"}, {"mig", "off"}};
  g.signals = {{"clock_under_load_mhz", 1980 - 4 * jitter},
               {"power_cap_fraction", 0.01 + 0.002 * jitter},
               {"thermal_fraction", 0},
               {"temperature_under_load_c", 62 + jitter},
               {"xid_events", 0},
               {"ecc_uncorrected", 0}};
  return g;
}

Collection fleet_of(int nodes) {
  Collection c;
  c.source = "synthetic";
  for (int n = 0; n < nodes; ++n)
    for (int i = 0; i < 4; ++i) c.gpus.push_back(h100(n, i, ((n * 4 + i) % 5) - 2.0));
  return c;
}

std::set<std::string> outlier_uuids(const Result& r, const std::vector<Outlier>& list) {
  std::set<std::string> out;
  for (const auto& o : list)
    for (size_t i : o.gpus) out.insert(r.gpus[i].uuid);
  return out;
}

std::set<std::string> fields(const Outlier& o) {
  std::set<std::string> out;
  for (const auto& d : o.differences) out.insert(d.field);
  return out;
}

TEST(FleetJudge, AHealthyFleetWithRunToRunSpreadHasNoOutlier) {
  const auto r = judge(fleet_of(8));
  EXPECT_TRUE(r.outliers.empty());
  EXPECT_TRUE(r.watch.empty());
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].config.at("driver"), "580.159.04");
  EXPECT_EQ(r.groups[0].gpus.size(), 32u);
}

TEST(FleetJudge, NamesEachPlantedOutlierByTheFieldThatDiffers) {
  auto c = fleet_of(8);
  c.gpus[1].config["power_limit_w"] = "500";  // power-capped
  c.gpus[5].config["pcie_gen_max"] = "4";     // a gen4 slot, trained x8
  c.gpus[5].config["pcie_width"] = "8";
  c.gpus[9].signals["xid_events"] = 3;  // XIDs
  c.gpus[9].signals["last_xid"] = 79;
  for (int i = 12; i < 16; ++i) c.gpus[i].config["driver"] = "550.54.15";  // node-03 on an older driver
  c.gpus[20].signals["temperature_under_load_c"] = 80;                     // hot: two causes agree
  c.gpus[20].signals["thermal_fraction"] = 0.4;
  c.gpus[25].signals["temperature_under_load_c"] = 80;  // one signal alone: watched
  c.gpus[26].signals["clock_under_load_mhz"] = 1800;    // capped: clock and power-cap time are one cause: watched
  c.gpus[26].signals["power_cap_fraction"] = 0.5;
  c.gpus[27].signals["clock_under_load_mhz"] = 1500;  // from one sample under load: not a reading
  c.gpus[27].signals["power_cap_fraction"] = 1;
  c.gpus[27].signals["under_load_samples"] = 1;
  const auto r = judge(c);
  ASSERT_EQ(r.outliers.size(), 5u);
  EXPECT_EQ(outlier_uuids(r, r.outliers), (std::set<std::string>{"GPU-00-1", "GPU-01-1", "GPU-02-1", "GPU-03-0",
                                                                 "GPU-03-1", "GPU-03-2", "GPU-03-3", "GPU-05-0"}));
  EXPECT_EQ(r.outliers[0].severity, Severity::fail) << "health events first";
  EXPECT_EQ(fields(r.outliers[0]), std::set<std::string>{"xid_events"});
  EXPECT_NE(r.outliers[0].differences[0].fix.find("XID 79"), std::string::npos);
  for (const auto& o : r.outliers) {
    const auto& first = r.gpus[o.gpus.front()].uuid;
    if (first == "GPU-00-1") {
      EXPECT_EQ(fields(o), std::set<std::string>{"power_limit_w"});
    }
    if (first == "GPU-01-1") {
      EXPECT_EQ(fields(o), (std::set<std::string>{"pcie_gen_max", "pcie_width"}));
    }
    if (first == "GPU-03-0") {
      EXPECT_EQ(o.gpus.size(), 4u) << "one line for a node whose GPUs differ alike";
      EXPECT_EQ(subject(r, o), "node-03 (GPUs 0, 1, 2, 3)");
      EXPECT_EQ(o.differences[0].group_value, "580.159.04");
    }
    if (first == "GPU-05-0") {
      EXPECT_EQ(fields(o), (std::set<std::string>{"temperature_under_load_c", "thermal_fraction"}));
      EXPECT_GT(*o.differences[0].robust_z, kZ);
    }
  }
  EXPECT_EQ(outlier_uuids(r, r.watch), (std::set<std::string>{"GPU-06-1", "GPU-06-2"}));
  const auto fs = findings(r);
  EXPECT_EQ(std::count_if(fs.begin(), fs.end(), [](const Finding& f) { return f.id.starts_with("fleet-watch-"); }), 2);
  EXPECT_EQ(fs.front().id, "fleet-xid_events") << "a check per field: the page folds only outliers of one kind";
  EXPECT_EQ(to_json(r)["outlier_gpus"], 8);
}

// A heavier job than its peers' draws more power: at the power cap, lower clocks and hotter, all from one cause (the
// workload). A GPU slowed for heat as well is its cooling: an outlier.
TEST(FleetJudge, APowerCappedHotterGpuIsItsWorkloadUnlessItWasSlowedForHeat) {
  auto c = fleet_of(8);
  c.gpus[5].signals["clock_under_load_mhz"] = 1700;
  c.gpus[5].signals["power_cap_fraction"] = 0.6;
  c.gpus[5].signals["temperature_under_load_c"] = 75;
  auto r = judge(c);
  EXPECT_TRUE(r.outliers.empty());
  EXPECT_EQ(outlier_uuids(r, r.watch), (std::set<std::string>{"GPU-01-1"}));
  c.gpus[5].signals["thermal_fraction"] = 0.4;
  r = judge(c);
  EXPECT_EQ(outlier_uuids(r, r.outliers), (std::set<std::string>{"GPU-01-1"}));
}

TEST(FleetJudge, ASplitGroupIsNotedNotJudgedAndSmallGroupsAreListedOnly) {
  auto c = fleet_of(4);
  for (size_t i = 0; i < c.gpus.size(); i += 2) c.gpus[i].config["driver"] = "570.86.15";  // half and half
  Gpu lone = h100(9, 0);
  lone.model = "NVIDIA H200";
  lone.config["power_limit_w"] = "600";
  lone.signals["ecc_uncorrected"] = 2;  // health counts even alone
  c.gpus.push_back(lone);
  const auto r = judge(c);
  ASSERT_EQ(r.outliers.size(), 1u);
  EXPECT_EQ(r.gpus[r.outliers[0].gpus[0]].model, "NVIDIA H200");
  EXPECT_EQ(fields(r.outliers[0]), std::set<std::string>{"ecc_uncorrected"});
  const auto& h100s = r.groups[0].model == "NVIDIA H100 80GB HBM3" ? r.groups[0] : r.groups[1];
  ASSERT_EQ(h100s.notes.size(), 1u);
  EXPECT_NE(h100s.notes[0].find("driver: no value held by two thirds"), std::string::npos) << h100s.notes[0];
  const auto& h200s = r.groups[0].model == "NVIDIA H200" ? r.groups[0] : r.groups[1];
  EXPECT_NE(h200s.notes.at(0).find("fewer than 3"), std::string::npos);
}

TEST(FleetJudge, OutsideTextIsNeverAPatternAndApplicationXidsAreWarnings) {
  auto c = fleet_of(4);
  c.gpus[2].config["driver"] = "{group}{value}";  // a label's text: filled in once, never searched again
  c.gpus[5].signals["xid_events"] = 2;
  c.gpus[5].signals["last_xid"] = 13;  // an application's fault
  c.gpus[6].signals["xid_events"] = 1;
  c.gpus[6].signals["last_xid"] = 1e300;  // no such code
  c.gpus[7].signals["missing_s"] = 300;   // gone from its node
  const auto r = judge(c);
  ASSERT_EQ(r.outliers.size(), 4u);
  for (const auto& o : r.outliers) {
    const auto& d = o.differences.front();
    if (d.field == "driver") {
      EXPECT_EQ(d.value, "{group}{value}");
      EXPECT_NE(d.fix.find("(580.159.04)"), std::string::npos) << d.fix;
    }
    if (r.gpus[o.gpus[0]].uuid == "GPU-01-1") {
      EXPECT_EQ(o.severity, Severity::warn) << "XID 13 is the program's";
      EXPECT_EQ(d.fix.find("Drain"), std::string::npos) << d.fix;
    }
    if (r.gpus[o.gpus[0]].uuid == "GPU-01-2") {
      EXPECT_EQ(o.severity, Severity::fail);
    }
    if (r.gpus[o.gpus[0]].uuid == "GPU-01-3") {
      EXPECT_EQ(o.severity, Severity::fail);
      EXPECT_EQ(d.value, "300 s");
      EXPECT_NE(d.fix.find("fell off the bus"), std::string::npos) << d.fix;
    }
  }
}

TEST(FleetJudge, IdenticalPeersDoNotMakeASmallDifferenceAnOutlier) {
  auto c = fleet_of(4);
  for (auto& g : c.gpus) g.signals["clock_under_load_mhz"] = 1980;  // MAD 0: the floor (1%) sets the scale
  c.gpus[3].signals["clock_under_load_mhz"] = 1950;                 // 1.5%: z = 1.5
  c.gpus[3].signals["temperature_under_load_c"] = 66;               // 4 °C above: z < 3.5 with a 2 °C floor
  const auto r = judge(c);
  EXPECT_TRUE(r.outliers.empty());
  EXPECT_TRUE(r.watch.empty());
}

const fs::path kReports = fs::path(GSQ_SOURCE_DIR) / "bench/results/2026-12-06-h100-report-program/pages";

TEST(FleetReports, ReadsARealReportsConfigurationAndMeasuredCeilings) {
  const auto j = read_json_file(kReports / "cl_resnet50_infer/report.json", "gpusqueeze.report/1");
  const auto gpus = gpus_from_report(j, "cl_resnet50_infer/report.json");
  ASSERT_EQ(gpus.size(), 1u);
  const auto& g = gpus[0];
  EXPECT_EQ(g.model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.uuid, "GPU-2efef4fd-8599-df5b-df6d-48b1bd54b79b");
  EXPECT_EQ(g.config.at("driver"), "580.159.04");
  EXPECT_EQ(g.config.at("power_limit_w"), "700");
  EXPECT_EQ(g.config.at("pcie_width"), "16");
  EXPECT_EQ(g.config.at("mig"), "off");
  EXPECT_FALSE(g.config.contains("cpu_governor")) << "unsupported fields are not values";
  EXPECT_NEAR(g.signals.at("hbm_copy_gbps"), 3062.8, 1.0);  // mem.copy 1 GiB flat, cold: 2 GiB moved per launch
  EXPECT_NEAR(g.signals.at("launch_us"), 1e6 / 328296.9, 0.01);
  EXPECT_GT(g.signals.at("pcie_h2d_gbps"), 40);
  EXPECT_GT(g.signals.at("gemm_tflops"), 500);
  EXPECT_EQ(g.signals.at("clock_under_load_mhz"), 1980);
}

TEST(FleetReports, AFolderOfReportsWithOneAlteredIsJudgedAndBadFilesAreNoted) {
  const fs::path dir = fs::temp_directory_path() / ("gsq-fleet-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  int n = 0;
  for (const auto& e : fs::directory_iterator(kReports)) {
    if (!fs::exists(e.path() / "report.json")) continue;
    for (int copy = 0; copy < 2; ++copy) {  // the same card as six nodes: new hostnames and uuids
      auto j = read_json_file(e.path() / "report.json", "gpusqueeze.report/1");
      auto& snap = j["sections"]["environment"]["snapshot"];
      snap["host"]["hostname"] = fmt::format("node-{}", n);
      snap["gpus"][0]["uuid"] = fmt::format("GPU-n{}", n);
      for (auto& [id, sec] : j["sections"].items())  // the ceilings measured on it name it too
        if (sec.is_object() && sec.contains("gpu") && sec["gpu"].is_object())
          sec["gpu"]["uuid"] = fmt::format("GPU-n{}", n);
      if (n == 2) snap["gpus"][0]["power_enforced_limit_w"] = 450.0;
      fs::create_directories(dir / fmt::format("node-{}/job-{}", n, n));
      write_json_file(dir / fmt::format("node-{}/job-{}/report.json", n, n), j);
      ++n;
    }
  }
  ASSERT_GE(n, 6);
  {  // node-0 again, later, from a job that measured nothing: its settings are the newest, its ceilings the older
    auto j = read_json_file(dir / "node-0/job-0/report.json", "gpusqueeze.report/1");
    for (auto it = j["sections"].begin(); it != j["sections"].end();)
      it = it.key().starts_with("bench-") || it.key() == "baseline" ? j["sections"].erase(it) : std::next(it);
    j["sections"]["environment"]["snapshot"]["gpus"][0]["power_enforced_limit_w"] = 700.0;
    fs::create_directories(dir / "node-0/job-99");
    write_json_file(dir / "node-0/job-99/report.json", j);
    fs::last_write_time(dir / "node-0/job-0/report.json", fs::file_time_type::clock::now() - std::chrono::hours(2));
  }
  fs::create_directories(dir / "junk");
  std::ofstream(dir / "junk/report.json") << "{\"schema\": \"something/1\"}";
  auto bundled = read_json_file(kReports / "cl_resnet50_infer/report.json", "gpusqueeze.report/1");
  bundled["this_machine"] = false;  // what `report` writes on a node without a GPU: the bundled H200 files
  fs::create_directories(dir / "gpuless");
  write_json_file(dir / "gpuless/report.json", bundled);
  fs::create_directories(dir / "dangling");
  fs::create_symlink(dir / "nowhere.json", dir / "dangling/report.json");  // an entry's trouble is not the walk's
  fs::create_directories(dir / ".job-9.tmp.123");                          // deploy/slurm's report while it is written
  std::ofstream(dir / ".job-9.tmp.123/report.json") << "{";
  const auto c = collect_reports(dir, std::nullopt);
  EXPECT_EQ(c.gpus.size(), static_cast<size_t>(n));
  const auto node0 = std::find_if(c.gpus.begin(), c.gpus.end(), [](const Gpu& g) { return g.node == "node-0"; });
  ASSERT_NE(node0, c.gpus.end());
  EXPECT_EQ(node0->origin, "node-0/job-99/report.json");
  EXPECT_TRUE(node0->signals.contains("hbm_copy_gbps")) << "kept from the older report that measured it";
  ASSERT_EQ(c.notes.size(), 2u) << "the junk and the GPU-less page; the half-written one is not looked at";
  EXPECT_NE((c.notes[0] + c.notes[1]).find("junk"), std::string::npos);
  EXPECT_NE((c.notes[0] + c.notes[1]).find("gpuless"), std::string::npos);
  const auto r = judge(c);
  ASSERT_EQ(r.outliers.size(), 1u);
  EXPECT_EQ(r.gpus[r.outliers[0].gpus[0]].uuid, "GPU-n2");
  EXPECT_EQ(r.outliers[0].differences.at(0).value, "450 W");
  EXPECT_THROW((void)collect_reports(dir / "missing", std::nullopt), Error);
  EXPECT_THROW((void)collect_reports(dir, 0.0), Error) << "every report is older than a zero window";
  EXPECT_EQ(collect_reports(dir, 3600.0).gpus.size(), static_cast<size_t>(n)) << "node-0's two-hour-old one left out";
  fs::remove_all(dir);
}

std::string answer(const std::string& results) {
  return R"({"status":"success","data":{"resultType":"vector","result":[)" + results + "]}}";
}

std::string series(const std::string& uuid, const std::string& extra, const std::string& v) {
  return R"({"metric":{"gpu":"0","uuid":")" + uuid + R"(","model":"NVIDIA H200","hostname":"n-)" + uuid + "\"" + extra +
         R"(},"value":[1765000000.123,")" + v + "\"]}";
}

TEST(FleetPrometheus, AnswersAreFoldedIntoGpusByUuid) {
  const auto q = prometheus_queries({"http://p:9090", "1h", "", 30});
  std::vector<std::string> bodies(q.size(), answer(""));
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i].first == "info")  // B's driver changed within the window: its newer series is its driver now
      bodies[i] = answer(series("A", R"(,"driver":"580.1")", "1765000000") + "," +
                         series("B", R"(,"driver":"550.2")", "1765000300") + "," +
                         series("B", R"(,"driver":"535.9")", "1764999000"));
    if (q[i].first == "power_limit_w") bodies[i] = answer(series("A", "", "700") + "," + series("B", "", "500.4"));
    if (q[i].first == "mig") bodies[i] = answer(series("A", "", "0"));
    if (q[i].first == "xid_events") bodies[i] = answer(series("B", "", "2"));
    if (q[i].first == "exporter_seen")  // both nodes' exporters last reported at …300: A's GPU 300 s before
      bodies[i] = answer(R"({"metric":{"hostname":"n-A"},"value":[1765000300.1,"1765000300"]},)"
                         R"({"metric":{"hostname":"n-B"},"value":[1765000300.1,"1765000300"]})");
    if (q[i].first == "clock_under_load_mhz") bodies[i] = answer(series("A", "", "NaN"));
  }
  const auto c = gpus_from_prometheus(q, bodies);
  ASSERT_EQ(c.gpus.size(), 2u);
  EXPECT_EQ(c.gpus[0].node, "n-A");
  EXPECT_EQ(c.gpus[0].config.at("driver"), "580.1");
  EXPECT_EQ(c.gpus[1].config.at("driver"), "550.2") << "the newest series, wherever it comes in the answer";
  EXPECT_EQ(c.gpus[1].config.at("power_limit_w"), "500");
  EXPECT_EQ(c.gpus[0].config.at("mig"), "off");
  EXPECT_EQ(c.gpus[1].signals.at("xid_events"), 2);
  EXPECT_FALSE(c.gpus[0].signals.contains("clock_under_load_mhz")) << "NaN is no reading";
  EXPECT_EQ(c.gpus[0].signals.at("missing_s"), 300) << "A's GPU stopped reporting while its exporter went on";
  EXPECT_FALSE(c.gpus[1].signals.contains("missing_s"));
  EXPECT_FALSE(c.gpus[0].signals.contains("last_seen")) << "a reading of the source, not a signal";
  EXPECT_EQ(c.notes.size(), q.size() - 8)
      << "each query without series says so, but the newest XID's (none before an XID) and NVLink's (PCIe cards)";
  bodies[0] = R"({"status":"error","errorType":"bad_data","error":"parse error at char 5"})";
  try {
    (void)gpus_from_prometheus(q, bodies);
    FAIL() << "an error answer must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("parse error at char 5"), std::string::npos) << e.what();
  }
  bodies[0] = "<html>proxy login</html>";
  EXPECT_THROW((void)gpus_from_prometheus(q, bodies), Error);
}

TEST(FleetPrometheus, TheWindowAndSelectorReachEveryQuery) {
  const auto q = prometheus_queries({"http://p:9090", "6h", R"(cluster="a")", 30});
  for (const auto& [field, promql] : q) {
    EXPECT_EQ(promql.find("{,"), std::string::npos) << field << ": " << promql;
    EXPECT_TRUE(
        promql.starts_with(field == "exporter_seen" ? "max by (hostname)" : "max by (uuid, gpu, hostname, model"))
        << "one series per GPU (per node for the exporter's): " << promql;
    EXPECT_NE(promql.find("cluster=\"a\""), std::string::npos) << field << ": " << promql;
    EXPECT_NE(promql.find("[6h"), std::string::npos) << field << ": " << promql;
  }
  EXPECT_EQ(duration_seconds("90m"), 5400);
  EXPECT_EQ(duration_seconds("2d"), 172800);
  EXPECT_EQ(duration_seconds("1h30m"), 5400);
  EXPECT_THROW((void)duration_seconds("5x"), Error);
  EXPECT_THROW((void)duration_seconds("h"), Error);
  EXPECT_THROW((void)duration_seconds("10ms"), Error) << "under a second";
  EXPECT_THROW((void)duration_seconds(std::string(400, '9') + "h"), Error) << "a number past double's range";
  EXPECT_THROW((void)collect_prometheus({"https://p:9090", "1h", "", 1}), Error);
  EXPECT_THROW((void)collect_prometheus({"prometheus:9090", "1h", "", 1}), Error);
}

}  // namespace
}  // namespace gsq::fleet
