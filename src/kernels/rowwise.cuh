// Row operations over the last dimension: LayerNorm, RMSNorm, the residual add + RMSNorm, softmax, softmax + dropout.
//
// A row that fits in registers (up to 4096 accesses of 16 bytes: four a thread for up to 1024 threads, or for the norms
// eight for up to 512) is read once: each thread keeps its VPT packs, the row's threads reduce through shuffles and
// shared memory, and every value is written once, so the kernel moves the same bytes as a copy. plan_row picks the
// threads per row (4 to 1024) and the block. Wider rows get a block that reads the row twice (statistics, then output;
// the second read mostly hits the L2). Rows whose width is not a multiple of 16 bytes take the span kernel (16-byte
// packs of the buffer, the row's two edge packs by element), as do rows too few for the GPU and too wide for
// registers, split over a cluster; pointers not 16-byte aligned take the same kernels with one element per access.
#pragma once

#include <cooperative_groups.h>

#include "kernels/device_common.cuh"
#include "kernels/philox.hpp"

namespace gsq::kernels {
namespace {  // each .cu file instantiates its own operations

// The RMS norms (RMSNorm, and RMSNorm of the residual stream's sum), and every norm.
__host__ __device__ constexpr bool is_rms(RowOp op) {
  return op == RowOp::rms_norm || op == RowOp::add_rms_norm;
}
__host__ __device__ constexpr bool is_norm(RowOp op) {
  return op == RowOp::layer_norm || is_rms(op);
}

// A number known at compile time that converts to int in device code (std::integral_constant's conversion is host-only
// without --expt-relaxed-constexpr): the span kernel's interior packs pass their bounds as these, so no mask is built.
template <int N>
struct Const {
  static constexpr int value = N;
  __host__ __device__ constexpr operator int() const { return N; }
};

// a + b element by element, rounded to T: the residual stream's new value, as PyTorch adds two tensors of T.
template <class T, int VEC>
__device__ __forceinline__ Pack<T, VEC> add_packs(const Pack<T, VEC>& a, const Pack<T, VEC>& b) {
  float fa[VEC], fb[VEC];
  unpack(a, fa);
  unpack(b, fb);
  Pack<T, VEC> out;
#pragma unroll
  for (int k = 0; k < VEC; ++k) out.v[k] = Conv<T>::from(fa[k] + fb[k]);
  return out;
}

// The residual add's first read of a row: the packs v[u] at base + u × stride (those below end) get the residual's
// packs added, and each sum is written back to the residual (the residual's loads issued together first).
template <class T, int VEC, int U, class I>
__device__ __forceinline__ void add_residual(Pack<T, VEC> (&v)[U], Pack<T, VEC>* res, I base, I stride, I end) {
  Pack<T, VEC> q[U];
#pragma unroll
  for (int u = 0; u < U; ++u)
    if (base + u * stride < end) q[u] = res[base + u * stride];
#pragma unroll
  for (int u = 0; u < U; ++u)
    if (base + u * stride < end) v[u] = add_packs(v[u], q[u]), res[base + u * stride] = v[u];
}

// Word q (0…3) of a Philox result picked at run time without indexing into local memory.
__device__ __forceinline__ uint32_t word_at(const Philox4& r, unsigned q) {
  return q < 2 ? (q == 0 ? r.v[0] : r.v[1]) : (q == 2 ? r.v[2] : r.v[3]);
}

// Softmax output from the row's exponentials e = exp(x - max): e * scale (scale = 1 / sum), then dropout. The keep
// test of dropout_keep_in on the raw word: the upper half is kept when word >= threshold << 16, the lower half when
// word << 16 >= threshold << 16; kept values take keep_scale folded into scale. `first`: the buffer index of the
// pack's first element (an element's mask depends on that index alone, whatever kernel reads it).
template <RowOp OP, class T, int VEC>
__device__ __forceinline__ void finish_softmax(const RowArgs& a, uint64_t first, const float (&e)[VEC], float scale,
                                               Pack<T, VEC>& out) {
  float v[VEC];
  if constexpr (OP == RowOp::softmax_dropout) {
    scale *= a.keep_scale;
    const uint32_t t = a.keep_threshold << 16;
    auto keep = [t](uint32_t word, unsigned half) { return (half ? word : word << 16) >= t; };
    if constexpr (VEC % 4 == 0) {  // 16-byte packs: first % 8 is 0 (or 4 for f32): one Philox call for the pack
      const Philox4 r = dropout_words(first / 8, a.key, a.offset);
      const unsigned q0 = VEC == 8 ? 0 : (first % 8) / 2;  // f32: words 0-1 or 2-3 of the group
#pragma unroll
      for (int k = 0; k < VEC; ++k)
        v[k] = keep(VEC == 8 ? r.v[k / 2] : (q0 == 0 ? r.v[k / 2] : r.v[2 + k / 2]), k % 2) ? e[k] * scale : 0.0f;
    } else {
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const uint64_t i = first + k;
        const Philox4 r = dropout_words(i / 8, a.key, a.offset);
        v[k] = keep(word_at(r, (i % 8) / 2), i % 2) ? e[k] * scale : 0.0f;
      }
    }
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k) v[k] = e[k] * scale;
  }
#pragma unroll
  for (int k = 0; k < VEC; ++k) out.v[k] = Conv<T>::from(v[k]);
}

