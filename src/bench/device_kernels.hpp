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

// Fills `n` floats with a deterministic pattern (never zeros: zeros can be compressed or short-circuited).
void launch_fill_kernel(float* dst, size_t n, unsigned seed, cudaStream_t stream);

}  // namespace gsq::bench
