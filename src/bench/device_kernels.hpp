// Kernels the harness and the core suite launch; their bodies live in device_kernels.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace gsq::bench {

// Spins until *flag != 0 (host-mapped memory) or about 1 s has passed, so launches queue up behind it.
void launch_blocking_kernel(const int* flag, cudaStream_t stream);

void launch_empty_kernel(cudaStream_t stream);

// float4 grid-stride copy of `bytes` (a multiple of 16); `grid_fraction` < 1 launches fewer blocks on purpose.
void launch_copy_kernel(void* dst, const void* src, size_t bytes, int sm_count, double grid_fraction,
                        cudaStream_t stream);

// Evicts the L2 by reading `bytes` (twice the L2, zeroed once) so that it holds only clean lines afterwards. A
// memset flush leaves the L2 full of dirty lines, and their write-back (up to the L2's size) lands in the next timed
// kernel, which weighs most on kernels that read little (an INT4 GEMV reads 33 MB at 8192 x 8192).
void launch_l2_flush(void* buffer, size_t bytes, cudaStream_t stream);

// Fills `n` floats with a deterministic pattern (never zeros: zeros can be compressed or short-circuited).
void launch_fill_kernel(float* dst, size_t n, unsigned seed, cudaStream_t stream);

}  // namespace gsq::bench
