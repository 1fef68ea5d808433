// Device side of the weight-only quantized GEMMs (quant.cu launches them; tests/kernels/quant_tune.cu sweeps their
// configurations on the device). See quant.cu for the design and quant.hpp for the weight layouts.
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

// The block's warps split K: each warp reduces its lanes' sums, warp 0 adds the warps' partials and stores.
template <int NPW, int MT, class Store>
__device__ __forceinline__ void reduce_and_store(float (&acc)[NPW][MT], int64_t n0, int64_t n, int m_rows,
                                                 Store&& store) {
  __shared__ float partial[kWarps][NPW][MT];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int r = 0; r < NPW; ++r)
#pragma unroll
    for (int m = 0; m < MT; ++m) {
      const float v = warp_allreduce(acc[r][m], SumOp{});
      if (lane == 0) partial[warp][r][m] = v;
    }
  __syncthreads();
  if (warp != 0) return;
  for (int i = lane; i < NPW * MT; i += 32) {
    const int r = i / MT, m = i % MT;
    float v = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) v += partial[w][r][m];
    if (m < m_rows && n0 + r < n) store(m, n0 + r, v);
  }
}

// A lane takes one word (8 weights) of each of the block's NPW channels per step.
template <class T, int MT, int NPW>
__global__ void __launch_bounds__(kWarps * 32)
    w4a16_kernel(T* __restrict__ y, const T* __restrict__ x, const uint32_t* __restrict__ w,
                 const __half2* __restrict__ params, const T* __restrict__ bias, int m_rows, int64_t n, int64_t k,
                 int group) {
  using P = Pair<T>;
  using T2 = typename P::T2;
  constexpr int KPL = 8, kWords = 1, kPairs = 4;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * NPW;  // the block's rows; its 128 threads split K
  const int64_t words_per_row = k / 8, groups = k / group;
  float acc[NPW][MT] = {};
#pragma unroll 1  // unrolled twice, the M = 8 fp16 instantiation got a stack frame
  for (int64_t k0 = static_cast<int64_t>(threadIdx.x) * KPL; k0 < k; k0 += kWarps * 32 * KPL) {
    T2 xv[MT][kPairs];
    float xs[MT];
#pragma unroll
    for (int m = 0; m < MT; ++m) {
      xs[m] = 0;
#pragma unroll
      for (int v = 0; v < kWords; ++v) {
        uint4 raw = make_uint4(0, 0, 0, 0);
        if (m < m_rows) raw = *reinterpret_cast<const uint4*>(x + m * k + k0 + 8 * v);
        xv[m][4 * v + 0] = P::from_bits(raw.x), xv[m][4 * v + 1] = P::from_bits(raw.y);
        xv[m][4 * v + 2] = P::from_bits(raw.z), xv[m][4 * v + 3] = P::from_bits(raw.w);
      }
#pragma unroll
      for (int p = 0; p < kPairs; ++p) {
        const float2 f = P::to_float2(xv[m][p]);
        xs[m] += f.x + f.y;
      }
    }
    const int64_t g = k0 / group;
#pragma unroll
    for (int r = 0; r < NPW; ++r) {
      const int64_t row = n0 + r < n ? n0 + r : n - 1;
      const uint32_t wd[kWords] = {w[row * words_per_row + k0 / 8]};
      T2 q[kPairs];
#pragma unroll
      for (int j = 0; j < kWords; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i)
          q[4 * j + i] = __hsub2(P::from_bits(((wd[j] >> (4 * i)) & 0x000F000Fu) | P::kMagic), P::magic_plus_8());
      // w = u·s + o = (u - 8)·s + (o + 8s): centred nibbles keep the fp16/bf16 partial sums free of cancellation.
      const float2 so = __half22float2(params[row * groups + g]);
      const float centred_offset = so.y + 8.0f * so.x;
#pragma unroll
      for (int m = 0; m < MT; ++m) {
        float dot = 0;
#pragma unroll
        for (int j = 0; j < kWords; ++j) {
          if constexpr (std::is_same_v<T, __half>) {  // 8 products summed in fp16 pairs, then fp32
            T2 h = P::from_bits(0u);
#pragma unroll
            for (int i = 0; i < 4; ++i) h = __hfma2(xv[m][4 * j + i], q[4 * j + i], h);
            const float2 f = P::to_float2(h);
            dot += f.x + f.y;
          } else {  // bf16 keeps 8 bits: each product rounded once, the sum in fp32
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              const float2 f = P::to_float2(__hmul2(xv[m][4 * j + i], q[4 * j + i]));
              dot += f.x + f.y;
            }
          }
        }
        acc[r][m] += so.x * dot + centred_offset * xs[m];
      }
    }
  }
  reduce_and_store<NPW, MT>(acc, n0, n, m_rows, [&](int m, int64_t col, float v) {
    if (bias) v += Conv<T>::to(bias[col]);
    y[m * n + col] = Conv<T>::from(v);
  });
}

