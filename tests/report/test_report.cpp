// Report from the H200 fixture: sections present, HTML self-contained, the three files written.
#include "report/report.hpp"

#include "core/error.hpp"

#include "doctor/checks.hpp"
#include "env/fingerprint.hpp"
#include "support/fixtures.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <regex>

namespace gsq::report {
namespace {

Report fixture_report() {
  const auto s = gpu::load_snapshot(test::fixture("h200-snapshot.json"));
  Report r;
  r.title = "t <&> \"q\"";
  r.provenance = "fixture";
  r.sections.push_back(environment_section(s, env::fingerprint(env::locked_fields(s))));
  r.sections.push_back(doctor_section(doctor::run_checks(s)));
  return r;
}

TEST(Report, HtmlIsSelfContained) {
  const std::string html = render_html(fixture_report());
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_FALSE(std::regex_search(html, std::regex(R"((src|href)\s*=\s*"(https?:)?//)")));
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_NE(html.find("NVIDIA H200"), std::string::npos);
  EXPECT_NE(html.find("t &lt;&amp;&gt; &quot;q&quot;"), std::string::npos);  // escaped
}

TEST(Report, MarkdownHasEachSectionAndFinding) {
  const std::string md = render_markdown(fixture_report());
  EXPECT_NE(md.find("## Step 0 — machine: environment"), std::string::npos);
  EXPECT_NE(md.find("## Step 0 — machine: doctor"), std::string::npos);
  EXPECT_NE(md.find("pcie-link-width"), std::string::npos);
  // The 2 kB NVIDIA_REQUIRE_CUDA value is shortened for people, kept whole in the JSON.
  EXPECT_NE(md.find("chars)"), std::string::npos);
}

TEST(Report, JsonCarriesSnapshotAndFindings) {
  const auto j = render_json(fixture_report());
  EXPECT_EQ(j.at("schema"), kReportSchema);
  EXPECT_EQ(j["sections"]["environment"]["snapshot"]["gpus"][0]["name"], "NVIDIA H200");
  EXPECT_GE(j["sections"]["doctor"]["findings"].size(), 15u);
  EXPECT_EQ(j["sections"]["doctor"]["worst"], "info");
}

TEST(Report, WritesThreeFiles) {
  const auto dir = std::filesystem::temp_directory_path() / "gsq-test-report";
  std::filesystem::remove_all(dir);
  write_report(fixture_report(), dir);
  for (const char* f : {"index.html", "report.md", "report.json"}) EXPECT_TRUE(std::filesystem::exists(dir / f)) << f;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gsq::report

namespace gsq::report {
namespace {

TEST(Report, CdfChartIsInlineSvgWithPercentiles) {
  std::vector<double> ns;
  for (int i = 1000; i >= 1; --i) ns.push_back(1000.0 + i);  // unsorted on purpose
  const std::string svg = cdf_svg("copy <1Gi>", ns);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("P50 1.50"), std::string::npos) << svg;
  EXPECT_NE(svg.find("P99 1.99"), std::string::npos);
  EXPECT_NE(svg.find("copy &lt;1Gi&gt;"), std::string::npos);
  EXPECT_EQ(cdf_svg("one", {5.0}), "");
}

}  // namespace
}  // namespace gsq::report

namespace gsq::report {
namespace {

TEST(Report, CeilingBarsShowThePercentOfTheoretical) {
  const std::string svg = bars_svg("ceilings", {{"pcie.h2d", 55.4e9, 63.0e9}, {"mem.read", 4644.5e9, 4814.3e9}});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("55 GB/s = 87.9% of 63"), std::string::npos) << svg;
  EXPECT_NE(svg.find("4644 GB/s = 96.5% of 4814"), std::string::npos) << svg;
  EXPECT_EQ(bars_svg("none", {}), "");
}

}  // namespace
}  // namespace gsq::report

namespace gsq::report {
namespace {

TEST(Report, SeriesChartDrawsEverySampleBetweenItsMinAndMax) {
  const std::vector<int64_t> t{0, 100'000'000, 200'000'000, 300'000'000};
  const std::vector<double> v{1980, 1470, 1215, 1980};
  const std::string svg = series_svg("GPU 0 sm_clock", t, v, "MHz");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find(">1980<"), std::string::npos);
  EXPECT_NE(svg.find(">1215<"), std::string::npos);
  EXPECT_NE(svg.find("0.3 s (MHz)"), std::string::npos);
  const auto points = svg.substr(svg.find("points=\""));
  EXPECT_EQ(std::count(points.begin(), points.end(), ','), 4);
  EXPECT_TRUE(series_svg("x", {0}, {1}, "W").empty());
  EXPECT_TRUE(series_svg("x", {0, 1}, {1}, "W").empty());
}

// The critical-path shares of the H200 host-slow trace (analyze --json: host 68.7%, CPU ops 31.2%, copies 0.1%).
TEST(Report, StackedChartSplitsTheBarByShareWithALegend) {
  const std::string svg =
      stacked_svg("critical path", {{"host work", 0.6871}, {"CPU ops", 0.3119}, {"kernels", 0.0}, {"copies", 0.0010}});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("host work — 68.7%"), std::string::npos) << svg;
  EXPECT_NE(svg.find("copies — 0.1%"), std::string::npos);
  EXPECT_NE(svg.find(R"(width="343.6")"), std::string::npos);  // 68.71% of the 500-px bar
  EXPECT_EQ(stacked_svg("empty", {{"a", 0.0}}), "");
}

TEST(Report, HeatmapColoursByValueAndLabelsRowsColumnsAndUnit) {
  const std::string svg = heatmap_svg("P2P", {"GPU0", "GPU1"}, {{2094, 48}, {52, -1}}, {{"2094", "48"}, {"52", "n/a"}},
                                      "GB/s; rows: source");
  EXPECT_NE(svg.find(">GPU0<"), std::string::npos);  // row and column labels
  EXPECT_NE(svg.find(">GPU1<"), std::string::npos);
  EXPECT_NE(svg.find("rgb(118,185,0)"), std::string::npos) << svg;  // the highest value: full green
  EXPECT_NE(svg.find("rgb(235,245,220)"), std::string::npos);       // the lowest: the light end
  EXPECT_NE(svg.find("#eaeef2"), std::string::npos);                // no reading: grey
  EXPECT_NE(svg.find(">GB/s<"), std::string::npos);                 // the unit's parts, one line each
  EXPECT_NE(svg.find(">rows: source<"), std::string::npos);
  EXPECT_EQ(heatmap_svg("ragged", {"a", "b"}, {{1, 2}, {3}}, {{"", ""}, {""}}, ""), "");
}

// RMSNorm at width 4096 on the H200 (bench/results/2026-12-04-h200-shuffled/torch.json): cudaMemcpy 4203, ours 4187,
// torch.compile 3724, eager 3436 GB/s.
TEST(Report, GroupedBarsShowEverySeriesWithItsValueAndALegend) {
  const std::string svg = grouped_bars_svg("ours against PyTorch", {"cudaMemcpy", "ours", "torch.compile", "eager"},
                                           {{"rms_norm 4096", {4203, 4187, 3724, 3436}}}, "GB/s");
  for (const char* text :
       {">cudaMemcpy<", ">ours<", ">torch.compile<", ">eager<", ">rms_norm 4096<", ">4187<", ">GB/s<"})
    EXPECT_NE(svg.find(text), std::string::npos) << text;
  EXPECT_NE(svg.find(R"(width="300.0")"), std::string::npos);  // the largest value fills the bar
  EXPECT_EQ(grouped_bars_svg("none", {"a"}, {}, ""), "");
}

// A SYNTHETIC sweep (made up to pin the axes): 8 B to 1 GiB, one series doubling per size.
TEST(Report, SweepChartHasALogSizeAxisTheSeriesAndTheirLegend) {
  std::vector<double> bytes, busbw;
  for (double b = 8; b <= static_cast<double>(1 << 30); b *= 2) {
    bytes.push_back(b);
    busbw.push_back(b / static_cast<double>(1 << 30) * 370);
  }
  const std::string svg =
      sweep_svg("all_reduce_perf busbw", bytes, {{"out-of-place", busbw}, {"in-place", busbw}}, "GB/s");
  for (const char* text :
       {">8 B<", ">1 GiB<", ">370<", ">out-of-place<", ">in-place<", "message size (log scale); GB/s"})
    EXPECT_NE(svg.find(text), std::string::npos) << text;
  const auto points =
      svg.substr(svg.find("points=\""), svg.find("\"/>", svg.find("points=\"")) - svg.find("points=\""));
  EXPECT_EQ(static_cast<size_t>(std::count(points.begin(), points.end(), ',')), bytes.size());  // a point per size
  EXPECT_EQ(sweep_svg("one size", {8}, {{"x", {1}}}, ""), "");
  EXPECT_EQ(sweep_svg("ragged", {8, 16}, {{"x", {1}}}, ""), "");
}

TEST(Report, SpeedOfLightChartHasBothAxesTheRoofLinesAndThePoints) {
  // The H200 GEMM of tests/fixtures/h200-hw-matmul.gsqt (analyze --roofline: DRAM 17%, tensor pipe 91%).
  const std::string svg = sol_svg("roofs", {{"nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT", 0.17, 0.91, 1.0}});
  EXPECT_NE(svg.find("DRAM bandwidth, share of peak"), std::string::npos);
  EXPECT_NE(svg.find("busiest pipe, share of peak"), std::string::npos);
  EXPECT_NE(svg.find(">60%<"), std::string::npos);
  EXPECT_NE(svg.find("<circle"), std::string::npos);
  EXPECT_NE(svg.find("nvjet_sm90_tst_320x128_64x3…"), std::string::npos) << svg;
  EXPECT_EQ(sol_svg("none", {}), "");
}

// SYNTHETIC findings (ids, severities and savings made up to pin the ranking rule).
Finding synthetic(const std::string& id, Severity sev, std::optional<double> saving = {}) {
  Finding f = make_finding(id, sev, id + " title", {{"x", "1"}}, "fix it", "test", 2, "subject");
  f.saving_ratio = saving;
  return f;
}

TEST(ReportVerdict, RanksBySeverityThenSavingThenPageOrderAndFoldsOneCheckIntoOneLine) {
  Report r;
  Section a, b;
  a.id = "a";
  a.more = "gpusqueeze a";
  a.findings = {synthetic("pass-1", Severity::pass),
                synthetic("info-1", Severity::info),
                synthetic("warn-small", Severity::warn, 0.05),
                synthetic("nic", Severity::warn),
                synthetic("nic", Severity::warn),
                synthetic("nic", Severity::warn)};
  b.id = "b";
  b.findings = {synthetic("warn-big", Severity::warn, 0.4), synthetic("fail-1", Severity::fail),
                synthetic("info-2", Severity::info)};
  r.add(a);
  r.add(b);
  const auto top = top_findings(r, 5);
  std::vector<std::string> ids;
  for (const auto& t : top) ids.push_back(t.finding.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"fail-1", "warn-big", "warn-small", "nic", "info-1"}));
  EXPECT_EQ(top[3].alike, 2);
  EXPECT_EQ(top[3].more, "gpusqueeze a");
  EXPECT_EQ(top_findings(r, 2).size(), 2U);
  const std::string md = render_markdown(r);
  EXPECT_NE(md.find("nic title — subject (x=1) and 2 more like it"), std::string::npos) << md;
  EXPECT_LT(md.find("fail-1 title"), md.find("warn-big title"));
}

TEST(ReportVerdict, StepCardsTakeTheWorstFindingOfTheirSectionsAndSayWhatWasNotMeasured) {
  Report r;
  Section ok, look, fix;
  ok.id = "ok";
  ok.step = 0;
  ok.findings = {synthetic("p", Severity::pass), synthetic("i", Severity::info)};
  ok.headline = "all good";
  look.id = "look";
  look.step = 2;
  look.findings = {synthetic("w", Severity::warn)};
  fix.id = "fix";
  fix.step = 2;
  fix.findings = {synthetic("f", Severity::fail)};
  r.add(ok);
  r.add(look);
  const auto cards = step_cards(r);
  ASSERT_EQ(cards.size(), static_cast<size_t>(kTriageStep + 1));
  EXPECT_EQ(cards[0].status, StepStatus::ok);
  EXPECT_EQ(cards[0].headlines, std::vector<std::string>{"all good"});
  EXPECT_EQ(cards[1].status, StepStatus::not_measured);
  EXPECT_EQ(cards[2].status, StepStatus::look);
  r.add(fix);
  EXPECT_EQ(step_cards(r)[2].status, StepStatus::fix);
  EXPECT_EQ(step_cards(r)[2].section_ids, (std::vector<std::string>{"look", "fix"}));
  const auto j = render_json(r);
  EXPECT_EQ(j["steps"][1]["status"], "not measured");
  EXPECT_EQ(j["steps"][kTriageStep]["name"], "field triage");
}

TEST(ReportVerdict, SectionsWithOneIdKeepBothInTheJson) {
  Report r;
  Section s;
  s.id = "locate";
  s.data = 1;
  r.add(s);
  s.data = 2;
  r.add(s);
  r.add(s);
  const auto j = render_json(r);
  EXPECT_EQ(j["sections"]["locate"], 1);
  EXPECT_EQ(j["sections"]["locate-2"], 2);
  EXPECT_TRUE(j["sections"].contains("locate-3"));
}

TEST(ReportVerdict, FilesAreNamedRelativeToTheWorkingDirectoryOrByName) {
  EXPECT_EQ(display_name("/home/u/run/traces/a.json", "/home/u/run"), "traces/a.json");
  EXPECT_EQ(display_name("/data/x/a.json", "/home/u/run"), "a.json");
  EXPECT_EQ(display_name("/home/u/run/../a.json", "/home/u/run"), "a.json");
  EXPECT_EQ(display_name("../shared/a.json", "/home/u/run"), "../shared/a.json");
  EXPECT_EQ(display_name("./a/./b.json", "/x"), "a/b.json");
}

TEST(ReportCompare, NamesFindingsGainedAndLostStepsThatMovedAndFingerprintDrift) {
  // SYNTHETIC reports: two pages of one machine a fix apart.
  Report before, after;
  Section env_a, env_b, trace_a, trace_b;
  env_a.id = env_b.id = "environment";
  env_a.data = {{"fingerprint", "aaaa"}};
  env_b.data = {{"fingerprint", "bbbb"}};
  trace_a.id = trace_b.id = "locate";
  trace_a.step = trace_b.step = 2;
  trace_a.headline = "sync-bound, 66.5% of wall";
  trace_b.headline = "host-bound, 40.0% of wall";
  trace_a.findings = {synthetic("sync-point", Severity::warn), synthetic("tiny-kernels", Severity::warn)};
  trace_b.findings = {synthetic("tiny-kernels", Severity::warn), synthetic("host-gap", Severity::fail)};
  before.add(env_a);
  before.add(trace_a);
  before.add(trace_a);  // a second trace: "locate-2" is matched as "locate"
  after.add(env_b);
  after.add(trace_b);
  const auto sec = compare_section(render_json(before), render_json(after), "old/report.json");
  EXPECT_EQ(sec.id, "changes");
  EXPECT_TRUE(sec.data["fingerprint"]["changed"].get<bool>());
  ASSERT_EQ(sec.data["gained"].size(), 1U);
  EXPECT_EQ(sec.data["gained"][0]["id"], "host-gap");
  ASSERT_EQ(sec.data["lost"].size(), 1U);
  EXPECT_EQ(sec.data["lost"][0]["id"], "sync-point");
  ASSERT_EQ(sec.data["steps"].size(), 1U);
  EXPECT_EQ(sec.data["steps"][0]["before"], "look");
  EXPECT_EQ(sec.data["steps"][0]["now"], "fix");
  EXPECT_EQ(sec.headline, "1 new finding(s), 1 gone, fingerprint changed");

  const auto same = compare_section(render_json(after), render_json(after), "now/report.json");
  EXPECT_FALSE(same.data["fingerprint"]["changed"].get<bool>());
  EXPECT_TRUE(same.data["gained"].empty());
  EXPECT_TRUE(same.data["lost"].empty());
  EXPECT_TRUE(same.tables.empty());

  // A report made before steps and findings were recorded: nothing is claimed new.
  const auto older = compare_section({{"schema", kReportSchema}, {"sections", {{"environment", env_a.data}}}},
                                     render_json(after), "2026-12-02/report.json");
  EXPECT_TRUE(older.data["gained"].empty());
  EXPECT_FALSE(older.data["compared"]["findings"].get<bool>());
  EXPECT_EQ(older.headline, "fingerprint changed");
}

TEST(ReportCompare, WhatIsNotAReportIsRefusedByName) {
  const auto now = render_json(Report{});
  for (const auto& bad : {nlohmann::json::array(), nlohmann::json{{"schema", "gpusqueeze.bench/1"}},
                          nlohmann::json{{"schema", kReportSchema}, {"steps", {{{"step", 1}, {"status", 5}}}}},
                          nlohmann::json{{"schema", kReportSchema}, {"findings", {{{"id", 3}}}}}}) {
    try {
      (void)compare_section(bad, now, "x.json");
      ADD_FAILURE() << "accepted " << bad.dump();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::bad_input);
      EXPECT_NE(std::string(e.what()).find("x.json"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace gsq::report
