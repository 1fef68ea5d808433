// Copy exploration 7: the flat copy (one 16-byte access per thread, no loop) against cudaMemcpy D2D at 1, 4 and 8 GiB,
// varying what earlier explorations left alone: how many blocks an SM holds (capped through shared memory), the
// order the blocks sweep memory in (two halves at once, reversed, clusters of 2 and 4, four launches of a quarter),
// the L1 path (ld/st .cg) and an L2 evict-first store policy. Every output is checked against its source first; every
// sample is cold (a 256 MiB read flushes the L2 before it) and the variants take turns inside each repetition.
//   nvcc -O3 -std=c++17 -arch=sm_90a -o copyx7 copyx7.cu && ./copyx7
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>
#define CK(x)                                                                   \
  do {                                                                          \
    cudaError_t e = (x);                                                        \
    if (e != cudaSuccess) {                                                     \
      printf("CUDA %s at line %d: %s\n", cudaGetErrorString(e), __LINE__, #x); \
      exit(1);                                                                  \
    }                                                                           \
  } while (0)

enum Order { kPlain, kHalves, kReverse };

template <int THREADS, int ORDER, int PATH>
__global__ void __launch_bounds__(THREADS) flat(float4* __restrict__ a, const float4* __restrict__ b) {
  extern __shared__ char unused[];  // only there to cap the blocks an SM holds
  size_t blk = blockIdx.x;
  if constexpr (ORDER == kHalves) blk = (blk >> 1) + (blk & 1) * (gridDim.x / 2);
  if constexpr (ORDER == kReverse) blk = gridDim.x - 1 - blk;
  const size_t i = blk * THREADS + threadIdx.x;
  if constexpr (PATH == 0) a[i] = b[i];
  if constexpr (PATH == 1) a[i] = __ldcg(b + i);
  if constexpr (PATH == 2) __stcg(a + i, __ldcg(b + i));
  if constexpr (PATH == 3) {
    uint64_t p;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
    const float4 v = b[i];
    asm volatile("st.global.L2::cache_hint.v4.f32 [%0], {%1,%2,%3,%4}, %5;" ::"l"(a + i), "f"(v.x), "f"(v.y), "f"(v.z),
                 "f"(v.w), "l"(p)
                 : "memory");
  }
}

__global__ void flush_read(const uint4* __restrict__ p, size_t n, unsigned* sink) {
  unsigned acc = 0;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

__global__ void fill(uint4* p, size_t n, unsigned seed) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const unsigned h = (unsigned)(i * 2654435761u) ^ seed;
    p[i] = make_uint4(h, h * 3u + 1u, h ^ 0x5bd1e995u, ~h);
  }
}

__global__ void count_diff(const uint4* a, const uint4* b, size_t n, unsigned long long* bad) {
  unsigned long long c = 0;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const uint4 x = a[i], y = b[i];
    c += (x.x != y.x) | (x.y != y.y) | (x.z != y.z) | (x.w != y.w);
  }
  if (c) atomicAdd(bad, c);
}

template <int THREADS, int ORDER, int PATH>
void launch(float4* dst, const float4* src, size_t n, cudaStream_t s, int smem, int cluster) {
  auto k = flat<THREADS, ORDER, PATH>;
  const unsigned g = (unsigned)(n / THREADS);
  if (smem) {
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CK(cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
  }
  if (cluster > 1) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(g), cfg.blockDim = dim3(THREADS), cfg.dynamicSmemBytes = smem, cfg.stream = s;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = cluster, at[0].val.clusterDim.y = 1, at[0].val.clusterDim.z = 1;
    cfg.attrs = at, cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, k, dst, src));
  } else {
    k<<<g, THREADS, smem, s>>>(dst, src);
  }
}

