// Experiment (not shipped): RMSNorm (and LayerNorm 16384) bf16 kernels beside the shipped plan and torch.compile, for
// the widths where torch.compile was ahead (8192: 0.991, 256: 0.997-0.999). Built as a shared library for rowx9.py:
//   nvcc -O3 -std=c++20 -arch=sm_90 -Xcompiler -fPIC -shared -I src -o rowx9.so rowx9.cu
// Variants (one row a block unless said):
//   two-read     the shipped two-read kernel's shape with K accumulators (1: the shipped chain of FMAs; 8: one per
//                element of a pack, as Inductor's element-wise partial sums) and 32-bit in-row indices; the weight
//                loaded beside the second read's use, as shipped; some without the reduction's trailing barrier,
//                with streaming or L2 evict-first stores, or with other cache policies on the two reads
//   regs/POLICY  the row in registers (THREADS x VPT packs), x loaded plainly, L1::no_allocate, evict-first (L1 and
//                L2) or through the read-only path; the weight loaded at the store, or before the reduction (early)
//   pipe         the row in registers, each block taking rows blockIdx.x + k * gridDim.x with the next row's loads
//                issued before this row's reduction (grid: the SM count times the blocks that fit)
//   rows         the library's register kernel (row_kernel) at other rows-per-thread / block shapes (width 256/512)
//   layer_norm   the library's two-read kernel for LayerNorm 16384 at other blocks, accesses in flight, blocks an SM
#include "kernels/rowwise.cuh"

#include <cstdio>
#include <string>
#include <vector>

