// Softmax and softmax + dropout instantiations of the row kernels.
#include "kernels/rowwise.cuh"

#include <algorithm>

namespace gsq::kernels {

cudaError_t launch_norm(RowOp op, DType dtype, const RowArgs& a, cudaStream_t s);
std::vector<std::pair<std::string, const void*>> sample_norm_kernels();

RowArgs with_dropout_fields(RowArgs a) {
  const uint32_t t = dropout_threshold(a.p);
  a.key = philox_key(a.seed);
  a.keep_threshold = std::min<uint32_t>(t, 0xffff);
  a.keep_scale = t > 0xffff ? 0.0f : 1.0f / (1.0f - a.p);
  return a;
}

cudaError_t launch_row(RowOp op, DType dtype, const RowArgs& a, cudaStream_t s) {
  switch (op) {
    case RowOp::softmax:
      return launch_row_op<RowOp::softmax>(dtype, a, s);
    case RowOp::softmax_dropout:
      return launch_row_op<RowOp::softmax_dropout>(dtype, with_dropout_fields(a), s);
    default:
      return launch_norm(op, dtype, a, s);
  }
}

std::vector<std::pair<std::string, const void*>> sample_kernels() {
  auto k = [](auto f) { return reinterpret_cast<const void*>(f); };
  auto out = sample_norm_kernels();
  out.insert(out.end(), {
                            {"softmax f32, 4 accesses/thread", k(&row_kernel<RowOp::softmax, float, 4, 4, true>)},
                            {"softmax_dropout bf16, 4 accesses/thread",
                             k(&row_kernel<RowOp::softmax_dropout, __nv_bfloat16, 8, 4, true>)},
                            {"softmax_dropout f32 scalar, 4 accesses/thread",
                             k(&row_kernel<RowOp::softmax_dropout, float, 1, 4, false>)},
                            {"softmax wide f32", k(&row_kernel_wide<RowOp::softmax, float, 4>)},
                        });
  return out;
}

}  // namespace gsq::kernels
