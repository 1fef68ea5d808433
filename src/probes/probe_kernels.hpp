// Memory-probe kernels (BabelStream-style read, write, copy, triad) for 4-, 8- and 16-byte accesses.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace gsq::probes {

enum class MemOp { read, write, copy, triad };
// Variant of the copy kernel: `normal` grid-stride loop, four accesses in flight; `streaming` marks loads and stores
// evict-first (ld.global.cs/st.global.cs), eight in flight; `tiled` has each block copy contiguous tiles, eight in
// flight; `bulk` moves 12 KB tiles through shared memory with the TMA (cp.async.bulk, sm_90+; width is ignored);
// `flat` is one access per thread and a block per 128, no loop (level with cudaMemcpy on the H200). The probe measures
// all five next to cudaMemcpy. Read, write and triad take `normal` (grid-stride) and `flat`; other hints are ignored.
enum class CacheHint { normal, streaming, tiled, bulk, flat };

// Bytes each operation moves per element of `elem_bytes`, as BabelStream counts them: read 1, write 1, copy 2, triad 3.
[[nodiscard]] constexpr double bytes_moved(MemOp op, size_t elems, size_t elem_bytes) {
  const double per = op == MemOp::copy ? 2.0 : op == MemOp::triad ? 3.0 : 1.0;
  return per * static_cast<double>(elems) * static_cast<double>(elem_bytes);
}

// Launches `op` over `bytes` of each buffer (a multiple of `width`), with `width` in {4, 8, 16}; `sink` receives one
// value per block for `read` so the loads are not optimised away. Returns cudaErrorInvalidValue for a bad width.
cudaError_t launch_mem_op(MemOp op, int width, void* a, const void* b, const void* c, float* sink, size_t bytes,
                          int sm_count, cudaStream_t stream, CacheHint hint = CacheHint::normal);

// A compute-bound kernel over `n` floats (`iters` dependent FMAs per element), the compute half of `probe overlap`.
cudaError_t launch_fma_chunk(float* x, size_t n, int iters, int sm_count, cudaStream_t stream);

}  // namespace gsq::probes
