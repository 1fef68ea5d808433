// Trace facts the analyses share: interval arithmetic and call classification.
#include "analyze/trace_facts.hpp"

#include <gtest/gtest.h>

namespace gsq::analyze::detail {
namespace {

TEST(Intervals, MergeJoinsOverlapsDropsEmptiesAndCoveredClipsToTheWindow) {
  const auto m = merge({{30, 40}, {0, 10}, {5, 20}, {50, 50}, {20, 25}});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].lo, 0);
  EXPECT_EQ(m[0].hi, 25);
  EXPECT_EQ(m[1].lo, 30);
  EXPECT_EQ(total(m), 35);
  EXPECT_EQ(covered(m, 10, 35), 20);  // 10–25 and 30–35
  EXPECT_EQ(covered(m, 25, 30), 0);
}

TEST(Calls, LaunchesAndWaitsAreToldApart) {
  EXPECT_TRUE(is_launch_call("cudaLaunchKernel"));
  EXPECT_TRUE(is_launch_call("cuGraphLaunch"));
  EXPECT_FALSE(is_launch_call("cudaStreamSynchronize"));
  EXPECT_TRUE(is_sync_call("cudaStreamSynchronize"));
  EXPECT_TRUE(is_sync_call("cudaMemcpy"));  // the synchronous copy waits too
  EXPECT_FALSE(is_sync_call("cudaMemcpyAsync"));
  EXPECT_TRUE(is_gemm_kernel("sm90_xmma_gemm_bf16bf16_bf16f32"));
  EXPECT_FALSE(is_gemm_kernel("vectorized_elementwise_kernel"));
  EXPECT_EQ(size_bucket(4096), "a ≤4 KiB");
  EXPECT_EQ(size_bucket(uint64_t{1} << 30), "e >16 MiB");
}

}  // namespace
}  // namespace gsq::analyze::detail
