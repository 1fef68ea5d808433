// Weight-only quantized GEMV/GEMM for decoding: Y[M][N] = X[M][K] · dequant(W)ᵀ (+ bias), M = 1…16, on CUDA cores.
//
// At these M the work is bound by reading W, so the kernels are built around the weight stream: a block owns NPW output
// channels and its 128 threads walk K, each step loading KPL consecutive weights per channel (16 bytes per lane when M
// ≤ 2) and the matching KPL activations of every row once, shared by the NPW channels. INT4 nibbles become fp16/bf16
// pairs with one shift, one mask-or (the exponent of 1024 or 128 is or-ed in) and one subtraction; products of 8
// weights accumulate in fp16/bf16 pairs, then in fp32. The group's scale and offset apply once per 8 to 32 weights: Σ
// x·(u·s + o) = s·Σ x·(u - 8) + (o + 8s)·Σ x. INT8 converts through the fp32 exponent trick and accumulates in fp32.
// Tensor cores would need M padded to 16 and add nothing while W's bytes are the limit; the table in README shows where
// compute takes over as M grows.
#include "kernels/device_common.cuh"

#include <type_traits>

namespace gsq::kernels {

namespace {

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
  __device__ static T2 from_bits(uint32_t b) {
    return __halves2half2(__ushort_as_half(static_cast<unsigned short>(b)),
                          __ushort_as_half(static_cast<unsigned short>(b >> 16)));
  }
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
  __device__ static T2 from_bits(uint32_t b) {
    return __halves2bfloat162(__ushort_as_bfloat16(static_cast<unsigned short>(b)),
                              __ushort_as_bfloat16(static_cast<unsigned short>(b >> 16)));
  }
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

template <class T, int MT, int KPL, int NPW>
__global__ void __launch_bounds__(kWarps * 32)
    w4a16_kernel(T* __restrict__ y, const T* __restrict__ x, const uint32_t* __restrict__ w,
                 const __half2* __restrict__ params, const T* __restrict__ bias, int m_rows, int64_t n, int64_t k,
                 int group) {
  using P = Pair<T>;
  using T2 = typename P::T2;
  constexpr int kWords = KPL / 8, kPairs = KPL / 2;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * NPW;  // the block's rows; its 128 threads split K
  const int64_t words_per_row = k / 8, groups = k / group;
  float acc[NPW][MT] = {};
#pragma unroll 2
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
      uint32_t wd[kWords];
      if constexpr (kWords == 4) {
        const uint4 v = *reinterpret_cast<const uint4*>(w + row * words_per_row + k0 / 8);
        wd[0] = v.x, wd[1] = v.y, wd[2] = v.z, wd[3] = v.w;
      } else {
        wd[0] = w[row * words_per_row + k0 / 8];
      }
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

template <class T, int MT, int KPL, int NPW>
__global__ void __launch_bounds__(kWarps * 32)
    w8a16_kernel(T* __restrict__ y, const T* __restrict__ x, const uint8_t* __restrict__ w,
                 const float* __restrict__ scales, const T* __restrict__ bias, int m_rows, int64_t n, int64_t k) {
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * NPW;
  float acc[NPW][MT] = {};
#pragma unroll 2
  for (int64_t k0 = static_cast<int64_t>(threadIdx.x) * KPL; k0 < k; k0 += kWarps * 32 * KPL) {
    float xf[MT][KPL];
#pragma unroll
    for (int m = 0; m < MT; ++m) {
      uint32_t raw[KPL / 2] = {};  // KPL 16-bit activations, as words
      if (m < m_rows) {
        const auto* src = reinterpret_cast<const uint32_t*>(x + m * k + k0);
        if constexpr (KPL == 16) {
#pragma unroll
          for (int v = 0; v < 2; ++v) {
            const uint4 q4 = reinterpret_cast<const uint4*>(src)[v];
            raw[4 * v] = q4.x, raw[4 * v + 1] = q4.y, raw[4 * v + 2] = q4.z, raw[4 * v + 3] = q4.w;
          }
        } else {
          const uint2 q2 = *reinterpret_cast<const uint2*>(src);
          raw[0] = q2.x, raw[1] = q2.y;
        }
      }
#pragma unroll
      for (int c = 0; c < KPL; ++c) xf[m][c] = Pair<T>::low_to_float(c % 2 ? raw[c / 2] >> 16 : raw[c / 2]);
    }
#pragma unroll
    for (int r = 0; r < NPW; ++r) {
      const int64_t row = n0 + r < n ? n0 + r : n - 1;
      uint32_t wd[KPL / 4];
      if constexpr (KPL == 16) {
        const uint4 v = *reinterpret_cast<const uint4*>(w + row * k + k0);
        wd[0] = v.x, wd[1] = v.y, wd[2] = v.z, wd[3] = v.w;
      } else {
        wd[0] = *reinterpret_cast<const uint32_t*>(w + row * k + k0);
      }
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

// M is rounded up to the next instantiated row count; rows beyond m_rows read as 0 and are not stored.
template <class T, int MT>
cudaError_t w4_launch(const QuantArgs& a, cudaStream_t s) {
  // M = 2 runs the M = 4 kernel: ptxas gave the 2-row instantiation an 8-byte stack frame, the 4-row one none.
  if constexpr (MT == 2) {
    return w4_launch<T, 4>(a, s);
  } else {
    constexpr int KPL = MT == 1 ? 32 : 8, NPW = MT == 1 ? 8 : MT <= 8 ? 4 : 2;  // 8 rows share each x load at M = 1
    const auto grid = static_cast<unsigned>((a.n + NPW - 1) / NPW);
    w4a16_kernel<T, MT, KPL, NPW><<<grid, kWarps * 32, 0, s>>>(
        static_cast<T*>(a.y), static_cast<const T*>(a.x), static_cast<const uint32_t*>(a.w),
        static_cast<const __half2*>(a.params), static_cast<const T*>(a.bias), static_cast<int>(a.m), a.n, a.k,
        static_cast<int>(a.group));
    return cudaGetLastError();
  }
}

template <class T, int MT>
cudaError_t w8_launch(const QuantArgs& a, cudaStream_t s) {
  if constexpr (MT == 2) {  // as for W4A16: the 2-row instantiation got a stack frame
    return w8_launch<T, 4>(a, s);
  } else {
    constexpr int KPL = MT <= 2 ? 16 : 4, NPW = MT <= 8 ? 4 : 2;  // 8 rows at M = 1 measured slower (1.45× vs 1.80×)
    const auto grid = static_cast<unsigned>((a.n + NPW - 1) / NPW);
    w8a16_kernel<T, MT, KPL, NPW><<<grid, kWarps * 32, 0, s>>>(
        static_cast<T*>(a.y), static_cast<const T*>(a.x), static_cast<const uint8_t*>(a.w),
        static_cast<const float*>(a.params), static_cast<const T*>(a.bias), static_cast<int>(a.m), a.n, a.k);
    return cudaGetLastError();
  }
}

template <class T>
cudaError_t quant_typed(bool int4, const QuantArgs& a, cudaStream_t s) {
  auto pick = [&](auto mt) {
    constexpr int MT = decltype(mt)::value;
    return int4 ? w4_launch<T, MT>(a, s) : w8_launch<T, MT>(a, s);
  };
  if (a.m <= 1) return pick(std::integral_constant<int, 1>{});
  if (a.m <= 2) return pick(std::integral_constant<int, 2>{});
  if (a.m <= 4) return pick(std::integral_constant<int, 4>{});
  if (a.m <= 8) return pick(std::integral_constant<int, 8>{});
  return pick(std::integral_constant<int, 16>{});
}

}  // namespace

cudaError_t launch_quant_gemm(bool int4, DType dtype, const QuantArgs& a, cudaStream_t s) {
  if (dtype == DType::f16) return quant_typed<__half>(int4, a, s);
  if (dtype == DType::bf16) return quant_typed<__nv_bfloat16>(int4, a, s);
  return cudaErrorInvalidValue;
}

}  // namespace gsq::kernels