namespace gsq::kernels {
namespace {

using bf16 = __nv_bfloat16;
using P = Pack<bf16, 8>;

enum Policy { kPlain, kNoAlloc, kEvictFirst, kReadOnly };

template <int POLICY>
__device__ __forceinline__ P load_x(const P* p, uint64_t drop) {
  uint4 v;
  if constexpr (POLICY == kPlain) {
    return *p;
  } else if constexpr (POLICY == kNoAlloc) {
    asm volatile("ld.global.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
  } else if constexpr (POLICY == kEvictFirst) {
    asm volatile("ld.global.L1::evict_first.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p), "l"(drop));
  } else {
    v = __ldg(reinterpret_cast<const uint4*>(p));
  }
  P out;
  memcpy(&out, &v, sizeof out);
  return out;
}

__device__ __forceinline__ float sumsq(const P& v, float acc) {
  float f[8];
  unpack(v, f);
#pragma unroll
  for (int k = 0; k < 8; ++k) acc = fmaf(f[k], f[k], acc);
  return acc;
}

__device__ __forceinline__ P scale_pack(const P& v, const P& w, float scale) {
  float f[8], g[8];
  unpack(v, f);
  unpack(w, g);
  P out;
#pragma unroll
  for (int k = 0; k < 8; ++k) out.v[k] = Conv<bf16>::from(f[k] * scale * g[k]);
  return out;
}

// The block's sum without the trailing barrier (the kernel's only reduction: scratch is not reused).
__device__ __forceinline__ float block_sum_once(float v, float* scratch) {
  v = warp_allreduce(v, SumOp{});
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return warp_allreduce(lane < blockDim.x / 32 ? scratch[lane] : 0.0f, SumOp{});
}

// Stores: kStorePlain, streaming (st.global.cs), or L2 evict-first.
enum Store { kStorePlain, kStoreCs, kStoreEvictFirst };
template <int STORE>
__device__ __forceinline__ void store_y(P* p, const P& v, uint64_t drop) {
  if constexpr (STORE == kStorePlain) {
    *p = v;
  } else {
    uint4 u;
    memcpy(&u, &v, sizeof u);
    if constexpr (STORE == kStoreCs)
      asm volatile("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(u.x), "r"(u.y), "r"(u.z), "r"(u.w)
                   : "memory");
    else
      asm volatile("st.global.L1::no_allocate.L2::cache_hint.v4.u32 [%0], {%1,%2,%3,%4}, %5;" ::"l"(p), "r"(u.x),
                   "r"(u.y), "r"(u.z), "r"(u.w), "l"(drop)
                   : "memory");
  }
}

// Cache policies of the two reads (HINTS of the shipped kernel: kFirstL1L2 / kSecondL1L2).
enum ReadPolicy { kFirstL1L2, kFirstL1, kSecondL1L2, kSecondL1, kSecondPlain, kFirstL2 };
template <int POLICY>
__device__ __forceinline__ P read_x(const P* p, uint64_t policy) {
  uint4 v;
  if constexpr (POLICY == kFirstL1L2 || POLICY == kSecondL1L2) {
    return load_hinted(p, policy, POLICY == kFirstL1L2);
  } else if constexpr (POLICY == kFirstL1) {
    asm volatile("ld.global.L1::evict_last.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
  } else if constexpr (POLICY == kSecondL1) {
    asm volatile("ld.global.L1::evict_first.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
  } else if constexpr (POLICY == kFirstL2) {
    asm volatile("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p), "l"(policy));
  } else {
    return *p;
  }
  P out;
  memcpy(&out, &v, sizeof out);
  return out;
}

// Two reads with hints (the shipped shape) with ACC partial sums a thread and 32-bit in-row indices; ONE_BARRIER:
// the reduction without its trailing barrier; STORE: how y is written; FIRST / SECOND: the reads' cache policies.
template <int THREADS, int UNROLL, int MIN_BLOCKS, int ACC, bool ONE_BARRIER = false, int STORE = kStorePlain,
          int FIRST = kFirstL1L2, int SECOND = kSecondL1L2>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS) two_read(RowArgs a) {
  __shared__ float scratch[64];
  const int nvec = static_cast<int>(a.cols / 8);
  const P* x = reinterpret_cast<const P*>(static_cast<const bf16*>(a.x) + blockIdx.x * a.cols);
  uint64_t keep, drop;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(keep));
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(drop));
  float acc[ACC];
#pragma unroll
  for (int i = 0; i < ACC; ++i) acc[i] = 0;
  for (int base = threadIdx.x; base < nvec; base += THREADS * UNROLL) {
    P v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      if (base + u * THREADS < nvec) v[u] = read_x<FIRST>(x + base + u * THREADS, keep);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      if (base + u * THREADS < nvec) {
        float f[8];
        unpack(v[u], f);
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          float& s = acc[ACC == 8 ? k : (ACC == UNROLL ? u : 0)];
          s = fmaf(f[k], f[k], s);
        }
      }
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < ACC; ++i) s += acc[i];
  const float total = ONE_BARRIER ? block_sum_once(s, scratch) : row_allreduce(s, THREADS, scratch, SumOp{});
  const float scale = rsqrtf(total / static_cast<float>(a.cols) + a.eps);
  const P* w = static_cast<const P*>(a.weight);
  P* y = reinterpret_cast<P*>(static_cast<bf16*>(a.y) + blockIdx.x * a.cols);
  for (int base = threadIdx.x; base < nvec; base += THREADS * UNROLL) {
    P v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      if (base + u * THREADS < nvec) v[u] = read_x<SECOND>(x + base + u * THREADS, drop);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      if (base + u * THREADS < nvec) {
        const P wv = w[base + u * THREADS];
        store_y<STORE>(y + base + u * THREADS, scale_pack(v[u], wv, scale), drop);
      }
  }
}

// The row in registers: exactly THREADS * VPT packs.
template <int THREADS, int VPT, int POLICY, int MIN_BLOCKS, bool WEIGHT_EARLY>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS) regs(RowArgs a) {
  __shared__ float scratch[64];
  const P* x = reinterpret_cast<const P*>(static_cast<const bf16*>(a.x) + blockIdx.x * a.cols);
  uint64_t drop = 0;
  if constexpr (POLICY == kEvictFirst) asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(drop));
  P v[VPT], wv[WEIGHT_EARLY ? VPT : 1];
#pragma unroll
  for (int j = 0; j < VPT; ++j) v[j] = load_x<POLICY>(x + threadIdx.x + j * THREADS, drop);
  const P* w = static_cast<const P*>(a.weight);
  if constexpr (WEIGHT_EARLY)
#pragma unroll
    for (int j = 0; j < VPT; ++j) wv[j] = w[threadIdx.x + j * THREADS];
  float s = 0;
#pragma unroll
  for (int j = 0; j < VPT; ++j) s = sumsq(v[j], s);
  const float scale = rsqrtf(row_allreduce(s, THREADS, scratch, SumOp{}) / static_cast<float>(a.cols) + a.eps);
  P* y = reinterpret_cast<P*>(static_cast<bf16*>(a.y) + blockIdx.x * a.cols);
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const P wj = WEIGHT_EARLY ? wv[WEIGHT_EARLY ? j : 0] : w[threadIdx.x + j * THREADS];
    y[threadIdx.x + j * THREADS] = scale_pack(v[j], wj, scale);
  }
}