int main() {
  cudaStream_t S;
  CK(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t flush_bytes = 256ull << 20;
  uint4* fl;
  unsigned* sink;
  unsigned long long* bad;
  CK(cudaMalloc(&fl, flush_bytes));
  CK(cudaMalloc(&sink, 4));
  CK(cudaMalloc(&bad, 8));
  CK(cudaMemset(fl, 0, flush_bytes));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (size_t bytes : {1ull << 30, 4ull << 30, 8ull << 30}) {
    const size_t n = bytes / 16;
    float4 *src, *dst;
    CK(cudaMalloc(&src, bytes));
    CK(cudaMalloc(&dst, bytes));
    fill<<<sms * 8, 256, 0, S>>>(reinterpret_cast<uint4*>(src), n, 12345u);
    CK(cudaMemsetAsync(dst, 0, bytes, S));
    using L = std::function<void()>;
    std::vector<std::pair<std::string, L>> v = {
        {"cudaMemcpyAsync D2D", [&] { CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, S)); }},
        {"flat 128 (the probe's)", [&] { launch<128, kPlain, 0>(dst, src, n, S, 0, 1); }},
        {"flat 256", [&] { launch<256, kPlain, 0>(dst, src, n, S, 0, 1); }},
        {"flat 512", [&] { launch<512, kPlain, 0>(dst, src, n, S, 0, 1); }},
        {"flat 128, carveout, 16 blocks/SM", [&] { launch<128, kPlain, 0>(dst, src, n, S, 13 << 10, 1); }},
        {"flat 128, 12 blocks/SM", [&] { launch<128, kPlain, 0>(dst, src, n, S, 18 << 10, 1); }},
        {"flat 128, 8 blocks/SM", [&] { launch<128, kPlain, 0>(dst, src, n, S, 27 << 10, 1); }},
        {"flat 256, 6 blocks/SM", [&] { launch<256, kPlain, 0>(dst, src, n, S, 36 << 10, 1); }},
        {"flat 128, ld.cg", [&] { launch<128, kPlain, 1>(dst, src, n, S, 0, 1); }},
        {"flat 128, ld.cg + st.cg", [&] { launch<128, kPlain, 2>(dst, src, n, S, 0, 1); }},
        {"flat 128, st L2 evict_first", [&] { launch<128, kPlain, 3>(dst, src, n, S, 0, 1); }},
        {"flat 128, two halves at once", [&] { launch<128, kHalves, 0>(dst, src, n, S, 0, 1); }},
        {"flat 128, reversed", [&] { launch<128, kReverse, 0>(dst, src, n, S, 0, 1); }},
        {"flat 128, clusters of 2", [&] { launch<128, kPlain, 0>(dst, src, n, S, 0, 2); }},
        {"flat 128, clusters of 4", [&] { launch<128, kPlain, 0>(dst, src, n, S, 0, 4); }},
        {"flat 128, four launches of 1/4", [&] {
           for (int q = 0; q < 4; ++q) launch<128, kPlain, 0>(dst + q * (n / 4), src + q * (n / 4), n / 4, S, 0, 1);
         }},
    };
    for (auto& [name, f] : v) {  // every variant must copy exactly
      CK(cudaMemsetAsync(dst, 0, bytes, S));
      CK(cudaMemsetAsync(bad, 0, 8, S));
      f();
      count_diff<<<sms * 8, 256, 0, S>>>(reinterpret_cast<const uint4*>(dst), reinterpret_cast<const uint4*>(src), n,
                                         bad);
      unsigned long long h = 0;
      CK(cudaMemcpyAsync(&h, bad, 8, cudaMemcpyDeviceToHost, S));
      CK(cudaStreamSynchronize(S));
      if (h) {
        printf("%s: %llu of %zu 16-byte words wrong\n", name.c_str(), h, n);
        return 2;
      }
    }
    std::vector<std::vector<float>> t(v.size());
    const int reps = bytes == (1ull << 30) ? 101 : (bytes == (4ull << 30) ? 61 : 41);
    for (int r = 0; r < reps; ++r)
      for (size_t j = 0; j < v.size(); ++j) {
        const size_t k = (j + r) % v.size();  // rotate who goes first
        flush_read<<<sms * 8, 256, 0, S>>>(fl, flush_bytes / 16, sink);
        CK(cudaEventRecord(e0, S));
        v[k].second();
        CK(cudaEventRecord(e1, S));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t[k].push_back(ms);
      }
    CK(cudaGetLastError());
    auto med = [](std::vector<float> x) {
      std::sort(x.begin(), x.end());
      return x[x.size() / 2];
    };
    const float ref = med(t[0]);
    printf("== %zu MiB, %d cold reps each, medians (outputs checked)\n", bytes >> 20, reps);
    for (size_t k = 0; k < v.size(); ++k) {
      std::vector<float> x = t[k];
      std::sort(x.begin(), x.end());
      const float m = x[x.size() / 2];
      printf("%-36s %8.4f ms (p10 %.4f p90 %.4f) %8.1f GB/s  %.4f x memcpy\n", v[k].first.c_str(), m,
             x[x.size() / 10], x[x.size() * 9 / 10], 2.0 * bytes / (m * 1e-3) / 1e9, ref / m);
    }
    fflush(stdout);
    CK(cudaFree(src));
    CK(cudaFree(dst));
  }
  return 0;
}