// LayerNorm: (x - mean) * scale * w + b; RMSNorm: x * scale * w (mean = 0), from the packs of x, weight and bias.
template <RowOp OP, class T, int VEC>
__device__ __forceinline__ void finish_norm(const RowArgs& a, const Pack<T, VEC>& in, const Pack<T, VEC>& wp,
                                            const Pack<T, VEC>& bp, float mean, float scale, Pack<T, VEC>& out) {
  float v[VEC], w[VEC], b[VEC];
  unpack(in, v);
  unpack(wp, w);
  unpack(bp, b);
#pragma unroll
  for (int k = 0; k < VEC; ++k) {
    float y = (v[k] - mean) * scale;  // not fma(x, scale, -mean * scale): that loses digits when |mean| >> std
    if (a.weight) y *= w[k];
    if (OP == RowOp::layer_norm && a.bias) y += b[k];
    out.v[k] = Conv<T>::from(y);
  }
}

// Pack idx of the weight and (LayerNorm) bias, zero where the operation has none.
template <RowOp OP, class T, int VEC>
__device__ __forceinline__ void load_affine(const RowArgs& a, int64_t idx, Pack<T, VEC>& wp, Pack<T, VEC>& bp) {
  wp = {}, bp = {};
  if (a.weight) wp = static_cast<const Pack<T, VEC>*>(a.weight)[idx];
  if (OP == RowOp::layer_norm && a.bias) bp = static_cast<const Pack<T, VEC>*>(a.bias)[idx];
}

// Softmax's output pack from its input pack: exp(x - mean) * scale (mean: the row's maximum, scale: 1 / the sum), then
// dropout; `first` as finish_softmax takes it.
template <RowOp OP, class T, int VEC>
__device__ __forceinline__ void finish_exp(const RowArgs& a, uint64_t first, const Pack<T, VEC>& in, float mean,
                                           float scale, Pack<T, VEC>& out) {
  float v[VEC];
  unpack(in, v);
  const float shift = -mean * kLog2e;
#pragma unroll
  for (int k = 0; k < VEC; ++k) v[k] = exp2_ftz(fmaf(v[k], kLog2e, shift));
  finish_softmax<OP, T, VEC>(a, first, v, scale, out);
}

template <RowOp OP, class T, int VEC>
__device__ __forceinline__ void finish_row(const RowArgs& a, int64_t row, int64_t idx, const Pack<T, VEC>& in,
                                           float mean, float scale, Pack<T, VEC>& out) {
  // Softmax: exp(x - mean) * scale where mean is the row maximum and scale 1 / sum.
  if constexpr (is_norm(OP)) {
    Pack<T, VEC> wp, bp;  // one 16-byte load each, then unpacked in registers
    load_affine<OP, T, VEC>(a, idx, wp, bp);
    finish_norm<OP, T, VEC>(a, in, wp, bp, mean, scale, out);
  } else {
    finish_exp<OP, T, VEC>(a, static_cast<uint64_t>(row) * a.cols + idx * VEC, in, mean, scale, out);
  }
}