// The row in registers, rows blockIdx.x + k * gridDim.x, the next row's loads in flight during this row's reduction
// and stores.
template <int THREADS, int VPT, int MIN_BLOCKS>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS) pipe(RowArgs a) {
  __shared__ float scratch[64];
  const P* w = static_cast<const P*>(a.weight);
  P v[VPT], nv[VPT];
  int64_t row = blockIdx.x;
  auto load = [&](int64_t r, P(&dst)[VPT]) {
    const P* x = reinterpret_cast<const P*>(static_cast<const bf16*>(a.x) + r * a.cols);
#pragma unroll
    for (int j = 0; j < VPT; ++j) dst[j] = x[threadIdx.x + j * THREADS];
  };
  if (row < a.rows) load(row, v);
  for (; row < a.rows; row += gridDim.x) {
    float s = 0;
#pragma unroll
    for (int j = 0; j < VPT; ++j) s = sumsq(v[j], s);
    const int64_t next = row + gridDim.x;
    if (next < a.rows) load(next, nv);
    const float scale = rsqrtf(row_allreduce(s, THREADS, scratch, SumOp{}) / static_cast<float>(a.cols) + a.eps);
    P* y = reinterpret_cast<P*>(static_cast<bf16*>(a.y) + row * a.cols);
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
      const P wj = w[threadIdx.x + j * THREADS];
      y[threadIdx.x + j * THREADS] = scale_pack(v[j], wj, scale);
    }
#pragma unroll
    for (int j = 0; j < VPT; ++j) v[j] = nv[j];
  }
}

struct Variant {
  std::string name;
  int64_t cols;  // the width it runs
  cudaError_t (*launch)(const RowArgs&, cudaStream_t);
  int op = 0;  // 0 RMSNorm, 1 LayerNorm
};

// The library's two-read kernel for LayerNorm at other shapes (32-bit indices where MIN_BLOCKS > 1).
template <int THREADS, int UNROLL, int MIN_BLOCKS>
cudaError_t launch_ln_wide(const RowArgs& a, cudaStream_t s) {
  row_kernel_wide<RowOp::layer_norm, bf16, 8, THREADS, UNROLL, true, MIN_BLOCKS>
      <<<static_cast<unsigned>(a.rows), THREADS, 0, s>>>(a);
  return cudaGetLastError();
}
#define GSQ_LN(threads, unroll, blocks)                                                                                \
  Variant {                                                                                                            \
    "layer_norm two-read " #threads "x" #unroll " hinted min" #blocks, 16384, launch_ln_wide<threads, unroll, blocks>, \
        1                                                                                                              \
  }

template <int THREADS, int UNROLL, int MIN_BLOCKS, int ACC, bool ONE_BARRIER = false, int STORE = kStorePlain,
          int FIRST = kFirstL1L2, int SECOND = kSecondL1L2>
cudaError_t launch_two_read(const RowArgs& a, cudaStream_t s) {
  two_read<THREADS, UNROLL, MIN_BLOCKS, ACC, ONE_BARRIER, STORE, FIRST, SECOND>
      <<<static_cast<unsigned>(a.rows), THREADS, 0, s>>>(a);
  return cudaGetLastError();
}
template <int THREADS, int VPT, int POLICY, int MIN_BLOCKS, bool WEIGHT_EARLY = false>
cudaError_t launch_regs(const RowArgs& a, cudaStream_t s) {
  regs<THREADS, VPT, POLICY, MIN_BLOCKS, WEIGHT_EARLY><<<static_cast<unsigned>(a.rows), THREADS, 0, s>>>(a);
  return cudaGetLastError();
}
template <int THREADS, int VPT, int MIN_BLOCKS>
cudaError_t launch_pipe(const RowArgs& a, cudaStream_t s) {
  static int grid = 0;
  if (!grid) {
    int per_sm = 0, sms = 0, dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, pipe<THREADS, VPT, MIN_BLOCKS>, THREADS, 0);
    grid = sms * per_sm;
  }
  pipe<THREADS, VPT, MIN_BLOCKS><<<grid, THREADS, 0, s>>>(a);
  return cudaGetLastError();
}
template <int VPT, int ROWS>
cudaError_t launch_rows(const RowArgs& a, cudaStream_t s, int tpr, int block) {
  const int64_t rows_per_block = int64_t{block} / tpr * ROWS;
  const auto grid = static_cast<unsigned>((a.rows + rows_per_block - 1) / rows_per_block);
  row_kernel<RowOp::rms_norm, bf16, 8, VPT, true, ROWS><<<grid, block, 0, s>>>(a, tpr);
  return cudaGetLastError();
}
#define GSQ_ROWS(vpt, rows, tpr, block)                                                           \
  Variant {                                                                                       \
    "rows " #tpr " thr x " #vpt " x " #rows " rows, block " #block, (tpr) * (vpt)*8,              \
        [](const RowArgs& a, cudaStream_t s) { return launch_rows<vpt, rows>(a, s, tpr, block); } \
  }