// 16 bytes read once: no L1 allocation, so the activations every warp re-reads stay in L1.
__device__ __forceinline__ uint4 load_stream(const uint4* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
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
    q[0] = __hsub2(P::from_bits((wd & 0x000F000Fu) | P::kMagic), P::magic_plus_8());
    q[1] = __hfma2(P::from_bits((wd & 0x00F000F0u) | P::kMagic), sixteenth, minus_72);
    q[2] = __hsub2(P::from_bits((hi & 0x000F000Fu) | P::kMagic), P::magic_plus_8());
    q[3] = __hfma2(P::from_bits((hi & 0x00F000F0u) | P::kMagic), sixteenth, minus_72);
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      q[i] = __hsub2(P::from_bits(((wd >> (4 * i)) & 0x000F000Fu) | P::kMagic), P::magic_plus_8());
  }
}

// The warp kernels' epilogue: each warp reduces its lanes' sums of its R channels; with KS > 1 the first warp of the
// channels adds the other parts' sums. Lane (r·MT + m) % 32 stores (row m, channel n0 + r).
template <int R, int MT, int KS, class Store>
__device__ __forceinline__ void warp_sums_store(float (&acc)[R][MT], int64_t n0, int64_t n, int m_rows, Store&& store) {
  __shared__ float partial[kWarps][R][MT];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
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

// One warp owns R output channels and walks K (or 1/KS of it, KS warps of the block sharing the channels) in chunks
// of 32 weights: a lane reads one 16-byte chunk per channel, U chunks per channel in flight before any is used, so a
// warp streams 512 contiguous bytes of each of its channels per step. The activations (8 per word, per row of X) come
// from L1 and are shared by the R channels; the group's (scale, offset) applies once per chunk. Σ x·w =
// s·Σ x·(u - 8) + (o + 8s)·Σ x, and o + 8s is exactly 0 for symmetric weights, so Σ x is only formed where a lane of
// the warp needs it.
template <class T, int MT, int R, int U, int KS>
__global__ void __launch_bounds__(kWarps * 32)
    w4a16_warp_kernel(T* __restrict__ y, const T* __restrict__ x, const uint32_t* __restrict__ w,
                      const __half2* __restrict__ params, const T* __restrict__ bias, int m_rows, int64_t n, int64_t k,
                      int group) {
  using P = Pair<T>;
  using T2 = typename P::T2;
  static_assert(kWarps % KS == 0, "the block's warps split K KS ways");
  constexpr int kRowGroups = kWarps / KS;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, part = warp % KS;
  const int64_t n0 = (static_cast<int64_t>(blockIdx.x) * kRowGroups + warp / KS) * R;
  const int64_t chunks = k / 32, groups = k / group;
  const int chunk_shift = group == 128 ? 2 : 1;  // a group is 4 or 2 chunks
  const uint4* wrow[R];
  const __half2* prow[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t row = n0 + r < n ? n0 + r : n - 1;
    wrow[r] = reinterpret_cast<const uint4*>(w + row * (k / 8));
    prow[r] = params + row * groups;
  }
  float acc[R][MT] = {};
  for (int64_t c0 = part * 32 + lane; c0 - lane < chunks; c0 += KS * 32 * U) {
    uint4 wv[U][R];
    __half2 pv[U][R];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t c = c0 + u * KS * 32;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        wv[u][r] = c < chunks ? load_stream(wrow[r] + c) : make_uint4(0, 0, 0, 0);
        pv[u][r] = c < chunks ? prow[r][c >> chunk_shift] : __half2{};
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t c = c0 + u * KS * 32;
      float2 so[R];
      bool offset = false;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        so[r] = __half22float2(pv[u][r]);
        so[r].y += 8.0f * so[r].x;  // the centred offset o + 8s
        offset |= so[r].y != 0.0f;
      }
      offset = __any_sync(0xffffffffu, offset);
      float dot[R][MT] = {}, xs[MT] = {};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        T2 q[R][4];
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const uint4& v = wv[u][r];
          dequant_word<T>(j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w, q[r]);
        }
#pragma unroll
        for (int m = 0; m < MT; ++m) {
          uint4 raw = make_uint4(0, 0, 0, 0);
          if (m < m_rows && c < chunks) raw = __ldg(reinterpret_cast<const uint4*>(x + m * k + c * 32 + 8 * j));
          const T2 xv[4] = {P::from_bits(raw.x), P::from_bits(raw.y), P::from_bits(raw.z), P::from_bits(raw.w)};
          if (offset) {
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              const float2 f = P::to_float2(xv[i]);
              xs[m] += f.x + f.y;
            }
          }
#pragma unroll
          for (int r = 0; r < R; ++r) {
            if constexpr (std::is_same_v<T, __half>) {  // 8 products summed in fp16 pairs, then fp32
              T2 h = P::from_bits(0u);
#pragma unroll
              for (int i = 0; i < 4; ++i) h = __hfma2(xv[i], q[r][i], h);
              const float2 f = P::to_float2(h);
              dot[r][m] += f.x + f.y;
            } else {  // bf16 keeps 8 bits: each product rounded once, the sum in fp32
#pragma unroll
              for (int i = 0; i < 4; ++i) {
                const float2 f = P::to_float2(__hmul2(xv[i], q[r][i]));
                dot[r][m] += f.x + f.y;
              }
            }
          }
        }
      }
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int m = 0; m < MT; ++m) acc[r][m] += so[r].x * dot[r][m] + so[r].y * xs[m];
    }
  }
  warp_sums_store<R, MT, KS>(acc, n0, n, m_rows, [&](int m, int64_t col, float v) {
    if (bias) v += Conv<T>::to(bias[col]);
    y[m * n + col] = Conv<T>::from(v);
  });
}