// L2 cache policies for every line a load touches: kept past other lines (evict-last), or let go first.
__device__ __forceinline__ uint64_t l2_evict_last_policy() {
  uint64_t policy;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ uint64_t l2_evict_first_policy() {
  uint64_t policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

// A 16-byte load whose L2 line takes `policy` (l2_evict_*_policy), with an L1 eviction priority or none.
enum class L1Hint { none, evict_last, evict_first };
template <L1Hint HINT, class P>
__device__ __forceinline__ P load_with_policy(const P* ptr, uint64_t policy) {
  static_assert(sizeof(P) == 16);
  uint4 v;
  if constexpr (HINT == L1Hint::none)
    asm volatile("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(ptr), "l"(policy));
  else if constexpr (HINT == L1Hint::evict_last)
    asm volatile("ld.global.L1::evict_last.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(ptr), "l"(policy));
  else
    asm volatile("ld.global.L1::evict_first.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(ptr), "l"(policy));
  P out;
  memcpy(&out, &v, sizeof out);
  return out;
}

// Up to 4 packs per thread in blocks of up to 1024 threads: 64 registers, no spills. (16 packs for 512 threads made
// the compiler keep 128 converted floats and spill for bf16; such rows take the two-pass kernel instead.) FULL: the
// row is exactly tpr * VPT packs, so no pack is tested. A thread past the last row reads and reduces row 0 (valid
// memory, uniform control flow for the block's reductions) and stores nothing.
//
// ROWS > 1 (the norms): each group of tpr threads takes ROWS rows, rows_per_block apart, loading all their packs at
// once and the weight (and bias) packs only once for all of them, so a row costs one load of x, not of x, weight and
// bias. Blocks of up to 512 threads then (128 registers).
//
// FEW (plan_row's few-row plans: one to four packs a thread, blocks of up to 512): the norms load their weight (and
// bias) packs beside x, and LayerNorm reduces its two shifted sums at once, so the row's chain of dependent steps is one
// load, one reduction and the stores.
template <RowOp OP, class T, int VEC, int VPT, bool FULL, int ROWS, bool FEW = false>
__device__ __forceinline__ void row_body(const RowArgs& a, int tpr) {
  __shared__ float scratch[64];
  using P = Pack<T, VEC>;
  constexpr bool kNorm = is_norm(OP);
  static_assert(ROWS == 1 || kNorm, "only the norms share affine packs between rows");
  const unsigned tpr_log2 = __ffs(tpr) - 1, lane = threadIdx.x & (tpr - 1);
  const unsigned rows_per_block = blockDim.x >> tpr_log2;
  const int64_t first_row = static_cast<int64_t>(blockIdx.x) * (rows_per_block * ROWS) + (threadIdx.x >> tpr_log2);
  const int64_t nvec = a.cols / VEC;
  unsigned in_row = 0;  // bit j: pack j of this thread is inside the row (one register however many packs)
#pragma unroll
  for (int j = 0; j < VPT; ++j) in_row |= static_cast<unsigned>(lane + static_cast<int64_t>(j) * tpr < nvec) << j;
  auto valid = [&](int j) { return FULL || (in_row >> j & 1u) != 0; };
  auto row_of = [&](int r) { return first_row + static_cast<int64_t>(r) * rows_per_block; };
  // LayerNorm's eight-pack rows (plan_row: 1025-4096 16-byte accesses) read x marked L2 evict-last. On two H200s
  // LayerNorm 16384 bf16 then ran 130.0-130.8 µs whatever kernel ran before it, where plain loads ran 131.7-132.6
  // after torch.compile's kernel (whose first read is marked so) and 133.3-135.3 after a copy or eager; at 32768
  // 132.1-132.6 against 133.1-135.2; x marked evict-first ran 138.5-142.4 (bench/results/2026-12-04-h200-shuffled/).
  constexpr bool kKeepX = OP == RowOp::layer_norm && VPT == 8;
  uint64_t keep_x = 0;
  if constexpr (kKeepX) keep_x = l2_evict_last_policy();
  P p[ROWS][VPT];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const int64_t row = row_of(r) < a.rows ? row_of(r) : 0;
    const P* x = reinterpret_cast<const P*>(static_cast<const T*>(a.x) + row * a.cols);
#pragma unroll
    for (int j = 0; j < VPT; ++j)
      if (valid(j)) {
        if constexpr (kKeepX)
          p[r][j] = load_with_policy<L1Hint::none>(x + lane + j * tpr, keep_x);
        else
          p[r][j] = x[lane + j * tpr];
      }
    // The residual's packs added and the sums written back. Not add_residual: its run-time bounds, in place of this
    // body's packs known valid at compile time, made three of these kernels spill (Occupancy.OurKernelsDoNotSpill).
    if constexpr (OP == RowOp::add_rms_norm) {
      P* res = reinterpret_cast<P*>(static_cast<T*>(a.residual) + row * a.cols);
      P q[VPT];
#pragma unroll
      for (int j = 0; j < VPT; ++j)
        if (valid(j)) q[j] = res[lane + j * tpr];
#pragma unroll
      for (int j = 0; j < VPT; ++j)
        if (valid(j)) {
          p[r][j] = add_packs(p[r][j], q[j]);
          if (row_of(r) < a.rows) res[lane + j * tpr] = p[r][j];
        }
    }
  }
  // RMSNorm with at most two packs a thread loads its weight packs here, beside x, so those loads overlap x's DRAM
  // latency instead of following the reduction: 0.2-0.9% faster on the H200 at rows of 256-2048; LayerNorm, with
  // bias packs too, was 0.1-0.8% slower that way (bench/results/2026-12-03-h200-row-plans/), and with four packs the
  // registers for them would spill. Several rows a thread share one load.
  constexpr bool kAffineFirst = ROWS > 1 || (is_rms(OP) && VPT <= 2) || (FEW && kNorm);
  P wp[kAffineFirst ? VPT : 1], bp[kAffineFirst ? VPT : 1];
  if constexpr (kAffineFirst) {
#pragma unroll
    for (int j = 0; j < VPT; ++j)
      if (valid(j)) load_affine<OP, T, VEC>(a, lane + j * tpr, wp[j], bp[j]);
  }
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const int64_t row = row_of(r);
    const bool row_ok = row < a.rows;
    // Folds f over every value of this thread's part of the row.
    auto fold = [&](float acc, auto&& f) {
#pragma unroll
      for (int j = 0; j < VPT; ++j)
        if (valid(j)) {
          float v[VEC];
          unpack(p[r][j], v);
#pragma unroll
          for (int k = 0; k < VEC; ++k) acc = f(acc, v[k]);
        }
      return acc;
    };
    // Writes every pack of this thread's part of the row, finish(j, idx, out) making pack j.
    auto store = [&](auto&& finish) {
      if (!row_ok) return;
      P* y = reinterpret_cast<P*>(static_cast<T*>(a.y) + row * a.cols);
#pragma unroll
      for (int j = 0; j < VPT; ++j) {
        if (!valid(j)) continue;
        const int64_t idx = lane + j * tpr;
        P out;
        finish(j, idx, out);
        y[idx] = out;
      }
    };
    const float n = static_cast<float>(a.cols);
    float mean = 0, scale = 1;
    if constexpr (kNorm) {
      if constexpr (OP == RowOp::layer_norm && (VPT == 8 || FEW)) {
        // Eight packs a thread: one pass over the registers and one reduction of two sums, of x - shift and its
        // square, where shift is the row's first element (it keeps the sums exact enough for rows whose mean is far
        // from zero). Two passes, below, keep the unpacked floats live across the first reduction and spill at the
        // 64 registers these blocks have; with fewer packs they are as fast or faster and round better.
        const float shift = Conv<T>::to(static_cast<const T*>(a.x)[(row_ok ? row : 0) * a.cols]);
        float s1 = 0, s2 = 0;
        fold(0.0f, [&](float acc, float v) {
          const float d = v - shift;
          s1 += d, s2 += d * d;
          return acc;
        });
        row_allreduce_sum2(s1, s2, tpr, scratch);
        s1 /= n;
        mean = shift + s1;
        scale = rsqrtf(fmaxf(s2 / n - s1 * s1, 0.0f) + a.eps);
      } else {
        // Two passes over the registers: the mean (LayerNorm only; RMSNorm centres on 0), then the squared
        // deviations. (One reduction of each thread's count, mean and squared deviations, combined as Chan et al.
        // do, measured 3-25% slower on the H200.)
        if constexpr (OP == RowOp::layer_norm)
          mean = row_allreduce(fold(0.0f, [](float acc, float v) { return acc + v; }), tpr, scratch, SumOp{}) / n;
        const float q = fold(0.0f, [mean](float acc, float v) { return acc + (v - mean) * (v - mean); });
        scale = rsqrtf(row_allreduce(q, tpr, scratch, SumOp{}) / n + a.eps);
      }
      if constexpr (kAffineFirst)
        store([&](int j, int64_t, P& out) { finish_norm<OP, T, VEC>(a, p[r][j], wp[j], bp[j], mean, scale, out); });
      else
        store([&](int j, int64_t idx, P& out) { finish_row<OP, T, VEC>(a, row, idx, p[r][j], mean, scale, out); });
    } else {
      // Softmax: each exponential is computed once and kept (VPT * VEC floats) for the output.
      mean = row_allreduce(fold(MaxOp::identity(), [](float acc, float v) { return fmaxf(acc, v); }), tpr, scratch,
                           MaxOp{});
      const float shift = -mean * kLog2e;
      float e[VPT][VEC], s = 0;
#pragma unroll
      for (int j = 0; j < VPT; ++j) {
        unpack(p[r][j], e[j]);
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          e[j][k] = valid(j) ? exp2_ftz(fmaf(e[j][k], kLog2e, shift)) : 0.0f;
          s += e[j][k];
        }
      }
      scale = 1.0f / row_allreduce(s, tpr, scratch, SumOp{});
      store([&](int j, int64_t idx, P& out) {
        finish_softmax<OP, T, VEC>(a, static_cast<uint64_t>(row) * a.cols + idx * VEC, e[j], scale, out);
      });
    }
  }
}

template <RowOp OP, class T, int VEC, int VPT, bool FULL, int ROWS = 1>
__global__ void __launch_bounds__(ROWS > 1 ? 512 : 1024) row_kernel(RowArgs a, int tpr) {
  row_body<OP, T, VEC, VPT, FULL, ROWS>(a, tpr);
}
// The few-row plans (plan_row: rows too few for half the SMs): blocks of up to 512, so the weight and bias packs held
// beside x get the registers they need.
template <RowOp OP, class T, int VEC, int VPT, bool FULL>
__global__ void __launch_bounds__(512) row_kernel_few(RowArgs a, int tpr) {
  row_body<OP, T, VEC, VPT, FULL, 1, true>(a, tpr);
}
// The norms' widest register-resident rows (plan_row: LayerNorm past 1024 16-byte accesses, up to 4096):
// eight a thread in blocks of up to 512, at most 64 registers so two such blocks fit on an SM (a block of 1024
// threads with four accesses each holds the SM alone).
template <RowOp OP, class T, int VEC, bool FULL>
__global__ void __launch_bounds__(512, 2) row_kernel8(RowArgs a, int tpr) {
  row_body<OP, T, VEC, 8, FULL, 1>(a, tpr);
}

// Rows too wide for registers, and the hinted plans of the norms and softmax: one block of THREADS per row, statistics
// in one pass, output in a second. Each thread has UNROLL accesses in flight per step; the second read of a row mostly
// hits the L2.
//
// HINTS (16-byte packs): the first read marks its lines L1- and L2-evict-last and the second evict-first, the way
// torch.compile's looped reductions mark them, so the row stays cached between its two reads.
template <class P>
__device__ __forceinline__ P load_hinted(const P* ptr, uint64_t policy, bool last) {
  return last ? load_with_policy<L1Hint::evict_last>(ptr, policy) : load_with_policy<L1Hint::evict_first>(ptr, policy);
}

// MIN_BLOCKS: blocks an SM must fit (the register cap that follows: 65536 / (THREADS × MIN_BLOCKS)). HINT_SECOND
// (with HINTS): the second read marked evict-first; false: a plain load.
template <RowOp OP, class T, int VEC, int THREADS = 1024, int UNROLL = 4, bool HINTS = false, int MIN_BLOCKS = 1,
          bool HINT_SECOND = true>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS) row_kernel_wide(RowArgs a) {
  __shared__ float scratch[64];
  using P = Pack<T, VEC>;
  constexpr int kThreads = THREADS, kUnroll = UNROLL;
  // Indices inside the row: 32-bit (unsigned: signed ones made f32 kernels spill) in the register-capped shapes
  // (MIN_BLOCKS > 1), where a 64-bit index costs registers under the cap (RMSNorm 8192 bf16 in 512 × 2 at four
  // blocks an SM ran 0.4% faster with 32-bit ones on the H200); 64-bit elsewhere (in the 1024 × 4 shapes 32-bit
  // indices ran 2-4% slower at 32768-65536; bench/results/2026-12-04-h200-rms-variants/). The row's offset is 64-bit.
  using Idx = std::conditional_t<(MIN_BLOCKS > 1), unsigned, int64_t>;
  const int64_t row = blockIdx.x;
  const Idx nvec = static_cast<Idx>(a.cols / VEC);
  const P* x = reinterpret_cast<const P*>(static_cast<const T*>(a.x) + row * a.cols);
  // add_rms_norm: the first read adds the residual's packs and writes the sum back; the second reads the sum.
  P* res = OP == RowOp::add_rms_norm ? reinterpret_cast<P*>(static_cast<T*>(a.residual) + row * a.cols) : nullptr;
  uint64_t keep = 0, drop = 0;
  if constexpr (HINTS) {
    keep = l2_evict_last_policy();
    drop = l2_evict_first_policy();
  }
  int pass = 0;
  // Visits every pack of the row, kUnroll loads issued before any is used.
  auto for_each_pack = [&](auto&& f) {
    const bool first = pass++ == 0;
    const P* src = OP == RowOp::add_rms_norm && !first ? res : x;
    for (Idx base = threadIdx.x; base < nvec; base += kThreads * kUnroll) {
      P v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (base + u * kThreads < nvec) {
          if constexpr (HINTS)
            v[u] = first || HINT_SECOND ? load_hinted(src + base + u * kThreads, first ? keep : drop, first)
                                        : src[base + u * kThreads];
          else
            v[u] = src[base + u * kThreads];
        }
      if constexpr (OP == RowOp::add_rms_norm)
        if (first) add_residual<T, VEC>(v, res, base, static_cast<Idx>(kThreads), nvec);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (base + u * kThreads < nvec) f(base + u * kThreads, v[u]);
    }
  };
  const float n = static_cast<float>(a.cols);
  float mean = 0, scale = 1;
  if constexpr (is_norm(OP)) {
    // LayerNorm sums are shifted by the row's first element, which keeps them exact enough for rows whose mean is
    // far from zero; RMSNorm needs only the sum of squares.
    const float shift = OP == RowOp::layer_norm ? Conv<T>::to(static_cast<const T*>(a.x)[row * a.cols]) : 0.0f;
    float s1 = 0, s2 = 0;
    for_each_pack([&](int64_t, const P& v) {
      float f[VEC];
      unpack(v, f);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const float d = f[k] - shift;
        s1 += d, s2 += d * d;
      }
    });
    // LayerNorm reduces both sums in one set of shuffles and barriers instead of two (about 1% at rows of 16384
    // bf16 on the H200, bench/results/2026-12-04-h200-row-hints/).
    if constexpr (OP == RowOp::layer_norm) {
      row_allreduce_sum2(s1, s2, kThreads, scratch);
      s1 /= n, s2 /= n;
      mean = shift + s1;
      scale = rsqrtf(fmaxf(s2 - s1 * s1, 0.0f) + a.eps);
    } else {
      scale = rsqrtf(row_allreduce(s2, kThreads, scratch, SumOp{}) / n + a.eps);
    }
  } else {
    float m = MaxOp::identity(), s = 0;  // online: running maximum and the sum rescaled to it
    for_each_pack([&](int64_t, const P& v) {
      float fv[VEC];
      unpack(v, fv);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const float f = fv[k];
        if (f > m) s *= exp2_ftz((m - f) * kLog2e), m = f;
        s += exp2_ftz((f - m) * kLog2e);
      }
    });
    mean = row_allreduce(m, kThreads, scratch, MaxOp{});
    scale = 1.0f / row_allreduce(m == MaxOp::identity() ? 0.0f : s * exp2_ftz((m - mean) * kLog2e), kThreads, scratch,
                                 SumOp{});
  }
  P* y = reinterpret_cast<P*>(static_cast<T*>(a.y) + row * a.cols);
  for_each_pack([&](int64_t i, const P& v) {
    P out;
    finish_row<OP, T, VEC>(a, row, i, v, mean, scale, out);
    y[i] = out;
  });
}

