#include <cuda_runtime.h>
#include <cuda_profiler_api.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <functional>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

template <int U>
__global__ void warpc(float4* __restrict__ a, const float4* __restrict__ b, size_t n) {
  const int lane = threadIdx.x & 31;
  const size_t warps = (size_t)gridDim.x * blockDim.x / 32;
  const size_t w = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const size_t chunk = 32 * U, chunks = n / chunk;
  for (size_t c = w; c < chunks; c += warps) {
    float4 v[U];
    const size_t base = c * chunk + lane;
#pragma unroll
    for (int k = 0; k < U; ++k) v[k] = b[base + 32 * k];
#pragma unroll
    for (int k = 0; k < U; ++k) a[base + 32 * k] = v[k];
  }
}
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
// L2 prefetch of the chunk DIST chunks ahead, then the copy.
template <int U, int DIST>
__global__ void warpc_pf(float4* __restrict__ a, const float4* __restrict__ b, size_t n) {
  const int lane = threadIdx.x & 31;
  const size_t warps = (size_t)gridDim.x * blockDim.x / 32;
  const size_t w = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const size_t chunk = 32 * U, chunks = n / chunk;
  for (size_t c = w; c < chunks; c += warps) {
    const size_t pc = c + DIST * warps;
    if (pc < chunks && lane < U * 4) asm volatile("prefetch.global.L2 [%0];" ::"l"(b + pc * chunk + lane * 8));
    float4 v[U];
    const size_t base = c * chunk + lane;
#pragma unroll
    for (int k = 0; k < U; ++k) v[k] = b[base + 32 * k];
#pragma unroll
    for (int k = 0; k < U; ++k) a[base + 32 * k] = v[k];
  }
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
int main(int argc, char** argv) {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const size_t bytes = 4ull << 30, n = bytes / 16;
  float4 *src, *dst;
  CK(cudaMalloc(&src, bytes)); CK(cudaMalloc(&dst, bytes));
  CK(cudaMemset(src, 1, bytes)); CK(cudaMemset(dst, 0, bytes));
  CK(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking));
  auto gbs = [&](float ms) { return 2.0 * bytes / (ms * 1e-3) / 1e9; };
  if (argc > 1 && !strcmp(argv[1], "ncu")) {
    for (int r = 0; r < 2; ++r) {
      cudaProfilerStart(); cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, S); cudaStreamSynchronize(S); cudaProfilerStop();
      cudaProfilerStart(); gs<4><<<sms * 8, 256, 0, S>>>(dst, src, n); cudaStreamSynchronize(S); cudaProfilerStop();
      cudaProfilerStart(); warpc<4><<<sms, 512, 0, S>>>(dst, src, n); cudaStreamSynchronize(S); cudaProfilerStop();
    }
    return 0;
  }
  float mref = timeit([&] { cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, S); });
  printf("memcpy %.1f GB/s\n", gbs(mref));
#define ONE(NAME, KERN, G, T) { float ms = timeit([&] { KERN<<<G, T, 0, S>>>(dst, src, n); }); printf("%-22s grid %5d x %4d  %8.1f GB/s  %.3f x memcpy\n", NAME, G, T, gbs(ms), mref / ms); }
  for (int t : {256, 384, 512, 640, 768, 1024}) { ONE("gs U2", gs<2>, sms, t) ONE("gs U3", gs<3>, sms, t) ONE("gs U4", gs<4>, sms, t) ONE("gs U6", gs<6>, sms, t) }
  for (int t : {256, 384, 512, 640, 768, 1024}) { ONE("warpc U2", warpc<2>, sms, t) ONE("warpc U4", warpc<4>, sms, t) ONE("warpc U8", warpc<8>, sms, t) ONE("warpc U32", warpc<32>, sms, t) }
  for (int g : {sms / 2, sms * 3 / 4, sms, sms * 3 / 2}) { ONE("warpc U4 grid", warpc<4>, g, 512) ONE("warpc U8 grid", warpc<8>, g, 512) ONE("warpc U16 grid", warpc<16>, g, 512) }
  ONE("warpc_pf U4 d4", (warpc_pf<4, 4>), sms, 512) ONE("warpc_pf U4 d16", (warpc_pf<4, 16>), sms, 512)
  ONE("warpc_pf U8 d2", (warpc_pf<8, 2>), sms, 512) ONE("warpc_pf U8 d8", (warpc_pf<8, 8>), sms, 512)
  ONE("warpc_pf U4 d4 8x256", (warpc_pf<4, 4>), sms * 8, 256)
  float m2 = timeit([&] { cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, S); });
  printf("memcpy again %.1f GB/s\n", gbs(m2));
}