// A lane takes 4 weights (one word) of each of the block's NPW channels per step.
template <class T, int MT, int NPW>
__global__ void __launch_bounds__(kWarps * 32)
    w8a16_kernel(T* __restrict__ y, const T* __restrict__ x, const uint8_t* __restrict__ w,
                 const float* __restrict__ scales, const T* __restrict__ bias, int m_rows, int64_t n, int64_t k) {
  constexpr int KPL = 4;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * NPW;
  float acc[NPW][MT] = {};
#pragma unroll 2
  for (int64_t k0 = static_cast<int64_t>(threadIdx.x) * KPL; k0 < k; k0 += kWarps * 32 * KPL) {
    float xf[MT][KPL];
#pragma unroll
    for (int m = 0; m < MT; ++m) {
      uint32_t raw[KPL / 2] = {};  // KPL 16-bit activations, as words
      if (m < m_rows) {
        const uint2 q2 = *reinterpret_cast<const uint2*>(x + m * k + k0);
        raw[0] = q2.x, raw[1] = q2.y;
      }
#pragma unroll
      for (int c = 0; c < KPL; ++c) xf[m][c] = Pair<T>::low_to_float(c % 2 ? raw[c / 2] >> 16 : raw[c / 2]);
    }
#pragma unroll
    for (int r = 0; r < NPW; ++r) {
      const int64_t row = n0 + r < n ? n0 + r : n - 1;
      const uint32_t wd[KPL / 4] = {*reinterpret_cast<const uint32_t*>(w + row * k + k0)};
      float q[KPL];
#pragma unroll
      for (int c = 0; c < KPL; ++c)  // 2^23 + u as a float, minus 2^23 + 128: q exactly
        q[c] = __int_as_float(__byte_perm(wd[c / 4], 0x4B000000u, 0x7650u | (c % 4))) - 8388736.0f;
#pragma unroll
      for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int c = 0; c < KPL; ++c) acc[r][m] = fmaf(xf[m][c], q[c], acc[r][m]);
    }
  }
  reduce_and_store<NPW, MT>(acc, n0, n, m_rows, [&](int m, int64_t col, float v) {
    v *= scales[col];
    if (bias) v += Conv<T>::to(bias[col]);
    y[m * n + col] = Conv<T>::from(v);
  });
}