// Rows of any width whose x and y start 16-byte aligned, read as the 16-byte packs of the buffer that each row
// overlaps (plan_row's span plans): every pack of the row's interior is one 16-byte access, and only the first and
// last, which may hold elements of the rows beside it, are read and written element by element. Vocabulary widths
// (50257, 30522, 32001, ...) are not a multiple of 16 bytes, so a row there starts at a different place inside its
// first pack from the row before it: the weight (and bias) element under a pack's first element is then `shift`
// elements into a weight pack, the same shift for the whole row, and the kernel loads two weight packs and picks from
// both. The dropout mask of a pack comes from its buffer index, a multiple of the pack, so one Philox call serves it.
//
// A row is split over the blocks of a thread-block cluster (cluster dims set at launch; one block when the rows alone
// fill the GPU): each block takes an even share of the row's packs, reduces its share's statistics (the norms' sums;
// softmax's running maximum and its rescaled sum), and the blocks combine their partials through distributed shared
// memory before each writes its share. Two reads of the share: statistics, then output (the second mostly from L2).

// A pack of the buffer element by element: elements at [lo, hi) of the pack are loaded, the others are 0.
template <class T, int VEC>
__device__ __forceinline__ Pack<T, VEC> load_part(const T* base, int lo, int hi) {
  Pack<T, VEC> p;
#pragma unroll
  for (int k = 0; k < VEC; ++k) p.v[k] = k >= lo && k < hi ? base[k] : Conv<T>::from(0.0f);
  return p;
}