const std::vector<Variant>& variants() {
  static const std::vector<Variant> v = {
      {"library two-read 256x4 hinted (the shipped kernel)", 8192,
       [](const RowArgs& a, cudaStream_t s) {
         row_kernel_wide<RowOp::rms_norm, bf16, 8, 256, 4, true><<<static_cast<unsigned>(a.rows), 256, 0, s>>>(a);
         return cudaGetLastError();
       }},
      {"library two-read 512x2 hinted min4", 8192,
       [](const RowArgs& a, cudaStream_t s) {
         row_kernel_wide<RowOp::rms_norm, bf16, 8, 512, 2, true, 4><<<static_cast<unsigned>(a.rows), 512, 0, s>>>(a);
         return cudaGetLastError();
       }},
      {"library two-read 512x1 hinted min4", 8192,
       [](const RowArgs& a, cudaStream_t s) {
         row_kernel_wide<RowOp::rms_norm, bf16, 8, 512, 1, true, 4><<<static_cast<unsigned>(a.rows), 512, 0, s>>>(a);
         return cudaGetLastError();
       }},
      {"two-read 512x2 acc1 min4", 8192, launch_two_read<512, 2, 4, 1>},
      {"two-read 512x2 acc1 min4 one barrier", 8192, launch_two_read<512, 2, 4, 1, true>},
      {"two-read 512x2 acc1 min4 reads L1 evict-last / L1+L2 evict-first", 8192,
       launch_two_read<512, 2, 4, 1, false, kStorePlain, kFirstL1, kSecondL1L2>},
      {"two-read 512x2 acc1 min4 reads L1+L2 evict-last / L1 evict-first", 8192,
       launch_two_read<512, 2, 4, 1, false, kStorePlain, kFirstL1L2, kSecondL1>},
      {"two-read 512x2 acc1 min4 reads L1 evict-last / L1 evict-first", 8192,
       launch_two_read<512, 2, 4, 1, false, kStorePlain, kFirstL1, kSecondL1>},
      {"two-read 512x2 acc1 min4 reads L1+L2 evict-last / plain", 8192,
       launch_two_read<512, 2, 4, 1, false, kStorePlain, kFirstL1L2, kSecondPlain>},
      {"two-read 512x2 acc1 min4 reads L2 evict-last / L1+L2 evict-first", 8192,
       launch_two_read<512, 2, 4, 1, false, kStorePlain, kFirstL2, kSecondL1L2>},
      {"two-read 512x2 acc1 min4 st.cs", 8192, launch_two_read<512, 2, 4, 1, false, kStoreCs>},
      {"two-read 512x2 acc1 min4 st evict-first", 8192, launch_two_read<512, 2, 4, 1, false, kStoreEvictFirst>},
      {"two-read 512x2 acc1 min4 one barrier st.cs", 8192, launch_two_read<512, 2, 4, 1, true, kStoreCs>},
      {"two-read 512x2 acc1 min3 one barrier", 8192, launch_two_read<512, 2, 3, 1, true>},
      {"two-read 512x2 acc2 min4", 8192, launch_two_read<512, 2, 4, 2>},
      {"two-read 512x2 acc8 min3", 8192, launch_two_read<512, 2, 3, 8>},
      {"two-read 512x1 acc8 min4", 8192, launch_two_read<512, 1, 4, 8>},
      {"two-read 1024x1 acc8 min2", 8192, launch_two_read<1024, 1, 2, 8>},
      {"two-read 256x2 acc8 min8", 8192, launch_two_read<256, 2, 8, 8>},
      {"two-read 512x2 acc8 min4 (4096)", 4096, launch_two_read<512, 2, 4, 8>},
      {"two-read 256x2 acc8 min8 (4096)", 4096, launch_two_read<256, 2, 8, 8>},
      {"two-read 512x2 acc8 min4 (16384)", 16384, launch_two_read<512, 2, 4, 8>},
      {"two-read 512x4 acc8 min3 (16384)", 16384, launch_two_read<512, 4, 3, 8>},
      {"two-read 1024x2 acc8 min2 (16384)", 16384, launch_two_read<1024, 2, 2, 8>},
      {"two-read 256x4 acc1 (shipped shape, 32-bit idx)", 8192, launch_two_read<256, 4, 1, 1>},
      {"two-read 256x4 acc4", 8192, launch_two_read<256, 4, 1, 4>},
      {"two-read 256x4 acc8", 8192, launch_two_read<256, 4, 1, 8>},
      {"two-read 512x2 acc8 min4", 8192, launch_two_read<512, 2, 4, 8>},
      {"two-read 256x4 acc8 min6", 8192, launch_two_read<256, 4, 6, 8>},
      {"two-read 128x8 acc8", 8192, launch_two_read<128, 8, 1, 8>},
      {"regs 256x4 plain, weight early", 8192, launch_regs<256, 4, kPlain, 1, true>},
      {"regs 256x4 evict_first, weight early", 8192, launch_regs<256, 4, kEvictFirst, 1, true>},
      {"regs 256x4 plain", 8192, launch_regs<256, 4, kPlain, 1>},
      {"regs 256x4 evict_first min5", 8192, launch_regs<256, 4, kEvictFirst, 5>},
      {"regs 512x2 evict_first min3", 8192, launch_regs<512, 2, kEvictFirst, 3>},
      {"regs 256x4 no_allocate", 8192, launch_regs<256, 4, kNoAlloc, 1>},
      {"regs 256x4 evict_first", 8192, launch_regs<256, 4, kEvictFirst, 1>},
      {"regs 256x4 ldg", 8192, launch_regs<256, 4, kReadOnly, 1>},
      {"regs 512x2 evict_first", 8192, launch_regs<512, 2, kEvictFirst, 1>},
      {"regs 128x8 evict_first", 8192, launch_regs<128, 8, kEvictFirst, 1>},
      {"pipe 256x4", 8192, launch_pipe<256, 4, 1>},
      {"pipe 128x8", 8192, launch_pipe<128, 8, 1>},
      {"pipe 512x2", 8192, launch_pipe<512, 2, 1>},
      GSQ_LN(512, 2, 4),
      GSQ_LN(512, 2, 3),
      GSQ_LN(512, 4, 3),
      GSQ_LN(512, 4, 2),
      GSQ_LN(256, 4, 6),
      GSQ_LN(256, 8, 4),
      GSQ_LN(1024, 2, 2),
      GSQ_LN(1024, 2, 1),
      GSQ_ROWS(2, 1, 16, 128),  // the shipped plan at 256
      GSQ_ROWS(2, 1, 16, 64),
      GSQ_ROWS(2, 2, 16, 32),
      GSQ_ROWS(2, 2, 16, 64),
      GSQ_ROWS(1, 1, 32, 128),
      GSQ_ROWS(1, 2, 32, 64),
      GSQ_ROWS(1, 4, 32, 32),
      GSQ_ROWS(1, 4, 32, 64),
      GSQ_ROWS(4, 2, 8, 32),
      GSQ_ROWS(2, 4, 16, 32),
      GSQ_ROWS(4, 1, 8, 64),
      GSQ_ROWS(1, 1, 32, 256),
      GSQ_ROWS(1, 1, 32, 64),
      GSQ_ROWS(1, 2, 32, 128),
      GSQ_ROWS(2, 1, 32, 128),  // the shipped plan at 512
      GSQ_ROWS(2, 1, 32, 256),
      GSQ_ROWS(4, 1, 16, 64),
      GSQ_ROWS(4, 1, 16, 128),
      GSQ_ROWS(1, 1, 64, 64),
      GSQ_ROWS(1, 1, 64, 128),
      GSQ_ROWS(2, 4, 32, 32),
      GSQ_ROWS(2, 1, 32, 64),
      GSQ_ROWS(2, 2, 32, 32),
      GSQ_ROWS(2, 2, 32, 64),
      GSQ_ROWS(1, 2, 64, 64),
      GSQ_ROWS(4, 2, 16, 32),
  };
  return v;
}

}  // namespace
}  // namespace gsq::kernels

using gsq::kernels::RowArgs;
extern "C" {
int rv_count() {
  return static_cast<int>(gsq::kernels::variants().size());
}
const char* rv_name(int i) {
  return gsq::kernels::variants()[i].name.c_str();
}
long long rv_cols(int i) {
  return gsq::kernels::variants()[i].cols;
}
int rv_op(int i) {
  return gsq::kernels::variants()[i].op;
}
int rv_launch(int i, void* y, const void* x, const void* w, const void* b, long long rows, long long cols, float eps,
              void* stream) {
  RowArgs a;
  a.y = y, a.x = x, a.weight = w, a.bias = b, a.rows = rows, a.cols = cols, a.eps = eps;
  return static_cast<int>(gsq::kernels::variants()[i].launch(a, static_cast<cudaStream_t>(stream)));
}
}
