// Findings: JSON round trip and severity order.
#include "core/error.hpp"
#include "core/finding.hpp"

#include <gtest/gtest.h>

namespace gsq {
namespace {

TEST(Finding, JsonRoundTrip) {
  Finding f{"pcie-link-width", Severity::fail, "x8 of x16", {{"w", "8"}}, 0.5, "reseat", "DCGM", 0, "GPU 0"};
  const nlohmann::json j = f;
  const Finding g = j.get<Finding>();
  EXPECT_EQ(g.id, f.id);
  EXPECT_EQ(g.severity, Severity::fail);
  EXPECT_EQ(g.evidence.size(), 1u);
  EXPECT_EQ(g.evidence[0].value, "8");
  EXPECT_DOUBLE_EQ(*g.saving_ratio, 0.5);
  EXPECT_EQ(g.subject, "GPU 0");
}

TEST(Finding, WorstIsTheHighestSeverity) {
  EXPECT_EQ(worst({}), Severity::pass);
  std::vector<Finding> fs(3);
  fs[1].severity = Severity::warn;
  EXPECT_EQ(worst(fs), Severity::warn);
}

TEST(Finding, UnknownSeverityIsBadInput) {
  try {
    (void)severity_from_string("critical");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
  }
}

TEST(Finding, ASpecificCauseHoldingAThirdOfItsWholeIsReadFirst) {
  auto f = [](const char* id, Severity s, double saving) {
    Finding x;
    x.id = id, x.severity = s, x.saving_ratio = saving;
    return x;
  };
  // The held-out GPT-2 training pair: the unfused optimizer is half of what CUDA graphs would save.
  std::vector<Finding> fs{f("host-idle", Severity::warn, 0.06), f("launch-bound", Severity::warn, 0.63),
                          f("unfused-optimizer", Severity::warn, 0.32), f("top-kernels", Severity::info, 0)};
  rank_findings(fs);
  EXPECT_EQ(fs[0].id, "unfused-optimizer");
  EXPECT_EQ(fs[1].id, "launch-bound");
  EXPECT_EQ(fs[2].id, "host-idle");
  EXPECT_EQ(fs[3].id, "top-kernels");
  // Below a third, or an info finding beside a warning: the saving decides.
  fs = {f("launch-bound", Severity::warn, 0.63), f("sync-point", Severity::warn, 0.2),
        f("unfused-optimizer", Severity::info, 0.4)};
  rank_findings(fs);
  EXPECT_EQ(fs[0].id, "launch-bound");
  EXPECT_EQ(fs[1].id, "sync-point");
  // A part with the larger saving keeps its own place; a fail stays first whatever it saves.
  fs = {f("launch-bound", Severity::warn, 0.1), f("sync-point", Severity::warn, 0.3), f("x", Severity::fail, 0)};
  rank_findings(fs);
  EXPECT_EQ(fs[0].id, "x");
  EXPECT_EQ(fs[1].id, "sync-point");
  const auto keys = rank_keys({f("launch-bound", Severity::warn, 0.3), f("sync-point", Severity::warn, 0.1)});
  EXPECT_GT(keys[1], 0.3) << "just above the whole";
  EXPECT_LT(keys[1], 0.3001);
}

}  // namespace
}  // namespace gsq