// Elements [s, s + VEC) of the two packs lo, hi side by side, for a shift s (0 <= s < VEC) that is the same in the
// whole block: one unrolled selection per shift, so the packs stay in registers.
template <class T, int VEC, int S = 0>
__device__ __forceinline__ void shifted_pack(const Pack<T, VEC>& lo, const Pack<T, VEC>& hi, int s, Pack<T, VEC>& out) {
  if constexpr (S < VEC) {
    if (s != S) return shifted_pack<T, VEC, S + 1>(lo, hi, s, out);
#pragma unroll
    for (int k = 0; k < VEC; ++k) out.v[k] = k + S < VEC ? lo.v[k + S] : hi.v[k + S - VEC];
  }
}

// Elements [e0, e0 + VEC) of a per-column vector (weight or bias, 16-byte aligned, `cols` long) whose element e0 is
// `shift` (= e0 mod VEC) into its pack: two 16-byte loads inside the vector, else element by element with the
// elements outside [0, cols) set to 0.
template <class T, int VEC>
__device__ __forceinline__ Pack<T, VEC> load_columns(const void* v, int64_t e0, int shift, int64_t cols) {
  using P = Pack<T, VEC>;
  const T* base = static_cast<const T*>(v);
  const int64_t first_pack = (e0 - shift) / VEC;  // e0 - shift is a multiple of VEC (and >= -VEC)
  if (e0 >= shift && (first_pack + (shift ? 2 : 1)) * VEC <= cols) {
    const P* pv = static_cast<const P*>(v);
    if (shift == 0) return pv[first_pack];
    P out;
    shifted_pack<T, VEC>(pv[first_pack], pv[first_pack + 1], shift, out);
    return out;
  }
  P out;
#pragma unroll
  for (int k = 0; k < VEC; ++k) out.v[k] = e0 + k >= 0 && e0 + k < cols ? base[e0 + k] : Conv<T>::from(0.0f);
  return out;
}

