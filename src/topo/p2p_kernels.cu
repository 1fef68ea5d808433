#include "topo/p2p_kernels.hpp"

#include "cuda/check.hpp"

namespace gsq::topo {

namespace {

__global__ void sm_copy_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src, uint64_t n) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = src[i];
}

__device__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Waits until *flag == value; false after timeout_ns.
__device__ bool wait_for(volatile int* flag, int value, uint64_t timeout_ns) {
  const uint64_t start = global_ns();
  while (*flag != value)
    if (global_ns() - start > timeout_ns) return false;
  return true;
}

__device__ void play(volatile int* mine, volatile int* peer, int rounds, bool starter, uint64_t timeout_ns,
                     int* timed_out) {
  for (int r = 1; r <= rounds; ++r) {
    if (starter) {
      *peer = 2 * r - 1;
      __threadfence_system();
      if (!wait_for(mine, 2 * r, timeout_ns)) {
        *timed_out = 1;
        return;
      }
    } else {
      if (!wait_for(mine, 2 * r - 1, timeout_ns)) {
        *timed_out = 1;
        return;
      }
      *peer = 2 * r;
      __threadfence_system();
    }
  }
}

__global__ void pingpong_kernel(volatile int* mine, volatile int* peer, int rounds, bool starter, uint64_t timeout_ns,
                                int* timed_out) {
  play(mine, peer, rounds, starter, timeout_ns, timed_out);
}

// Block 0 starts, block 1 answers; the flags 128 bytes apart (their own cache lines).
__global__ void pingpong_local_kernel(volatile int* flags, int rounds, uint64_t timeout_ns, int* timed_out) {
  volatile int* a = flags;
  volatile int* b = flags + 32;
  if (blockIdx.x == 0)
    play(a, b, rounds, true, timeout_ns, timed_out);
  else
    play(b, a, rounds, false, timeout_ns, timed_out);
}

}  // namespace

void launch_sm_copy(void* dst, const void* src, uint64_t bytes, int blocks, cudaStream_t stream) {
  sm_copy_kernel<<<blocks, 512, 0, stream>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src), bytes / 16);
  GSQ_CUDA_CHECK(cudaGetLastError());
}

void launch_pingpong(volatile int* my_flag, volatile int* peer_flag, int rounds, bool starter, int timeout_ms,
                     int* timed_out, cudaStream_t stream) {
  pingpong_kernel<<<1, 1, 0, stream>>>(my_flag, peer_flag, rounds, starter,
                                       static_cast<uint64_t>(timeout_ms) * 1000000ull, timed_out);
  GSQ_CUDA_CHECK(cudaGetLastError());
}

void launch_pingpong_local(volatile int* flags, int rounds, int timeout_ms, int* timed_out, cudaStream_t stream) {
  pingpong_local_kernel<<<2, 1, 0, stream>>>(flags, rounds, static_cast<uint64_t>(timeout_ms) * 1000000ull, timed_out);
  GSQ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gsq::topo
