// Copy exploration 3: one tile per block (no grid-stride loop), the way the row kernels walk memory.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <functional>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

template <int U>
__global__ void gs(float4* __restrict__ a, const float4* __restrict__ b, size_t n) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (U - 1) * stride < n; i += U * stride) {
    float4 v[U];
#pragma unroll
    for (int k = 0; k < U; ++k) v[k] = b[i + k * stride];
#pragma unroll
    for (int k = 0; k < U; ++k) a[i + k * stride] = v[k];
  }
  for (; i < n; i += stride) a[i] = b[i];
}
// One tile of blockDim * U vectors per block; n is a multiple of the tile.
template <int U>
__global__ void oneshot(float4* __restrict__ a, const float4* __restrict__ b) {
  const size_t base = (size_t)blockIdx.x * blockDim.x * U + threadIdx.x;
  float4 v[U];
#pragma unroll
  for (int k = 0; k < U; ++k) v[k] = b[base + k * blockDim.x];
#pragma unroll
  for (int k = 0; k < U; ++k) a[base + k * blockDim.x] = v[k];
}
// One tile per block, each thread's U vectors adjacent (base + tid*U + k).
template <int U>
__global__ void oneshot_adj(float4* __restrict__ a, const float4* __restrict__ b) {
  const size_t base = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * U;
  float4 v[U];
#pragma unroll
  for (int k = 0; k < U; ++k) v[k] = b[base + k];
#pragma unroll
  for (int k = 0; k < U; ++k) a[base + k] = v[k];
}
static cudaStream_t S;
static float timeit(const std::function<void()>& f, int reps = 11) {
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int i = 0; i < 2; ++i) f();
  std::vector<float> t;
  for (int r = 0; r < reps; ++r) { cudaEventRecord(e0, S); f(); cudaEventRecord(e1, S); CK(cudaEventSynchronize(e1)); float ms; cudaEventElapsedTime(&ms, e0, e1); t.push_back(ms); }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  for (size_t bytes : {256ull << 20, 1ull << 30, 4ull << 30}) {
    const size_t n = bytes / 16;
    float4 *src, *dst;
    CK(cudaMalloc(&src, bytes)); CK(cudaMalloc(&dst, bytes));
    CK(cudaMemset(src, 1, bytes)); CK(cudaMemset(dst, 0, bytes));
    CK(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking));
    // 256 MiB fits... no: L2 is 60 MB, so 256 MiB is past it; time back to back like the other sizes.
    auto gbs = [&](float ms) { return 2.0 * bytes / (ms * 1e-3) / 1e9; };
    float mref = timeit([&] { cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, S); });
    printf("== %zu MiB: memcpy %.1f GB/s\n", bytes >> 20, gbs(mref));
    { float ms = timeit([&] { gs<4><<<sms * 8, 256, 0, S>>>(dst, src, n); }); printf("gs U4 8/SM x 256      %8.1f GB/s  %.3f x memcpy\n", gbs(ms), mref / ms); }
#define ONE(NAME, KERN, U, T) { const unsigned g = (unsigned)(n / ((size_t)(T) * (U))); float ms = timeit([&] { KERN<U><<<g, T, 0, S>>>(dst, src); }); printf("%-12s U%-2d x %4d thr  %8.1f GB/s  %.3f x memcpy\n", NAME, U, T, gbs(ms), mref / ms); }
    for (int t : {128, 256, 512, 1024}) { ONE("oneshot", oneshot, 1, t) ONE("oneshot", oneshot, 2, t) ONE("oneshot", oneshot, 4, t) ONE("oneshot", oneshot, 8, t) }
    for (int t : {128, 256, 512}) { ONE("oneshot_adj", oneshot_adj, 2, t) ONE("oneshot_adj", oneshot_adj, 4, t) }
    float m2 = timeit([&] { cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, S); });
    printf("memcpy again %.1f GB/s\n", gbs(m2));
    cudaFree(src); cudaFree(dst);
  }
}