// W8A16 on the same plan as w4a16_warp_kernel: a warp owns R channels, a lane reads 16 weights (16 bytes) per channel
// per chunk, U chunks in flight; bytes become floats through the exponent trick, products accumulate in fp32 (int8
// times an activation can exceed what fp16 sums hold), and the channel's scale applies once at the end.
template <class T, int MT, int R, int U, int KS>
__global__ void __launch_bounds__(kWarps * 32)
    w8a16_warp_kernel(T* __restrict__ y, const T* __restrict__ x, const uint8_t* __restrict__ w,
                      const float* __restrict__ scales, const T* __restrict__ bias, int m_rows, int64_t n, int64_t k) {
  static_assert(kWarps % KS == 0, "the block's warps split K KS ways");
  constexpr int kRowGroups = kWarps / KS;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, part = warp % KS;
  const int64_t n0 = (static_cast<int64_t>(blockIdx.x) * kRowGroups + warp / KS) * R;
  const int64_t chunks = k / 16;
  const uint4* wrow[R];
#pragma unroll
  for (int r = 0; r < R; ++r) wrow[r] = reinterpret_cast<const uint4*>(w + (n0 + r < n ? n0 + r : n - 1) * k);
  float acc[R][MT] = {};
  for (int64_t c0 = part * 32 + lane; c0 - lane < chunks; c0 += KS * 32 * U) {
    uint4 wv[U][R];
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t c = c0 + u * KS * 32;
        wv[u][r] =
            c < chunks ? load_stream(wrow[r] + c) : make_uint4(0x80808080u, 0x80808080u, 0x80808080u, 0x80808080u);
      }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t c = c0 + u * KS * 32;
#pragma unroll
      for (int j = 0; j < 4; ++j) {  // word j: weights 4j … 4j + 3 of the chunk
        float q[R][4];
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const uint4& v = wv[u][r];
          const uint32_t wd = j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
#pragma unroll
          for (int i = 0; i < 4; ++i)  // 2^23 + u as a float, minus 2^23 + 128: u - 128 exactly
            q[r][i] = __int_as_float(__byte_perm(wd, 0x4B000000u, 0x7650u | i)) - 8388736.0f;
        }
#pragma unroll
        for (int m = 0; m < MT; ++m) {
          uint2 raw = make_uint2(0, 0);
          if (m < m_rows && c < chunks) raw = __ldg(reinterpret_cast<const uint2*>(x + m * k + c * 16 + 4 * j));
          const float xf[4] = {Pair<T>::low_to_float(raw.x), Pair<T>::low_to_float(raw.x >> 16),
                               Pair<T>::low_to_float(raw.y), Pair<T>::low_to_float(raw.y >> 16)};
#pragma unroll
          for (int r = 0; r < R; ++r)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[r][m] = fmaf(xf[i], q[r][i], acc[r][m]);
        }
      }
    }
  }
  warp_sums_store<R, MT, KS>(acc, n0, n, m_rows, [&](int m, int64_t col, float v) {
    v *= scales[col];
    if (bias) v += Conv<T>::to(bias[col]);
    y[m * n + col] = Conv<T>::from(v);
  });
}

}  // namespace gsq::kernels::quant_detail
