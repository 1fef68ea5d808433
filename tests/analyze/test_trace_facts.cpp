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

// The kernels channels_last changes: cuDNN's conversions, and PyTorch's NCHW batch norms by their own function name
// (names as torch.profiler and `gpusqueeze trace` record them), not the per-channel elementwise kernels whose functor
// is named after batch norm, nor the channels_last kernels themselves.
TEST(Kernels, TheLayoutFixsKernelsAreToldByName) {
  EXPECT_TRUE(is_layout_transpose("void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16>(int, int)"));
  EXPECT_FALSE(is_layout_transpose("void at::native::vectorized_elementwise_kernel<4>"));
  EXPECT_TRUE(is_nchw_batch_norm(
      "void at::native::batch_norm_transform_input_kernel<c10::BFloat16, float, float, true, int>(torch::x)"));
  EXPECT_TRUE(is_nchw_batch_norm("void at::native::batch_norm_backward_kernel<c10::BFloat16, float, float, int>(a)"));
  EXPECT_TRUE(is_nchw_batch_norm("_ZN2at6native36batch_norm_collect_statistics_kernelINS0_3VarEN3c108BFloat16E"));
  EXPECT_FALSE(
      is_nchw_batch_norm("void at::native::batch_norm_transform_input_channels_last_kernel<c10::BFloat16>(a)"));
  EXPECT_FALSE(is_nchw_batch_norm(
      "void at::native::(anonymous namespace)::unrolled_elementwise_kernel_for_multi_outputs<3, at::native::(anonymous "
      "namespace)::batch_norm_update_stats_and_invert<c10::BFloat16>"));
  EXPECT_FALSE(is_nchw_batch_norm("void at::native::vectorized_elementwise_kernel<4, at::native::batch_norm_kernel>"));
  EXPECT_FALSE(is_nchw_batch_norm("_ZN2at6native"));                // cut short
  EXPECT_FALSE(is_nchw_batch_norm("_ZN2at6native99batch_norm_x"));  // a length past the end
}

}  // namespace
}  // namespace gsq::analyze::detail
