// The harness's blocking kernel and the tiny kernels of the core suite.
#include "bench/device_kernels.hpp"

#include "cuda/check.hpp"

#include <algorithm>
#include <cstdint>

namespace gsq::bench {

namespace {

__global__ void blocking_kernel(const volatile int* flag) {
  uint64_t start = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    if (*flag != 0) return;
    uint64_t now = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > 1000000000ULL) return;  // 1 s: never hang the stream if the host cannot release it
  }
}

__global__ void empty_kernel() {}

__global__ void copy_kernel(float4* __restrict__ dst, const float4* __restrict__ src, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = src[i];
}

// Reads every byte of the buffer so that the L2 ends up holding only clean lines of it. The store never happens (the
// buffer is zeroed once, so the XOR of its words is 0) but keeps the loads from being optimised away.
__global__ void l2_flush_kernel(uint4* buffer, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  uint32_t acc = 0;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint4 v = buffer[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) buffer[0].x = acc;
}

__global__ void fill_kernel(float* dst, size_t n, unsigned seed) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    unsigned x = static_cast<unsigned>(i) * 2654435761u ^ seed;
    x ^= x >> 16;
    dst[i] = 1.0f + static_cast<float>(x & 0xffff) * (1.0f / 65536.0f);
  }
}

}  // namespace

void launch_blocking_kernel(const int* flag, cudaStream_t stream) {
  blocking_kernel<<<1, 1, 0, stream>>>(flag);
  GSQ_CUDA_CHECK(cudaGetLastError());
}

void launch_empty_kernel(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
}

void launch_copy_kernel(void* dst, const void* src, size_t bytes, int sm_count, double grid_fraction,
                        cudaStream_t stream) {
  constexpr int kThreads = 512;
  const size_t n = bytes / sizeof(float4);
  const int full = sm_count * 4;  // 4 blocks of 512 threads per SM keeps every SM's load units busy
  const int grid = std::max(1, static_cast<int>(full * grid_fraction));
  const int needed = static_cast<int>(std::min<size_t>((n + kThreads - 1) / kThreads, static_cast<size_t>(grid)));
  copy_kernel<<<std::max(needed, 1), kThreads, 0, stream>>>(static_cast<float4*>(dst), static_cast<const float4*>(src),
                                                            n);
}

void launch_l2_flush(void* buffer, size_t bytes, cudaStream_t stream) {
  const size_t n = bytes / sizeof(uint4);
  const auto grid = static_cast<unsigned>(std::clamp<size_t>((n + 511) / 512, 1, 2048));
  l2_flush_kernel<<<grid, 512, 0, stream>>>(static_cast<uint4*>(buffer), n);
  GSQ_CUDA_CHECK(cudaGetLastError());
}

void launch_fill_kernel(float* dst, size_t n, unsigned seed, cudaStream_t stream) {
  fill_kernel<<<1024, 256, 0, stream>>>(dst, n, seed);
  GSQ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gsq::bench
