// Device primitives of the weight-only quantized GEMMs: register views of pairs, dequantization of a gsq.w4/1 word,
// streaming loads, cp.async, the tensor-core mma and the warp/mma epilogues (quant_kernels.cuh builds the kernels on
// them; bench/tune/quant_tune_kernels.cuh the tuner's extra variants).
#pragma once

#include "kernels/device_common.cuh"

#include <type_traits>

namespace gsq::kernels::quant_detail {

// The 32 bits of a word as a pair, a register reinterpretation (building it from two 16-bit halves made the compiler
// emit a shift and a byte permute per pair).
template <class T2>
__device__ __forceinline__ T2 bits_as(uint32_t b) {
  static_assert(sizeof(T2) == 4);
  union {
    uint32_t u;
    T2 v;
  } r{b};
  return r.v;
}

template <class T>
struct Pair;
template <>
struct Pair<__half> {
  using T2 = __half2;
  static constexpr uint32_t kMagic = 0x64006400u;  // 1024 in each half: 1024 + u is exact for u < 1024
  __device__ static T2 magic_plus_8() {            // 1032: (1024 + u) - 1032 = u - 8, exact
    return __halves2half2(__ushort_as_half(0x6408), __ushort_as_half(0x6408));
  }
  __device__ static float2 to_float2(T2 v) { return __half22float2(v); }
  __device__ static T2 from_bits(uint32_t b) { return bits_as<T2>(b); }
  __device__ static float low_to_float(uint32_t b) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(b)));
  }
};
template <>
struct Pair<__nv_bfloat16> {
  using T2 = __nv_bfloat162;
  static constexpr uint32_t kMagic = 0x43004300u;  // 128 in each half: 128 + u is exact for u < 128
  __device__ static T2 magic_plus_8() {            // 136: (128 + u) - 136 = u - 8, exact
    return __halves2bfloat162(__ushort_as_bfloat16(0x4308), __ushort_as_bfloat16(0x4308));
  }
  __device__ static float2 to_float2(T2 v) { return __bfloat1622float2(v); }
  __device__ static T2 from_bits(uint32_t b) { return bits_as<T2>(b); }
  __device__ static float low_to_float(uint32_t b) { return __uint_as_float(b << 16); }
};

constexpr int kWarps = 4;

// 16 bytes read once: no L1 allocation, so the activations every warp re-reads stay in L1.
__device__ __forceinline__ uint4 load_stream(const uint4* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// (a & Mask) | Or in one LOP3: written as two operations, the compiler emits an AND and an OR (both constants cannot
// be immediates of one instruction); with the asm it keeps Or in a register and fuses them.
template <uint32_t Mask, uint32_t Or>
__device__ __forceinline__ uint32_t and_or(uint32_t a) {
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(r) : "r"(a), "n"(Mask), "n"(Or));
  return r;
}

// The four pairs (u - 8) of one gsq.w4/1 word. fp16: the nibbles in bits 4…7 are or-ed in place, giving 1024 + 16u,
// and one fma by 1/16 with -72 centres them (exact), so a word costs one shift, four masks and four half2 operations.
// bf16 has 7 mantissa bits: each nibble is shifted to the bottom first.
template <class T>
__device__ __forceinline__ void dequant_word(uint32_t wd, typename Pair<T>::T2 (&q)[4]) {
  using P = Pair<T>;
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 sixteenth = __halves2half2(__ushort_as_half(0x2C00), __ushort_as_half(0x2C00));
    const __half2 minus_72 = __halves2half2(__ushort_as_half(0xD480), __ushort_as_half(0xD480));
    const uint32_t hi = wd >> 8;
    q[0] = __hsub2(P::from_bits(and_or<0x000F000Fu, P::kMagic>(wd)), P::magic_plus_8());
    q[1] = __hfma2(P::from_bits(and_or<0x00F000F0u, P::kMagic>(wd)), sixteenth, minus_72);
    q[2] = __hsub2(P::from_bits(and_or<0x000F000Fu, P::kMagic>(hi)), P::magic_plus_8());
    q[3] = __hfma2(P::from_bits(and_or<0x00F000F0u, P::kMagic>(hi)), sixteenth, minus_72);
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      q[i] = __hsub2(P::from_bits(and_or<0x000F000Fu, P::kMagic>(wd >> (4 * i))), P::magic_plus_8());
  }
}