template <RowOp OP, class T, int VEC, int THREADS>
__global__ void __launch_bounds__(THREADS) row_kernel_span(RowArgs a) {
  __shared__ float scratch[64];
  __shared__ float partial[2];  // this block's share of the statistics, read by the cluster's other blocks
  using P = Pack<T, VEC>;
  constexpr bool kNorm = is_norm(OP);
  // Packs in flight a thread: four, but two in the norms' output pass at 1024 threads, where the weight and bias packs
  // and their shifted copies beside four packs of x need more than the 64 registers a thread has (fp16 spilled).
  using Four = std::integral_constant<int, 4>;
  using Output = std::integral_constant<int, kNorm && THREADS == 1024 ? 2 : 4>;
#if __CUDA_ARCH__ >= 900
  const auto cluster = cooperative_groups::this_cluster();
  const unsigned parts = cluster.num_blocks(), part = cluster.block_rank();
#else
  constexpr unsigned parts = 1, part = 0;
#endif
  const int64_t row = blockIdx.x / parts;
  const int64_t begin = row * a.cols, end = begin + a.cols;  // the row's elements in the buffer
  const int64_t row_first = begin / VEC, row_packs = (end + VEC - 1) / VEC - row_first;
  const int64_t share = (row_packs + parts - 1) / parts;
  const int64_t lo = row_first + part * share,
                hi = lo + share < row_first + row_packs ? lo + share : row_first + row_packs;
  const int shift = static_cast<int>(((-begin) % VEC + VEC) % VEC);  // column of a pack's first element, mod VEC
  const T* xe = static_cast<const T*>(a.x);
  const P* x = static_cast<const P*>(a.x);
  // add_rms_norm: the first read adds the residual's packs and writes the sum back; the second reads the sum.
  T* re = static_cast<T*>(a.residual);
  P* res = static_cast<P*>(a.residual);
  int pass = 0;
  // The elements [first_in, last_in) of pack g are inside the row.
  auto first_in = [&](int64_t g) { return begin > g * VEC ? static_cast<int>(begin - g * VEC) : 0; };
  auto last_in = [&](int64_t g) { return end < g * VEC + VEC ? static_cast<int>(end - g * VEC) : VEC; };
  // The share's interior packs (every element in the row): [ilo, ihi).
  const int64_t ilo = lo > (begin + VEC - 1) / VEC ? lo : (begin + VEC - 1) / VEC,
                ihi = hi < end / VEC ? hi : end / VEC;
  // Visits the share's packs: f(pack index, pack, first, last) with [first, last) the pack's elements in the row. The
  // interior in a loop of U 16-byte loads in flight a thread, first and last known at compile time (no mask is
  // computed); the row's first and last pack, where they hold elements of the rows beside them, by one thread each,
  // element by element. (Packs tested one by one for being whole ran the ragged rows at 0.58x the copy on an H100.)
  auto for_each_pack = [&](auto unroll, auto&& f) {
    constexpr int kUnroll = decltype(unroll)::value;
    const bool first = pass++ == 0, add = OP == RowOp::add_rms_norm;
    const P* src = add && !first ? res : x;
    const T* src_e = add && !first ? re : xe;
    for (int64_t base = ilo + threadIdx.x; base < ihi; base += THREADS * kUnroll) {
      P v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (base + u * THREADS < ihi) v[u] = src[base + u * THREADS];
      if constexpr (OP == RowOp::add_rms_norm)
        if (first) add_residual<T, VEC>(v, res, base, int64_t{THREADS}, ihi);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (base + u * THREADS < ihi) f(base + u * THREADS, v[u], Const<0>{}, Const<VEC>{});
    }
    auto edge = [&](int64_t g) {
      if (g < lo || g >= hi) return;  // another block's share
      const int f0 = first_in(g), l0 = last_in(g);
      P v = load_part<T, VEC>(src_e + g * VEC, f0, l0);
      if constexpr (OP == RowOp::add_rms_norm)
        if (first) {
          v = add_packs(v, load_part<T, VEC>(re + g * VEC, f0, l0));
#pragma unroll
          for (int k = 0; k < VEC; ++k)  // unrolled: an index known only at run time would put v in local memory
            if (k >= f0 && k < l0) re[g * VEC + k] = v.v[k];
        }
      f(g, v, f0, l0);
    };
    if (threadIdx.x == 0 && begin % VEC != 0) edge(begin / VEC);
    if (threadIdx.x == THREADS - 1 && end % VEC != 0 && (end / VEC != begin / VEC || begin % VEC == 0)) edge(end / VEC);
  };
  // Statistics of the share: the norms' (shifted) sums; softmax's maximum and the sum rescaled to it.
  float s1 = 0, s2 = 0;
  const float centre = OP == RowOp::layer_norm ? Conv<T>::to(xe[begin]) : 0.0f;
  if constexpr (kNorm) {
    for_each_pack(Four{}, [&](int64_t, const P& v, auto first, auto last) {
      float f[VEC];
      unpack(v, f);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const float d = k >= first && k < last ? f[k] - centre : 0.0f;
        s1 += d, s2 += d * d;
      }
    });
    if constexpr (OP == RowOp::layer_norm)
      row_allreduce_sum2(s1, s2, THREADS, scratch);
    else
      s2 = row_allreduce(s2, THREADS, scratch, SumOp{});
  } else {
    float m = MaxOp::identity(), s = 0;
    for_each_pack(Four{}, [&](int64_t, const P& v, auto first, auto last) {
      float fv[VEC];
      unpack(v, fv);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        if (k < first || k >= last) continue;
        const float f = fv[k];
        if (f > m) s *= exp2_ftz((m - f) * kLog2e), m = f;
        s += exp2_ftz((f - m) * kLog2e);
      }
    });
    s1 = row_allreduce(m, THREADS, scratch, MaxOp{});
    s2 = row_allreduce(m == MaxOp::identity() ? 0.0f : s * exp2_ftz((m - s1) * kLog2e), THREADS, scratch, SumOp{});
  }
