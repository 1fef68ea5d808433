// Copy exploration 6: the Tensor Memory Accelerator's bulk copies (cp.async.bulk global → shared → global, one
// thread of a warp issuing them) against cudaMemcpy D2D and the probe's flat copy (one 16-byte access per thread,
// blocks of 128, no loop). Two shapes: one chunk per block (no loop; the hardware schedules blocks as it schedules
// the flat copy's), and a persistent grid where each block streams its chunks through S shared-memory stages (a
// chunk's store is issued as soon as its load lands; a stage is refilled once the previous store has read it).
// Samples are cold as in the harness (a 256 MiB read flushes the L2 first) and the variants take turns inside each
// repetition. Every variant's output is checked against the source once before timing.
//   nvcc -O3 -std=c++17 -arch=sm_90a -o copyx6 copyx6.cu && ./copyx6
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void mbar_init(uint64_t* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bar)));
}
__device__ __forceinline__ void fence_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ __forceinline__ void fence_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// Loads bytes from global to shared; the barrier completes when they have landed.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, uint64_t* bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               ::"r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, unsigned phase) {
  asm volatile("{\n .reg .pred p;\n WAIT:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra WAIT;\n}"
               ::"r"(smem_addr(bar)), "r"(phase) : "memory");
}
__device__ __forceinline__ void bulk_store(void* dst, const void* src, unsigned bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(smem_addr(src)), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
template <int N> __device__ __forceinline__ void store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

__global__ void __launch_bounds__(128) flat(float4* __restrict__ a, const float4* __restrict__ b) {
  const size_t i = (size_t)blockIdx.x * 128 + threadIdx.x;
  a[i] = b[i];
}

// One chunk per block of one warp.
__global__ void __launch_bounds__(32) tma_flat(char* __restrict__ dst, const char* __restrict__ src, unsigned chunk) {
  extern __shared__ __align__(128) unsigned char buf[];
  __shared__ uint64_t bar;
  if (threadIdx.x != 0) return;
  mbar_init(&bar);
  fence_init();
  const size_t off = (size_t)blockIdx.x * chunk;
  bulk_load(buf, src + off, chunk, &bar);
  mbar_wait(&bar, 0);
  fence_async();
  bulk_store(dst + off, buf, chunk);
  store_wait_read<0>();
}

// Persistent: block b takes chunks b, b + grid, …, through `stages` buffers of `chunk` bytes.
__global__ void __launch_bounds__(32) tma_stream(char* __restrict__ dst, const char* __restrict__ src, size_t chunks,
                                                 unsigned chunk, int stages) {
  extern __shared__ __align__(128) unsigned char buf[];
  __shared__ uint64_t bar[16];
  if (threadIdx.x != 0) return;
  for (int s = 0; s < stages; ++s) mbar_init(&bar[s]);
  fence_init();
  const size_t mine = blockIdx.x < chunks ? (chunks - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  auto at = [&](size_t i) { return (blockIdx.x + i * gridDim.x) * (size_t)chunk; };
  for (size_t i = 0; i < mine && i < (size_t)stages; ++i) bulk_load(buf + i * chunk, src + at(i), chunk, &bar[i]);
  for (size_t i = 0; i < mine; ++i) {
    const int s = i % stages;
    mbar_wait(&bar[s], (i / stages) & 1);
    fence_async();
    bulk_store(dst + at(i), buf + s * (size_t)chunk, chunk);
    if (i >= 1 && i - 1 + stages < mine) {  // refill the stage the previous store has finished reading
      store_wait_read<1>();
      const int r = (i - 1) % stages;
      bulk_load(buf + r * (size_t)chunk, src + at(i - 1 + stages), chunk, &bar[r]);
    }
  }
  store_wait_read<0>();
}

__global__ void flush_read(const uint4* __restrict__ p, size_t n, unsigned* sink) {
  unsigned acc = 0;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) { const uint4 v = p[i]; acc ^= v.x ^ v.y ^ v.z ^ v.w; }
  if (acc == 0x9e3779b9u) *sink = acc;
}
__global__ void iota(uint32_t* p, size_t n) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = (uint32_t)(i * 2654435761u);
}
__global__ void count_diff(const uint32_t* a, const uint32_t* b, size_t n, unsigned long long* bad) {
  unsigned long long c = 0;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) c += a[i] != b[i];
  if (c) atomicAdd(bad, c);
}

