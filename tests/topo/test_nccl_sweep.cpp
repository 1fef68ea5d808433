// `probe nccl --sweep-env` without a GPU: the settings, their checks and the judgement. The busbw figures below are
// SYNTHETIC (made up to pin the rule); the JSON shape is `probe nccl --json`'s.
#include "topo/nccl_sweep.hpp"

#include "core/error.hpp"

#include <gtest/gtest.h>

namespace gsq::topo {
namespace {

TEST(NcclSweep, DefaultSettingsStartWithTheBaselineAndUseRealNames) {
  const auto s = default_sweep();
  ASSERT_GE(s.size(), 6u);
  EXPECT_EQ(s[0].name, "as is");
  EXPECT_TRUE(s[0].env.empty());
  for (size_t i = 1; i < s.size(); ++i) {
    ASSERT_EQ(s[i].env.size(), 1u);
    EXPECT_TRUE(s[i].env[0].first.starts_with("NCCL_")) << s[i].name;
  }
}

TEST(NcclSweep, UserSettingsAreCheckedAgainstWhatNcclKnows) {
  const auto s = parse_sweep({"NCCL_ALGO=Ring,NCCL_PROTO=Simple", "NCCL_IB_DISABLE=1"});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1].env.size(), 2u);
  EXPECT_EQ(s[2].env[0].second, "1");  // a debugging switch may be tried on purpose
  for (const char* bad : {"NCCL_SOCKET_TIMEOUT=5", "NCCL_TREE_THRESHOLD=0", "ALGO=Ring", "NCCL_ALGO", "=1"})
    EXPECT_THROW((void)parse_sweep({bad}), Error) << bad;
}

TEST(NcclSweep, LargeSizesDecideTheFigure) {
  const nlohmann::json j = {{"rows",
                             {{{"collective", "all_reduce"}, {"bytes", 1024}, {"busbw_gbs", 0.5}},
                              {{"collective", "all_reduce"}, {"bytes", 256u << 20}, {"busbw_gbs", 300.0}},
                              {{"collective", "all_reduce"}, {"bytes", 1u << 30}, {"busbw_gbs", 360.0}},
                              {{"collective", "all_gather"}, {"bytes", 1u << 30}, {"busbw_gbs", 999.0}}}}};
  EXPECT_DOUBLE_EQ(large_size_busbw(j, "all_reduce"), 330.0);  // 256 MiB and 1 GiB; not 1 KiB, not all_gather
  EXPECT_THROW((void)large_size_busbw(j, "alltoall"), Error);
  EXPECT_THROW((void)large_size_busbw(nlohmann::json::array(), "all_reduce"), Error);
}

TEST(NcclSweep, ASettingHelpsOnlyWhenEveryTrialBeatsEveryBaselineTrial) {
  std::vector<SweepRow> rows{{"as is", {300, 310, 305}, "", 0, 0, ""},
                             {"NCCL_ALGO=Ring", {330, 335, 332}, "", 0, 0, ""},
                             {"NCCL_PROTO=LL128", {299, 320, 305}, "", 0, 0, ""},
                             {"NCCL_P2P_LEVEL=SYS", {40, 41, 39}, "", 0, 0, ""},
                             {"NCCL_MIN_CTAS=32", {}, "exit 1: invalid", 0, 0, ""}};
  const auto j = judge_sweep(rows);
  EXPECT_EQ(j[0].verdict, "baseline");
  EXPECT_EQ(j[1].verdict, "helps");
  EXPECT_NEAR(j[1].ratio, 332.0 / 305.0, 1e-12);
  EXPECT_EQ(j[2].verdict, "no clear difference");
  EXPECT_EQ(j[3].verdict, "hurts");
  EXPECT_EQ(j[4].verdict, "did not run");
  const auto once = judge_sweep({{"as is", {300}, "", 0, 0, ""}, {"x", {330}, "", 0, 0, ""}});
  EXPECT_NE(once[1].verdict.find("one trial"), std::string::npos);
  // One GPU (a dry run on an H100 printed "× as is 0.000, no clear difference" for every setting): busbw is 0 for
  // all, and nothing is judged.
  const auto zero = judge_sweep({{"as is", {0, 0, 0}, "", 0, 0, ""}, {"NCCL_ALGO=Ring", {0, 0, 0}, "", 0, 0, ""}});
  EXPECT_EQ(zero[1].verdict, "not comparable: the baseline's busbw is 0");
  EXPECT_EQ(zero[1].ratio, 0.0);
}

}  // namespace
}  // namespace gsq::topo
