// Internal launchers behind the C ABI (api.cpp validates, these only dispatch and launch). Host-only declarations.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/philox.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gsq::kernels {

enum class DType { f32 = 0, f16 = 1, bf16 = 2 };
// add_rms_norm: RMSNorm of the residual stream's new value x + residual, written back to the residual (a decoder
// layer's fused residual add and norm).
enum class RowOp { layer_norm, rms_norm, softmax, softmax_dropout, add_rms_norm };

[[nodiscard]] constexpr int dtype_size(DType t) {
  return t == DType::f32 ? 4 : 2;
}

struct RowArgs {
  void* y = nullptr;
  const void* x = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;
  int64_t rows = 0, cols = 0;
  float eps = 0, p = 0;
  uint64_t seed = 0, offset = 0;
  // Dropout as the kernels use it, derived from p and seed by launch_row: the round keys, the 16-bit keep threshold
  // (dropout_threshold(p), at most 65535) and the scale of kept values (1 / (1 - p); 0 when nothing is kept).
  PhiloxKey key{};
  uint32_t keep_threshold = 0;
  float keep_scale = 1;
  void* residual = nullptr;  // add_rms_norm: read, then overwritten with x + residual (rounded to the dtype)
};

// How a row operation is spread over the GPU for a given width (what dispatch_row picks; tests and `kernels` show it).
struct RowPlan {
  bool vector = false;          // 16-byte accesses (cols and pointers allow them), else one element per access
  int elems_per_access = 1;     // 16 / sizeof(T) when vector
  int threads_per_row = 32;     // a warp, or a whole block
  int accesses_per_thread = 0;  // 1, 2, 4 or 8 (norms); 0: the row does not fit in registers, a block reads it twice
  int block_threads = 128;
  int rows_per_thread = 1;  // 2: the norms' threads take two rows each, sharing one load of weight and bias
  // Two reads (accesses_per_thread 0): accesses in flight a thread per step, and whether the first read keeps the row
  // in L1/L2 (evict-last) and the second lets it go (evict-first).
  int in_flight = 4;
  bool cache_hints = false;
  // Two reads: blocks an SM the compiler is asked to fit (__launch_bounds__ minimum blocks, so registers are capped at
  // 65536 / (block_threads × min_blocks)); 1 leaves the register count to the compiler.
  int min_blocks = 1;
  // Two reads with cache_hints: whether the second read is marked evict-first too; false: a plain load (the row is
  // still in L1).
  bool hint_second_read = true;
  // The span kernel (16-byte packs of the buffer a row overlaps, the row's first and last pack element by element):
  // rows whose width is not a multiple of 16 bytes, and rows too few to fill the GPU, split over `parts` blocks of a
  // thread-block cluster. Two reads a block of block_threads.
  bool span = false;
  int parts = 1;
  // Rows too few to give half the SMs a block, held in registers (16-byte rows of up to 2048 accesses): latency, not
  // bandwidth, bounds them, so a row takes one block of up to 512 threads with one to four accesses each, the norms
  // load their weight (and bias) beside x, and LayerNorm's two statistics share one reduction.
  bool few = false;
  [[nodiscard]] std::string describe() const;
};
// The plan for `op` over `rows` rows of `cols` elements (aligned16: every pointer is 16-byte aligned). rows = 0:
// rows enough to fill the GPU. sms: the GPU's SMs where a row may be split over a cluster (0: never; compute
// capability 9.0 and later have clusters).
[[nodiscard]] RowPlan plan_row(RowOp op, DType dtype, int64_t cols, bool aligned16, int64_t rows = 0, int sms = 0);

cudaError_t launch_row(RowOp op, DType dtype, const RowArgs& a, cudaStream_t stream);
// `a` with dropout's derived fields (key, keep_threshold, keep_scale) filled from p and seed, as launch_row fills them
// before a softmax + dropout kernel runs.
[[nodiscard]] RowArgs with_dropout_fields(RowArgs a);
// y[b][s][r] = x[b][r][s] for b < batches, r < rows_, s < cols_.
cudaError_t launch_transpose(DType dtype, void* y, const void* x, int64_t batches, int64_t rows, int64_t cols,
                             cudaStream_t stream);

// Weight-only quantized GEMM (quant.hpp has the layouts). params: INT4 fp16 (scale, offset) pairs; INT8 fp32 scales.
struct QuantArgs {
  void* y = nullptr;
  const void* x = nullptr;
  const void* w = nullptr;
  const void* params = nullptr;
  const void* bias = nullptr;
  int64_t m = 0, n = 0, k = 0, group = 0;
};
cudaError_t launch_quant_gemm(bool int4, DType dtype, const QuantArgs& a, cudaStream_t stream);

// Normal(0, 1) values of the dtype from Philox (seeded), written on the device: benchmark inputs.
cudaError_t fill_normal(DType dtype, void* y, int64_t n, uint64_t seed, cudaStream_t s);

// Representative instantiations (name, kernel address) for checking the occupancy arithmetic against the runtime.
[[nodiscard]] std::vector<std::pair<std::string, const void*>> sample_kernels();

}  // namespace gsq::kernels
