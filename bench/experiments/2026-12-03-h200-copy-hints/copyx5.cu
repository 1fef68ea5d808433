// Copy exploration 5: the flat copy (one 16-byte access per thread, 128 threads, no loop) with cache hints on its
// load and store, against cudaMemcpy D2D. Every sample is cold the way the harness makes it (the L2 read-flushed
// with a 256 MiB read first), and the variants take turns inside each repetition, so drift hits all of them alike.
//   nvcc -O3 -std=c++17 -arch=sm_90a -o copyx5 copyx5.cu && ./copyx5
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

__device__ __forceinline__ uint64_t policy_evict_first() {
  uint64_t p; asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p)); return p;
}
__device__ __forceinline__ uint64_t policy_evict_last() {
  uint64_t p; asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p)); return p;
}
__device__ __forceinline__ float4 ld_plain(const float4* p) { return *p; }
__device__ __forceinline__ float4 ld_nc_noalloc(const float4* p) {
  float4 v; asm volatile("ld.global.nc.L1::no_allocate.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p)); return v;
}
__device__ __forceinline__ float4 ld_256b(const float4* p) {
  float4 v; asm volatile("ld.global.L2::256B.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p)); return v;
}
__device__ __forceinline__ float4 ld_policy(const float4* p, uint64_t pol) {
  float4 v; asm volatile("ld.global.L2::cache_hint.v4.f32 {%0,%1,%2,%3}, [%4], %5;" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p), "l"(pol)); return v;
}
__device__ __forceinline__ void st_policy(float4* p, float4 v, uint64_t pol) {
  asm volatile("st.global.L2::cache_hint.v4.f32 [%0], {%1,%2,%3,%4}, %5;" :: "l"(p), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "l"(pol) : "memory");
}
__device__ __forceinline__ void st_noalloc(float4* p, float4 v) {
  asm volatile("st.global.L1::no_allocate.v4.f32 [%0], {%1,%2,%3,%4};" :: "l"(p), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w) : "memory");
}

template <int V>
__global__ void __launch_bounds__(128) flat(float4* __restrict__ a, const float4* __restrict__ b) {
  const size_t i = (size_t)blockIdx.x * 128 + threadIdx.x;
  if constexpr (V == 0) a[i] = b[i];
  if constexpr (V == 1) __stcs(a + i, __ldcs(b + i));
  if constexpr (V == 2) a[i] = ld_nc_noalloc(b + i);
  if constexpr (V == 3) st_noalloc(a + i, ld_nc_noalloc(b + i));
  if constexpr (V == 4) a[i] = ld_256b(b + i);
  if constexpr (V == 5) { const uint64_t p = policy_evict_first(); a[i] = ld_policy(b + i, p); }
  if constexpr (V == 6) { const uint64_t p = policy_evict_first(); st_policy(a + i, ld_policy(b + i, p), p); }
  if constexpr (V == 7) { st_policy(a + i, ld_policy(b + i, policy_evict_first()), policy_evict_last()); }
  if constexpr (V == 8) { st_policy(a + i, b[i], policy_evict_first()); }
}
__global__ void flush_read(const uint4* __restrict__ p, size_t n, unsigned* sink) {
  unsigned acc = 0;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) { const uint4 v = p[i]; acc ^= v.x ^ v.y ^ v.z ^ v.w; }
  if (acc == 0x9e3779b9u) *sink = acc;
}

int main() {
  cudaStream_t S; CK(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking));
  int sms = 0; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t flush_bytes = 256ull << 20;
  uint4* fl; unsigned* sink; CK(cudaMalloc(&fl, flush_bytes)); CK(cudaMalloc(&sink, 4)); CK(cudaMemset(fl, 0, flush_bytes));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  for (size_t bytes : {1ull << 30, 4ull << 30}) {
    const size_t n = bytes / 16; const unsigned g = (unsigned)(n / 128);
    float4 *src, *dst; CK(cudaMalloc(&src, bytes)); CK(cudaMalloc(&dst, bytes));
    CK(cudaMemset(src, 1, bytes)); CK(cudaMemset(dst, 0, bytes));
    std::vector<std::pair<std::string, std::function<void()>>> v = {
      {"cudaMemcpyAsync D2D", [&] { CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, S)); }},
      {"flat plain", [&] { flat<0><<<g, 128, 0, S>>>(dst, src); }},
      {"flat ld.cs / st.cs", [&] { flat<1><<<g, 128, 0, S>>>(dst, src); }},
      {"flat ld.nc.L1::no_allocate", [&] { flat<2><<<g, 128, 0, S>>>(dst, src); }},
      {"flat ld.nc.no_alloc + st.no_alloc", [&] { flat<3><<<g, 128, 0, S>>>(dst, src); }},
      {"flat ld.L2::256B", [&] { flat<4><<<g, 128, 0, S>>>(dst, src); }},
      {"flat ld evict_first", [&] { flat<5><<<g, 128, 0, S>>>(dst, src); }},
      {"flat ld+st evict_first", [&] { flat<6><<<g, 128, 0, S>>>(dst, src); }},
      {"flat ld evict_first, st evict_last", [&] { flat<7><<<g, 128, 0, S>>>(dst, src); }},
      {"flat st evict_first", [&] { flat<8><<<g, 128, 0, S>>>(dst, src); }},
    };
    std::vector<std::vector<float>> t(v.size());
    const int reps = bytes > (1ull << 30) ? 31 : 61;
    for (auto& [name, f] : v) f();  // warm up every path once
    CK(cudaStreamSynchronize(S));
    for (int r = 0; r < reps; ++r)
      for (size_t j = 0; j < v.size(); ++j) {
        const size_t k = (j + r) % v.size();  // rotate who goes first
        flush_read<<<sms * 8, 256, 0, S>>>(fl, flush_bytes / 16, sink);
        CK(cudaEventRecord(e0, S)); v[k].second(); CK(cudaEventRecord(e1, S)); CK(cudaEventSynchronize(e1));
        float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); t[k].push_back(ms);
      }
    CK(cudaGetLastError());
    auto med = [](std::vector<float> x) { std::sort(x.begin(), x.end()); return x[x.size() / 2]; };
    const float ref = med(t[0]);
    printf("== %zu MiB, %d cold reps each, medians\n", bytes >> 20, reps);
    for (size_t k = 0; k < v.size(); ++k) {
      std::vector<float> x = t[k]; std::sort(x.begin(), x.end());
      const float m = x[x.size() / 2];
      printf("%-36s %8.4f ms (p10 %.4f p90 %.4f) %8.1f GB/s  %.4f x memcpy\n", v[k].first.c_str(), m, x[x.size() / 10], x[x.size() * 9 / 10], 2.0 * bytes / (m * 1e-3) / 1e9, ref / m);
    }
    fflush(stdout);
    cudaFree(src); cudaFree(dst);
  }
}
