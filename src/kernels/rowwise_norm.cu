// LayerNorm, RMSNorm and the residual add + RMSNorm instantiations of the row kernels (split from softmax so the two
// compile in parallel).
#include "kernels/rowwise.cuh"

namespace gsq::kernels {

cudaError_t launch_norm(RowOp op, DType dtype, const RowArgs& a, cudaStream_t s) {
  if (op == RowOp::layer_norm) return launch_row_op<RowOp::layer_norm>(dtype, a, s);
  if (op == RowOp::add_rms_norm) return launch_row_op<RowOp::add_rms_norm>(dtype, a, s);
  return launch_row_op<RowOp::rms_norm>(dtype, a, s);
}

std::vector<std::pair<std::string, const void*>> sample_norm_kernels() {
  auto k = [](auto f) { return reinterpret_cast<const void*>(f); };
  using bf16 = __nv_bfloat16;
  return {
      {"layer_norm bf16, 1 access/thread", k(&row_kernel<RowOp::layer_norm, bf16, 8, 1, true>)},
      {"layer_norm bf16, 4 accesses/thread", k(&row_kernel<RowOp::layer_norm, bf16, 8, 4, true>)},
      {"layer_norm f32 scalar, 2 accesses/thread", k(&row_kernel<RowOp::layer_norm, float, 1, 2, false>)},
      {"rms_norm f16, 2 accesses/thread", k(&row_kernel<RowOp::rms_norm, __half, 8, 2, false>)},
      {"layer_norm wide bf16", k(&row_kernel_wide<RowOp::layer_norm, bf16, 8>)},
      {"layer_norm bf16 few rows, 4 accesses/thread", k(&row_kernel_few<RowOp::layer_norm, bf16, 8, 4, false>)},
      {"add_rms_norm f16 few rows, 4 accesses/thread", k(&row_kernel_few<RowOp::add_rms_norm, __half, 8, 4, true>)},
  };
}

}  // namespace gsq::kernels
