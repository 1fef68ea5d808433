// Copy exploration 4: the flat copy (one access per thread, no loop) by block size, against cudaMemcpy, 3 rounds.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <functional>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
template <int U>
__global__ void oneshot(float4* __restrict__ a, const float4* __restrict__ b) {
  const size_t base = (size_t)blockIdx.x * blockDim.x * U + threadIdx.x;
  float4 v[U];
#pragma unroll
  for (int k = 0; k < U; ++k) v[k] = b[base + k * blockDim.x];
#pragma unroll
  for (int k = 0; k < U; ++k) a[base + k * blockDim.x] = v[k];
}
static cudaStream_t S;
static float timeit(const std::function<void()>& f, int reps = 21) {
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int i = 0; i < 2; ++i) f();
  std::vector<float> t;
  for (int r = 0; r < reps; ++r) { cudaEventRecord(e0, S); f(); cudaEventRecord(e1, S); CK(cudaEventSynchronize(e1)); float ms; cudaEventElapsedTime(&ms, e0, e1); t.push_back(ms); }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
int main() {
  CK(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking));
  for (size_t bytes : {1ull << 30, 4ull << 30}) {
    const size_t n = bytes / 16;
    float4 *src, *dst;
    CK(cudaMalloc(&src, bytes)); CK(cudaMalloc(&dst, bytes));
    CK(cudaMemset(src, 1, bytes)); CK(cudaMemset(dst, 0, bytes));
    auto gbs = [&](float ms) { return 2.0 * bytes / (ms * 1e-3) / 1e9; };
    for (int round = 0; round < 3; ++round) {
      float mref = timeit([&] { cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, S); });
      printf("== %zu MiB round %d: memcpy %.1f GB/s\n", bytes >> 20, round, gbs(mref));
#define ONE(U, T) { const unsigned g = (unsigned)(n / ((size_t)(T) * (U))); float ms = timeit([&] { oneshot<U><<<g, T, 0, S>>>(dst, src); }); printf("flat U%d x %4d thr  %8.1f GB/s  %.4f x memcpy\n", U, T, gbs(ms), mref / ms); }
      ONE(1, 32) ONE(1, 64) ONE(1, 96) ONE(1, 128) ONE(1, 192) ONE(1, 256) ONE(2, 64) ONE(2, 128)
    }
    cudaFree(src); cudaFree(dst);
  }
}
