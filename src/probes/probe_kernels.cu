// Memory-probe kernels. Each thread keeps four independent accesses in flight (the loop is unrolled by four) so the
// number of bytes in flight, not the instruction rate, sets the bandwidth.
#include "probes/probe_kernels.hpp"

#include <algorithm>
#include <cstdint>

namespace gsq::probes {

namespace {

template <class V>
__device__ __forceinline__ float first(const V& v) {
  return reinterpret_cast<const float*>(&v)[0];
}

template <class V>
__device__ __forceinline__ V fma_vec(const V& b, float s, const V& c) {
  V out;
  const float* pb = reinterpret_cast<const float*>(&b);
  const float* pc = reinterpret_cast<const float*>(&c);
  float* po = reinterpret_cast<float*>(&out);
#pragma unroll
  for (int i = 0; i < static_cast<int>(sizeof(V) / sizeof(float)); ++i) po[i] = pb[i] + s * pc[i];
  return out;
}

// A vector of `x` in every lane.
template <class V>
__device__ __forceinline__ V splat(float x) {
  V v;
  float* pv = reinterpret_cast<float*>(&v);
#pragma unroll
  for (int k = 0; k < static_cast<int>(sizeof(V) / sizeof(float)); ++k) pv[k] = x;
  return v;
}

template <class V>
__global__ void read_kernel(const V* __restrict__ b, size_t n, float* __restrict__ sink) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  float acc = 0;
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const V v0 = b[i], v1 = b[i + stride], v2 = b[i + 2 * stride], v3 = b[i + 3 * stride];
    acc += first(v0) + first(v1) + first(v2) + first(v3);
  }
  for (; i < n; i += stride) acc += first(b[i]);
  if (acc == -1.2345f)
    sink[blockIdx.x] = acc;  // data-dependent store: the loads stay, the store practically never runs
}

template <class V>
__global__ void write_kernel(V* __restrict__ a, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const V v = splat<V>(1.5f);
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) a[i] = v;
}

template <class V>
__global__ void copy_kernel(V* __restrict__ a, const V* __restrict__ b, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const V v0 = b[i], v1 = b[i + stride], v2 = b[i + 2 * stride], v3 = b[i + 3 * stride];
    a[i] = v0, a[i + stride] = v1, a[i + 2 * stride] = v2, a[i + 3 * stride] = v3;
  }
  for (; i < n; i += stride) a[i] = b[i];
}

// Flat variant: one access per thread and one block per kFlatThreads accesses, no loop. On the H200 this is the copy
// that matches cudaMemcpy D2D (1.002-1.007x at 1 and 4 GiB back to back, 128 threads, where a persistent grid-stride
// loop gets 0.92-0.95x: bench/results/2026-12-03-h200-copy-explore/): each block reads and writes one 2 KB run and
// retires, and the blocks sweep memory in launch order. Blocks of 96-256 threads are within 0.5% of each other; 64
// are 20% slower (32 resident blocks per SM is then the limit, not threads).
constexpr int kFlatThreads = 128;

// The one element a thread of a flat kernel moves.
__device__ __forceinline__ size_t flat_index() {
  return static_cast<size_t>(blockIdx.x) * kFlatThreads + threadIdx.x;
}

template <class V>
__global__ void __launch_bounds__(kFlatThreads) copy_flat_kernel(V* __restrict__ a, const V* __restrict__ b, size_t n) {
  const size_t i = flat_index();
  if (i < n) a[i] = b[i];
}

// The flat form of the other three operations. On the H200 (bench/results/2026-12-03-h200-probes-flat-ops/, 4 GiB
// cold) it helps only where each thread moves more than one stream: triad 4425 against 4120 GB/s grid-stride, while
// read-only falls to 3379 against 4636 and write-only to 3400 against 4358 GB/s.
template <class V>
__global__ void __launch_bounds__(kFlatThreads)
    read_flat_kernel(const V* __restrict__ b, size_t n, float* __restrict__ sink) {
  const size_t i = flat_index();
  if (i < n && first(b[i]) == -1.2345f) sink[threadIdx.x] = 1;  // as read_kernel: the load stays, the store never runs
}

template <class V>
__global__ void __launch_bounds__(kFlatThreads) write_flat_kernel(V* __restrict__ a, size_t n) {
  const size_t i = flat_index();
  if (i < n) a[i] = splat<V>(1.5f);
}