#if __CUDA_ARCH__ >= 900
  if (parts > 1) {  // every block reads every block's partial, then waits until all have read before leaving
    if (threadIdx.x == 0) partial[0] = s1, partial[1] = s2;
    cluster.sync();
    float t1 = kNorm ? 0.0f : MaxOp::identity(), t2 = 0;
    for (unsigned r = 0; r < parts; ++r) {
      const float* other = cluster.map_shared_rank(partial, r);
      if constexpr (kNorm) {
        t1 += other[0], t2 += other[1];
      } else {
        t1 = fmaxf(t1, other[0]);
      }
    }
    if constexpr (!kNorm)
      for (unsigned r = 0; r < parts; ++r) {
        const float* other = cluster.map_shared_rank(partial, r);
        if (other[0] != MaxOp::identity()) t2 += other[1] * exp2_ftz((other[0] - t1) * kLog2e);
      }
    cluster.sync();
    s1 = t1, s2 = t2;
  }
#else
  (void)partial;
#endif
  const float n = static_cast<float>(a.cols);
  float mean = 0, scale = 1;
  if constexpr (OP == RowOp::layer_norm) {
    s1 /= n, s2 /= n;
    mean = centre + s1;
    scale = rsqrtf(fmaxf(s2 - s1 * s1, 0.0f) + a.eps);
  } else if constexpr (is_rms(OP)) {
    scale = rsqrtf(s2 / n + a.eps);
  } else {
    mean = s1, scale = 1.0f / s2;
  }
  T* ye = static_cast<T*>(a.y);
  P* y = static_cast<P*>(a.y);
  for_each_pack(Output{}, [&](int64_t g, const P& v, auto first, auto last) {
    P out;
    if constexpr (kNorm) {
      const int64_t e0 = g * VEC - begin;  // the row's column under the pack's first element
      P wp{}, bp{};
      if (a.weight) wp = load_columns<T, VEC>(a.weight, e0, shift, a.cols);
      if (OP == RowOp::layer_norm && a.bias) bp = load_columns<T, VEC>(a.bias, e0, shift, a.cols);
      finish_norm<OP, T, VEC>(a, v, wp, bp, mean, scale, out);
    } else {
      finish_exp<OP, T, VEC>(a, static_cast<uint64_t>(g) * VEC, v, mean, scale, out);
    }
    if (first == 0 && last == VEC) {
      y[g] = out;
    } else {
#pragma unroll
      for (int k = 0; k < VEC; ++k)
        if (k >= first && k < last) ye[g * VEC + k] = out.v[k];
    }
  });
}

// Launches a span kernel over rows × parts blocks, `parts` blocks a cluster (sm_90 and later).
template <class Kernel>
cudaError_t launch_span(Kernel kernel, const RowArgs& a, int threads, int parts, cudaStream_t s) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(a.rows * parts));
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.stream = s;
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = static_cast<unsigned>(parts), cluster.val.clusterDim.y = 1, cluster.val.clusterDim.z = 1;
  if (parts > 1) config.attrs = &cluster, config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, a);
}