// Word j of a 16- or 8-byte chunk (j a constant after unrolling; indexing through a pointer would put the chunk on
// the stack).
__device__ __forceinline__ uint32_t word_of(const uint4& v, int j) {
  return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
}
__device__ __forceinline__ uint32_t word_of(const uint2& v, int j) {
  return j == 0 ? v.x : v.y;
}

// threadIdx.x read again for an epilogue: a thread index kept live across a kernel's main loop was spilled by ptxas
// in some instantiations (8 bytes of stack); the volatile read keeps it out of the loop.
__device__ __forceinline__ unsigned reread_tid() {
  unsigned tid;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(tid));
  return tid;
}

// The warp kernels' epilogue: each warp reduces its lanes' sums of its R channels; with KS > 1 the first warp of the
// channels adds the other parts' sums. Lane (r·MT + m) % 32 stores (row m, channel n0 + r).
template <int R, int MT, int KS, class Store>
__device__ __forceinline__ void warp_sums_store(float (&acc)[R][MT], int64_t n0, int64_t n, int m_rows, Store&& store) {
  __shared__ float partial[kWarps][R][MT];
  const unsigned tid = reread_tid();
  const int warp = static_cast<int>(tid / 32), lane = static_cast<int>(tid % 32);
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int m = 0; m < MT; ++m) {
      acc[r][m] = warp_allreduce(acc[r][m], SumOp{});
      if (KS > 1 && lane == 0) partial[warp][r][m] = acc[r][m];
    }
  if constexpr (KS > 1) {
    __syncthreads();
    if (warp % KS != 0) return;
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int m = 0; m < MT; ++m) {
      if (lane != (r * MT + m) % 32) continue;
      float v = acc[r][m];
#pragma unroll
      for (int p = 1; p < KS; ++p) v += partial[warp + p][r][m];
      if (m < m_rows && n0 + r < n) store(m, n0 + r, v);
    }
}

// Asynchronous copies global → shared (cp.async, Ampere and later): with valid = false they write zeros and read
// nothing.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile(
      "cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(dst))),
      "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async4(void* dst, const void* src, bool valid) {
  asm volatile(
      "cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(dst))),
      "l"(src), "r"(valid ? 4 : 0));
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;");
}
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(Pending));
}

// The bits of a pair as a 32-bit register (the inverse of bits_as).
template <class T2>
__device__ __forceinline__ uint32_t as_bits(T2 v) {
  static_assert(sizeof(T2) == 4);
  union {
    T2 v;
    uint32_t u;
  } r{v};
  return r.u;
}

// d += A·B on the tensor cores, m16n8k16 with fp32 accumulators; A and B as the pairs PTX's fragment layout names.
template <class T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __half>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

__device__ __forceinline__ void cp_async8(void* dst, const void* src, bool valid) {
  asm volatile(
      "cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(dst))),
      "l"(src), "r"(valid ? 8 : 0));
}

// The tensor-core kernels' epilogue. A warp's accumulators are RT × NT mma C fragments: lane (g, q) holds rows
// g, g + 8 of each m-tile (channels) for X rows 8nt + 2q, 8nt + 2q + 1. With KS > 1 the first warp of the channels
// adds the other parts' fragments through shared memory, then stores.
template <int RT, int NT, int KS, class Store>
__device__ __forceinline__ void mma_sums_store(float (&acc)[RT][NT][4], int64_t n, int m_rows, Store&& store) {
  const unsigned tid = reread_tid();
  const int warp = static_cast<int>(tid / 32), lane = static_cast<int>(tid % 32), g = lane / 4, q = lane % 4;
  const int64_t n0 = (static_cast<int64_t>(blockIdx.x) * (kWarps / KS) + warp / KS) * (16 * RT);
  if constexpr (KS > 1) {
    __shared__ float partial[kWarps][RT][NT][4][32];
#pragma unroll
    for (int r = 0; r < RT; ++r)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) partial[warp][r][nt][e][lane] = acc[r][nt][e];
    __syncthreads();
    if (warp % KS != 0) return;
#pragma unroll
    for (int r = 0; r < RT; ++r)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
#pragma unroll
          for (int p = 1; p < KS; ++p) acc[r][nt][e] += partial[warp + p][r][nt][e][lane];
  }
#pragma unroll
  for (int r = 0; r < RT; ++r)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t col = n0 + 16 * r + g + 8 * (e / 2);
        const int m = 8 * nt + 2 * q + e % 2;
        if (m < m_rows && col < n) store(m, col, acc[r][nt][e]);
      }
}

}  // namespace gsq::kernels::quant_detail
