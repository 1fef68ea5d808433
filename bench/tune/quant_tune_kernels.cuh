// Kernels only the tuner runs: the first W4A16/W8A16 designs (a block's warps split K over NPW channels), kept as the
// baseline every sweep times the shipped kernels against. Not part of the library.
#pragma once

#include "kernels/quant_primitives.cuh"

namespace gsq::kernels::quant_detail {

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
      dequant_word<T>(wd[0], q);
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

}  // namespace gsq::kernels::quant_detail