template <class V>
__global__ void __launch_bounds__(kFlatThreads)
    triad_flat_kernel(V* __restrict__ a, const V* __restrict__ b, const V* __restrict__ c, size_t n) {
  const size_t i = flat_index();
  if (i < n) a[i] = fma_vec(b[i], 0.4f, c[i]);
}

// Streaming variant: eight accesses in flight per thread, loads and stores marked evict-first.
template <class V>
__global__ void copy_streaming_kernel(V* __restrict__ a, const V* __restrict__ b, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 7 * stride < n; i += 8 * stride) {
    V v[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = __ldcs(b + i + k * stride);
#pragma unroll
    for (int k = 0; k < 8; ++k) __stcs(a + i + k * stride, v[k]);
  }
  for (; i < n; i += stride) __stcs(a + i, __ldcs(b + i));
}

// Tiled variant: each block copies contiguous tiles of blockDim × 8 elements (warps coalesced inside the tile, eight
// loads in flight per thread), so each block streams through one DRAM region at a time.
template <class V>
__global__ void copy_tiled_kernel(V* __restrict__ a, const V* __restrict__ b, size_t n) {
  constexpr int kUnroll = 8;
  const size_t tile = static_cast<size_t>(blockDim.x) * kUnroll;
  const size_t full = n / tile * tile;
  for (size_t base = static_cast<size_t>(blockIdx.x) * tile; base < full;
       base += static_cast<size_t>(gridDim.x) * tile) {
    V v[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) v[k] = b[base + static_cast<size_t>(k) * blockDim.x + threadIdx.x];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) a[base + static_cast<size_t>(k) * blockDim.x + threadIdx.x] = v[k];
  }
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = full + static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) a[i] = b[i];
}

// Bulk variant (Hopper's TMA, sm_90+): one thread per block moves tiles of kBulkTile bytes global → shared → global
// with cp.async.bulk, up to kBulkStages tiles per block in flight; the data never passes through registers, and each
// transfer is a 12 KB burst of one DRAM region. 36 KB of stages per block: six blocks per SM.
constexpr int kBulkTile = 12288, kBulkStages = 3, kBulkBlocksPerSm = 6;

__global__ void __launch_bounds__(32) copy_bulk_kernel(char* __restrict__ a, const char* __restrict__ b, size_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __shared__ alignas(128) char buf[kBulkStages][kBulkTile];
  __shared__ alignas(8) uint64_t full[kBulkStages];
  if (threadIdx.x != 0) return;
  const size_t tiles = (bytes + kBulkTile - 1) / kBulkTile, stride = gridDim.x;
  auto smem = [](const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); };
  for (int s = 0; s < kBulkStages; ++s) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(&full[s])));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");  // the barriers, visible to the async proxy
  auto tile_bytes = [&](size_t tile) {
    const size_t left = bytes - tile * kBulkTile;
    return static_cast<uint32_t>(left < kBulkTile ? left : kBulkTile);
  };
  auto load = [&](size_t tile, int s) {
    const uint32_t n = tile_bytes(tile);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem(&full[s])), "r"(n) : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smem(buf[s])),
        "l"(b + tile * kBulkTile), "r"(n), "r"(smem(&full[s]))
        : "memory");
  };
  for (int s = 0; s < kBulkStages; ++s)
    if (blockIdx.x + s * stride < tiles) load(blockIdx.x + s * stride, s);
  size_t i = 0;
  for (size_t tile = blockIdx.x; tile < tiles; tile += stride, ++i) {
    const int s = static_cast<int>(i % kBulkStages);
    const uint32_t parity = static_cast<uint32_t>(i / kBulkStages) & 1u;
    asm volatile(
        "{\n .reg .pred done;\n WAIT%=:\n mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        " @!done bra WAIT%=;\n}" ::"r"(smem(&full[s])),
        "r"(parity)
        : "memory");
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(a + tile * kBulkTile),
                 "r"(smem(buf[s])), "r"(tile_bytes(tile))
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    // Refill the previous step's stage once its store has read it (the store just issued may still be reading).
    const size_t refill = tile - stride + kBulkStages * stride;
    if (i > 0 && refill < tiles) {
      asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
      load(refill, static_cast<int>((i - 1) % kBulkStages));
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#else
  __trap();  // the host side refuses variant=bulk below sm_90
#endif
}

