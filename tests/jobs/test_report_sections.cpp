// The report's program section (jobs/report_sections.cpp) from an analysed real-model recording: each predicted
// saving is told as the untraced step it leaves, and where the replay leaves that step to the host, with the GPU's
// floor beside it (a recording cannot tell how much of the host's time the recorder added).
#include "jobs/report_sections.hpp"

#include "analyze/analysis.hpp"
#include "analyze/gsqt.hpp"
#include "analyze/whatif.hpp"
#include "program/run.hpp"
#include "support/fixtures.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gsq::jobs {
namespace {

// ResNet-18 AMP training with a per-step .item() (the real-model corpus, H100): 15.31 ms a step untraced. Its
// channels_last fix leaves the replayed step launch-bound at 12.5 ms over a GPU floor of 7.5 ms.
TEST(ReportSections, APredictionLeftToTheHostGivesTheGpuFloorBesideIt) {
  const auto t = analyze::load_trace(test::fixture("realmodels/item_resnet18_train-before.pt.json.gz"));
  analyze::Thresholds th;
  th.untraced_step_ns = 15'313'000;
  program::ProgramResult r;
  r.source = program::StepSource::markers;
  r.steps.steady.n = 10;
  r.steps.steady.p50 = 15.313e6;
  auto a = analyze::analyze(t, th);
  r.what_if = analyze::what_if(t, analyze::parse_fixes("sync,layout"), a.replay_graph);
  r.analysis = std::move(a);
  const auto sec = program_analysis_section_of(r);
  ASSERT_TRUE(sec.has_value());
  bool layout = false, sync = false;
  for (const auto& f : sec->findings) {
    if (f.id == "layout-conversions") {
      layout = true;
      EXPECT_NE(f.title.find("predicted ("), std::string::npos) << f.title;
      EXPECT_NE(f.title.find("where the GPU sets the step after it)"), std::string::npos) << f.title;
    }
    if (f.id == "sync-point") {  // dropping the sync leaves the step at its GPU floor: one figure
      sync = true;
      EXPECT_NE(f.title.find("predicted"), std::string::npos) << f.title;
      EXPECT_EQ(f.title.find("where the GPU sets"), std::string::npos) << f.title;
    }
  }
  EXPECT_TRUE(layout && sync);
}

}  // namespace
}  // namespace gsq::jobs
