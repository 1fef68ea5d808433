// Exploration: why cudaMemcpy D2D beats our copy kernels on H200.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <functional>
#include <string>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

template <class V, int U>
__global__ void gs(V* __restrict__ a, const V* __restrict__ b, size_t n) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (U - 1) * stride < n; i += U * stride) {
    V v[U];
#pragma unroll
    for (int k = 0; k < U; ++k) v[k] = b[i + k * stride];
#pragma unroll
    for (int k = 0; k < U; ++k) a[i + k * stride] = v[k];
  }
  for (; i < n; i += stride) a[i] = b[i];
}

__device__ __forceinline__ float4 ld256(const float4* p) {
  float4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
  return v;
}
template <int U>
__global__ void gs256(float4* __restrict__ a, const float4* __restrict__ b, size_t n) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (U - 1) * stride < n; i += U * stride) {
    float4 v[U];
#pragma unroll
    for (int k = 0; k < U; ++k) v[k] = ld256(b + i + k * stride);
#pragma unroll
    for (int k = 0; k < U; ++k) a[i + k * stride] = v[k];
  }
  for (; i < n; i += stride) a[i] = b[i];
}

// Each warp copies a contiguous chunk of 32*U vectors per step.
template <class V, int U>
__global__ void warpc(V* __restrict__ a, const V* __restrict__ b, size_t n) {
  const int lane = threadIdx.x & 31;
  const size_t warps = (size_t)gridDim.x * blockDim.x / 32;
  const size_t w = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const size_t chunk = 32 * U;
  const size_t chunks = n / chunk;
  for (size_t c = w; c < chunks; c += warps) {
    V v[U];
    const size_t base = c * chunk + lane;
#pragma unroll
    for (int k = 0; k < U; ++k) v[k] = b[base + 32 * k];
#pragma unroll
    for (int k = 0; k < U; ++k) a[base + 32 * k] = v[k];
  }
}

// Each block copies a contiguous range.
template <class V, int U>
__global__ void blockp(V* __restrict__ a, const V* __restrict__ b, size_t n) {
  const size_t per = (n + gridDim.x - 1) / gridDim.x;
  const size_t lo = blockIdx.x * per, hi = (lo + per < n ? lo + per : n);
  size_t i = lo + threadIdx.x;
  const size_t st = blockDim.x;
  for (; i + (U - 1) * st < hi; i += U * st) {
    V v[U];
#pragma unroll
    for (int k = 0; k < U; ++k) v[k] = b[i + k * st];
#pragma unroll
    for (int k = 0; k < U; ++k) a[i + k * st] = v[k];
  }
  for (; i < hi; i += st) a[i] = b[i];
}

// Software pipelined: the next batch's loads issue before this batch's stores.
template <int U>
__global__ void pipe(float4* __restrict__ a, const float4* __restrict__ b, size_t n) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  float4 cur[U];
  if (i + (U - 1) * stride >= n) { for (; i < n; i += stride) a[i] = b[i]; return; }
#pragma unroll
  for (int k = 0; k < U; ++k) cur[k] = b[i + k * stride];
  for (;;) {
    const size_t nx = i + U * stride;
    if (nx + (U - 1) * stride < n) {
      float4 nxt[U];
#pragma unroll
      for (int k = 0; k < U; ++k) nxt[k] = b[nx + k * stride];
#pragma unroll
      for (int k = 0; k < U; ++k) a[i + k * stride] = cur[k];
#pragma unroll
      for (int k = 0; k < U; ++k) cur[k] = nxt[k];
      i = nx;
    } else {
#pragma unroll
      for (int k = 0; k < U; ++k) a[i + k * stride] = cur[k];
      for (i = nx; i < n; i += stride) a[i] = b[i];
      return;
    }
  }
}

__global__ void spin(unsigned long long ns, int* flag) {
  unsigned long long t0; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (;;) { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); if (t - t0 > ns) break; __nanosleep(1000); }
  if (threadIdx.x == 0 && blockIdx.x == 0) *flag = 1;
}

static cudaStream_t S;
static float timeit(const std::function<void()>& f, int reps = 15) {
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> t;
  for (int r = 0; r < reps; ++r) { cudaEventRecord(e0, S); f(); cudaEventRecord(e1, S); CK(cudaEventSynchronize(e1)); float ms; cudaEventElapsedTime(&ms, e0, e1); t.push_back(ms); }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  cudaEventDestroy(e0); cudaEventDestroy(e1);
  return t[t.size() / 2];
}