template <RowOp OP, class T, int VEC>
cudaError_t launch_planned(const RowArgs& a, const RowPlan& plan, cudaStream_t s) {
  if constexpr (VEC > 1)
    if (plan.span) {
      if (plan.block_threads == 1024) return launch_span(row_kernel_span<OP, T, VEC, 1024>, a, 1024, plan.parts, s);
      if (plan.block_threads == 256) return launch_span(row_kernel_span<OP, T, VEC, 256>, a, 256, plan.parts, s);
      return cudaErrorInvalidValue;
    }
  if (plan.accesses_per_thread == 0) {
    const auto rows = static_cast<unsigned>(a.rows);
    if (!plan.cache_hints && plan.block_threads == 1024 && plan.in_flight == 4) {
      row_kernel_wide<OP, T, VEC><<<rows, 1024, 0, s>>>(a);
      return cudaGetLastError();
    }
    // The hinted plans plan_row picks (16-byte packs): block threads × accesses in flight. Not softmax + dropout,
    // which never reads a row twice.
    if constexpr (VEC > 1 && OP != RowOp::softmax_dropout && OP != RowOp::add_rms_norm) {
      auto launch = [&](auto kernel, int threads) {
        kernel<<<rows, threads, 0, s>>>(a);
        return cudaGetLastError();
      };
      // Key: block threads, accesses in flight, blocks an SM asked for, 1 where the second read is a plain load.
      // The shapes only RMSNorm's plans take are built for it alone (LayerNorm's kernel would spill at three blocks
      // of 512).
      constexpr bool kRms = OP == RowOp::rms_norm;
      const int key =
          plan.block_threads * 1000 + plan.in_flight * 100 + plan.min_blocks * 10 + (plan.hint_second_read ? 0 : 1);
      if (plan.cache_hints) switch (key) {
          case 256280:
            if constexpr (kRms) return launch(row_kernel_wide<OP, T, VEC, 256, 2, true, 8>, 256);
            break;
          case 512241:
            if constexpr (kRms) return launch(row_kernel_wide<OP, T, VEC, 512, 2, true, 4, false>, 512);
            break;
          case 512410:
            return launch(row_kernel_wide<OP, T, VEC, 512, 4, true>, 512);
          case 512430:
            if constexpr (kRms) return launch(row_kernel_wide<OP, T, VEC, 512, 4, true, 3>, 512);
            break;
          case 1024110:
            return launch(row_kernel_wide<OP, T, VEC, 1024, 1, true>, 1024);
          case 1024210:
            return launch(row_kernel_wide<OP, T, VEC, 1024, 2, true>, 1024);
          case 1024410:
            return launch(row_kernel_wide<OP, T, VEC, 1024, 4, true>, 1024);
          default:
            break;
        }
    }
    return cudaErrorInvalidValue;
  }
  const int64_t rows_per_block = int64_t{plan.block_threads} / plan.threads_per_row * plan.rows_per_thread;
  const auto grid = static_cast<unsigned>((a.rows + rows_per_block - 1) / rows_per_block);
  const bool full = a.cols == int64_t{VEC} * plan.threads_per_row * plan.accesses_per_thread;
  auto launch = [&](auto kernel) {
    kernel<<<grid, plan.block_threads, 0, s>>>(a, plan.threads_per_row);
    return cudaGetLastError();
  };
  const int key = plan.accesses_per_thread * 10 + plan.rows_per_thread;
  if constexpr (VEC > 1 && OP != RowOp::softmax_dropout)
    if (plan.few) {
      if (plan.block_threads > 512) return cudaErrorInvalidValue;
      switch (key) {
        case 11:
          return full ? launch(row_kernel_few<OP, T, VEC, 1, true>) : launch(row_kernel_few<OP, T, VEC, 1, false>);
        case 21:
          return full ? launch(row_kernel_few<OP, T, VEC, 2, true>) : launch(row_kernel_few<OP, T, VEC, 2, false>);
        case 41:
          return full ? launch(row_kernel_few<OP, T, VEC, 4, true>) : launch(row_kernel_few<OP, T, VEC, 4, false>);
        default:
          return cudaErrorInvalidValue;
      }
    }
  switch (key) {
    case 11:
      return full ? launch(row_kernel<OP, T, VEC, 1, true>) : launch(row_kernel<OP, T, VEC, 1, false>);
    case 21:
      return full ? launch(row_kernel<OP, T, VEC, 2, true>) : launch(row_kernel<OP, T, VEC, 2, false>);
    case 41:
      return full ? launch(row_kernel<OP, T, VEC, 4, true>) : launch(row_kernel<OP, T, VEC, 4, false>);
    default:
      break;
  }
  // LayerNorm's and RMSNorm's 16-byte plans also take two rows a thread, or eight accesses, in blocks of up to 512 (the
  // residual add's never do).
  if constexpr (VEC > 1 && (OP == RowOp::layer_norm || OP == RowOp::rms_norm)) {
    if (plan.block_threads > 512) return cudaErrorInvalidValue;
    switch (key) {
      case 12:
        return full ? launch(row_kernel<OP, T, VEC, 1, true, 2>) : launch(row_kernel<OP, T, VEC, 1, false, 2>);
      case 22:
        return full ? launch(row_kernel<OP, T, VEC, 2, true, 2>) : launch(row_kernel<OP, T, VEC, 2, false, 2>);
      case 42:
        return full ? launch(row_kernel<OP, T, VEC, 4, true, 2>) : launch(row_kernel<OP, T, VEC, 4, false, 2>);
      case 81:
        return full ? launch(row_kernel8<OP, T, VEC, true>) : launch(row_kernel8<OP, T, VEC, false>);
      default:
        break;
    }
  }
  return cudaErrorInvalidValue;
}

// The current GPU's SMs where it has thread-block clusters (compute capability 9.0 on), else 0: what plan_row
// splits rows over. (The runtime answers attribute queries from its cache.)
inline int cluster_sms() {
  int device = 0, major = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
    return 0;
  return major >= 9 ? sms : 0;
}

template <RowOp OP, class T>
cudaError_t launch_row_typed(const RowArgs& a, cudaStream_t s) {
  const DType dt = sizeof(T) == 4 ? DType::f32 : (std::is_same_v<T, __half> ? DType::f16 : DType::bf16);
  const bool aligned =
      (reinterpret_cast<uintptr_t>(a.x) | reinterpret_cast<uintptr_t>(a.y) | reinterpret_cast<uintptr_t>(a.weight) |
       reinterpret_cast<uintptr_t>(a.bias) | reinterpret_cast<uintptr_t>(a.residual)) %
          16 ==
      0;
  const RowPlan plan = plan_row(OP, dt, a.cols, aligned, a.rows, cluster_sms());
  if (plan.vector) return launch_planned<OP, T, 16 / sizeof(T)>(a, plan, s);
  return launch_planned<OP, T, 1>(a, plan, s);
}

template <RowOp OP>
cudaError_t launch_row_op(DType dtype, const RowArgs& a, cudaStream_t s) {
  switch (dtype) {
    case DType::f32:
      return launch_row_typed<OP, float>(a, s);
    case DType::f16:
      return launch_row_typed<OP, __half>(a, s);
    case DType::bf16:
      return launch_row_typed<OP, __nv_bfloat16>(a, s);
  }
  return cudaErrorInvalidValue;
}

}  // namespace
}  // namespace gsq::kernels
