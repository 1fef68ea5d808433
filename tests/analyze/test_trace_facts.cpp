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

// The precision fixes' kernels: single-precision GEMMs on the CUDA cores (names from the real-model corpus's fp32
// recordings), not the TF32 GEMMs that replace them (a trace of the fixed program must not ask for the fix again), nor
// cuDNN's convolutions (their implicit GEMMs, TF32 by default), nor reduced-precision GEMMs.
TEST(Kernels, ThePrecisionFixsKernelsAreToldByName) {
  EXPECT_TRUE(is_fp32_gemm("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4"));
  EXPECT_TRUE(is_fp32_gemm("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(cutlass_80_simt_sgem"));
  EXPECT_TRUE(is_fp32_gemm("void sgemm_largek_lds64<true, false, 5, 5, 4, 4, 4, 34>(float*, float const*)"));
  EXPECT_FALSE(is_fp32_gemm("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute"));
  EXPECT_FALSE(is_fp32_gemm("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x4_nt_align4>(cutlass)"));
  EXPECT_FALSE(is_fp32_gemm("sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize128x32x8_stage3"));
  EXPECT_FALSE(is_fp32_gemm("nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_bias_TNT"));
  EXPECT_TRUE(
      is_fp32_attention("fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float"));
  EXPECT_FALSE(is_fp32_attention("fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel"));
  EXPECT_FALSE(is_fp32_attention("void at::native::vectorized_elementwise_kernel<4, at::native::f32_kernel>"));
}

}  // namespace
}  // namespace gsq::analyze::detail