int main(int argc, char** argv) {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const size_t bytes = 4ull << 30;
  const size_t slack = 64ull << 20;
  char *src, *dst;
  CK(cudaMalloc(&src, bytes + slack)); CK(cudaMalloc(&dst, bytes + slack));
  CK(cudaMemset(src, 1, bytes + slack)); CK(cudaMemset(dst, 0, bytes + slack));
  CK(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking));
  printf("src %p dst %p (dst-src %lld MiB)\n", src, dst, (long long)(dst - src) >> 20);
  auto gbs = [&](float ms) { return 2.0 * bytes / (ms * 1e-3) / 1e9; };
  float mref = timeit([&] { cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, S); });
  printf("memcpy                     %8.1f GB/s\n", gbs(mref));

  // 1. Does cudaMemcpy D2D need the SMs? All thread slots spin 50 ms on one stream; the copy goes on another.
  {
    int* flag; CK(cudaMalloc(&flag, 4)); CK(cudaMemset(flag, 0, 4));
    cudaStream_t s2; cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    cudaEvent_t a0, a1, b1; cudaEventCreate(&a0); cudaEventCreate(&a1); cudaEventCreate(&b1);
    CK(cudaDeviceSynchronize());
    cudaEventRecord(a0, S);
    spin<<<sms * 8, 256, 0, S>>>(50000000ull, flag);
    cudaEventRecord(a1, S);
    cudaStreamWaitEvent(s2, a0);
    cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s2);
    cudaEventRecord(b1, s2);
    CK(cudaDeviceSynchronize());
    float spin_ms, copy_end_ms; cudaEventElapsedTime(&spin_ms, a0, a1); cudaEventElapsedTime(&copy_end_ms, a0, b1);
    printf("spin kernel on all SM slots ended at %.2f ms; memcpy on another stream ended at %.2f ms -> %s\n", spin_ms, copy_end_ms,
           copy_end_ms < spin_ms ? "memcpy ran beside the SM-filling kernel (copy engine)" : "memcpy waited for SMs (kernel)");
  }
  // offsets
  for (size_t off : {0ul, 4096ul, 65536ul, 1ul << 20, (2ul << 20) + 4096, 32ul << 20}) {
    float m = timeit([&] { cudaMemcpyAsync(dst + off, src, bytes, cudaMemcpyDeviceToDevice, S); });
    float k = timeit([&] { gs<float4, 4><<<sms * 8, 256, 0, S>>>((float4*)(dst + off), (const float4*)src, bytes / 16); });
    printf("dst+%-10zu memcpy %8.1f  gs16x4 %8.1f GB/s  ratio %.3f\n", off, gbs(m), gbs(k), m / k);
  }
#define SWEEP(NAME, KERN, V)                                                                                   \
  {                                                                                                           \
    float best = 1e9; int bb = 0, bt = 0;                                                                     \
    for (int bps : {1, 2, 4, 8, 16})                                                                          \
      for (int thr : {128, 256, 512, 1024}) {                                                                 \
        if (bps * thr > 2048) continue;                                                                       \
        float ms = timeit([&] { KERN<<<sms * bps, thr, 0, S>>>((V*)dst, (const V*)src, bytes / sizeof(V)); }, 9); \
        if (ms < best) best = ms, bb = bps, bt = thr;                                                          \
        if (getenv("ALL")) printf("  %-22s %2d/SM x %4d  %8.1f GB/s\n", NAME, bps, thr, gbs(ms));             \
      }                                                                                                       \
    printf("%-26s best %8.1f GB/s (%.3f x memcpy) at %d blocks/SM x %d\n", NAME, gbs(best), mref / best, bb, bt); \
  }
  setenv("ALL", "1", 1);
  SWEEP("gs f2 U4", (gs<float2, 4>), float2)
  SWEEP("gs f2 U8", (gs<float2, 8>), float2)
  SWEEP("gs f4 U1", (gs<float4, 1>), float4)
  SWEEP("gs f4 U2", (gs<float4, 2>), float4)
  SWEEP("gs f4 U4", (gs<float4, 4>), float4)
  SWEEP("gs f4 U8", (gs<float4, 8>), float4)
  SWEEP("gs f4 U16", (gs<float4, 16>), float4)
  SWEEP("gs256 U4", (gs256<4>), float4)
  SWEEP("gs256 U8", (gs256<8>), float4)
  SWEEP("warpc f4 U4", (warpc<float4, 4>), float4)
  SWEEP("warpc f4 U8", (warpc<float4, 8>), float4)
  SWEEP("warpc f4 U16", (warpc<float4, 16>), float4)
  SWEEP("blockp f4 U4", (blockp<float4, 4>), float4)
  SWEEP("blockp f4 U8", (blockp<float4, 8>), float4)
  SWEEP("pipe U2", (pipe<2>), float4)
  SWEEP("pipe U4", (pipe<4>), float4)
  float m2 = timeit([&] { cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, S); });
  printf("memcpy again               %8.1f GB/s\n", gbs(m2));
  return 0;
}
