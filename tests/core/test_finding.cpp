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

}  // namespace
}  // namespace gsq