__global__ void fma_chunk_kernel(float* __restrict__ x, size_t n, int iters) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = x[i];
    for (int k = 0; k < iters; ++k) v = v * 0.9999f + 0.0001f;
    x[i] = v;
  }
}

template <class V>
__global__ void triad_kernel(V* __restrict__ a, const V* __restrict__ b, const V* __restrict__ c, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + stride < n; i += 2 * stride) {
    const V b0 = b[i], b1 = b[i + stride], c0 = c[i], c1 = c[i + stride];
    a[i] = fma_vec(b0, 0.4f, c0);
    a[i + stride] = fma_vec(b1, 0.4f, c1);
  }
  for (; i < n; i += stride) a[i] = fma_vec(b[i], 0.4f, c[i]);
}

template <class V>
void launch_typed(MemOp op, void* a, const void* b, const void* c, float* sink, size_t bytes, int sm_count,
                  cudaStream_t s, CacheHint hint) {
  constexpr int kThreads = 256;
  const size_t n = bytes / sizeof(V);
  // Eight blocks of 256 threads per SM: 2048 threads, the most an H100/H200 SM keeps resident.
  const int grid = static_cast<int>(
      std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(sm_count) * 8, (n + kThreads - 1) / kThreads)));
  const auto flat_grid = static_cast<unsigned>((n + kFlatThreads - 1) / kFlatThreads);
  switch (op) {
    case MemOp::read:
      if (hint == CacheHint::flat)
        read_flat_kernel<V><<<flat_grid, kFlatThreads, 0, s>>>(static_cast<const V*>(b), n, sink);
      else
        read_kernel<V><<<grid, kThreads, 0, s>>>(static_cast<const V*>(b), n, sink);
      break;
    case MemOp::write:
      if (hint == CacheHint::flat)
        write_flat_kernel<V><<<flat_grid, kFlatThreads, 0, s>>>(static_cast<V*>(a), n);
      else
        write_kernel<V><<<grid, kThreads, 0, s>>>(static_cast<V*>(a), n);
      break;
    case MemOp::copy:
      if (hint == CacheHint::streaming)
        copy_streaming_kernel<V><<<grid, kThreads, 0, s>>>(static_cast<V*>(a), static_cast<const V*>(b), n);
      else if (hint == CacheHint::tiled)
        copy_tiled_kernel<V><<<grid, kThreads, 0, s>>>(static_cast<V*>(a), static_cast<const V*>(b), n);
      else if (hint == CacheHint::flat)
        copy_flat_kernel<V><<<flat_grid, kFlatThreads, 0, s>>>(static_cast<V*>(a), static_cast<const V*>(b), n);
      else if (hint == CacheHint::bulk)
        copy_bulk_kernel<<<sm_count * kBulkBlocksPerSm, 32, 0, s>>>(static_cast<char*>(a), static_cast<const char*>(b),
                                                                    bytes);
      else
        copy_kernel<V><<<grid, kThreads, 0, s>>>(static_cast<V*>(a), static_cast<const V*>(b), n);
      break;
    case MemOp::triad:
      if (hint == CacheHint::flat)
        triad_flat_kernel<V><<<flat_grid, kFlatThreads, 0, s>>>(static_cast<V*>(a), static_cast<const V*>(b),
                                                                static_cast<const V*>(c), n);
      else
        triad_kernel<V>
            <<<grid, kThreads, 0, s>>>(static_cast<V*>(a), static_cast<const V*>(b), static_cast<const V*>(c), n);
      break;
  }
}

}  // namespace

cudaError_t launch_mem_op(MemOp op, int width, void* a, const void* b, const void* c, float* sink, size_t bytes,
                          int sm_count, cudaStream_t stream, CacheHint hint) {
  switch (width) {
    case 4:
      launch_typed<float>(op, a, b, c, sink, bytes, sm_count, stream, hint);
      break;
    case 8:
      launch_typed<float2>(op, a, b, c, sink, bytes, sm_count, stream, hint);
      break;
    case 16:
      launch_typed<float4>(op, a, b, c, sink, bytes, sm_count, stream, hint);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_fma_chunk(float* x, size_t n, int iters, int sm_count, cudaStream_t stream) {
  const int grid =
      static_cast<int>(std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(sm_count) * 8, (n + 255) / 256)));
  fma_chunk_kernel<<<grid, 256, 0, stream>>>(x, n, iters);
  return cudaGetLastError();
}

}  // namespace gsq::probes