int main() {
  cudaStream_t S; CK(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking));
  int sms = 0; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CK(cudaFuncSetAttribute(tma_flat, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 << 10));
  CK(cudaFuncSetAttribute(tma_stream, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 << 10));
  const size_t flush_bytes = 256ull << 20;
  uint4* fl; unsigned* sink; unsigned long long* bad;
  CK(cudaMalloc(&fl, flush_bytes)); CK(cudaMalloc(&sink, 4)); CK(cudaMalloc(&bad, 8)); CK(cudaMemset(fl, 0, flush_bytes));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  for (size_t bytes : {1ull << 30, 4ull << 30}) {
    const size_t n = bytes / 16; const unsigned g = (unsigned)(n / 128);
    char *src, *dst; CK(cudaMalloc(&src, bytes)); CK(cudaMalloc(&dst, bytes));
    iota<<<sms * 8, 256, 0, S>>>((uint32_t*)src, bytes / 4);
    std::vector<std::pair<std::string, std::function<void()>>> v = {
      {"cudaMemcpyAsync D2D", [&] { CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, S)); }},
      {"flat plain, 128 threads", [&] { flat<<<g, 128, 0, S>>>((float4*)dst, (const float4*)src); }},
    };
    for (unsigned kb : {4u, 8u, 16u, 32u, 64u}) {
      const unsigned c = kb << 10;
      v.push_back({"tma one chunk/block, " + std::to_string(kb) + " KiB",
                   [&, c] { tma_flat<<<(unsigned)(bytes / c), 32, c, S>>>(dst, src, c); }});
    }
    struct Cfg { int per_sm, stages; unsigned kb; };
    for (Cfg k : {Cfg{1, 4, 16}, Cfg{1, 8, 16}, Cfg{1, 4, 32}, Cfg{1, 6, 32}, Cfg{2, 4, 16}, Cfg{2, 3, 32}, Cfg{4, 4, 8}, Cfg{4, 2, 16}}) {
      const unsigned c = k.kb << 10;
      v.push_back({"tma stream " + std::to_string(k.per_sm) + "/SM x " + std::to_string(k.stages) + " x " + std::to_string(k.kb) + " KiB",
                   [&, k, c] { tma_stream<<<sms * k.per_sm, 32, (size_t)k.stages * c, S>>>(dst, src, bytes / c, c, k.stages); }});
    }
    for (auto& [name, f] : v) {  // check each path once, then warm
      CK(cudaMemsetAsync(dst, 0, bytes, S)); CK(cudaMemsetAsync(bad, 0, 8, S));
      f();
      count_diff<<<sms * 8, 256, 0, S>>>((const uint32_t*)dst, (const uint32_t*)src, bytes / 4, bad);
      unsigned long long h = 0; CK(cudaMemcpyAsync(&h, bad, 8, cudaMemcpyDeviceToHost, S)); CK(cudaStreamSynchronize(S));
      if (h) { printf("%s: %llu words differ\n", name.c_str(), h); return 2; }
    }
    std::vector<std::vector<float>> t(v.size());
    const int reps = bytes > (1ull << 30) ? 31 : 61;
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
    printf("== %zu MiB, %d cold reps each, medians (all outputs checked)\n", bytes >> 20, reps);
    for (size_t k = 0; k < v.size(); ++k) {
      std::vector<float> x = t[k]; std::sort(x.begin(), x.end());
      const float m = x[x.size() / 2];
      printf("%-40s %8.4f ms (p10 %.4f p90 %.4f) %8.1f GB/s  %.4f x memcpy\n", v[k].first.c_str(), m, x[x.size() / 10], x[x.size() * 9 / 10], 2.0 * bytes / (m * 1e-3) / 1e9, ref / m);
    }
    fflush(stdout);
    cudaFree(src); cudaFree(dst);
  }
}
