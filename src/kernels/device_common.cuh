// Device helpers the kernels share: dtype conversion, 16-byte packs, row reductions.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/launch.hpp"

namespace gsq::kernels {

template <class T>
struct Conv;
template <>
struct Conv<float> {
  __device__ static float to(float v) { return v; }
  __device__ static float from(float v) { return v; }
};
template <>
struct Conv<__half> {
  __device__ static float to(__half v) { return __half2float(v); }
  __device__ static __half from(float v) { return __float2half_rn(v); }
};
template <>
struct Conv<__nv_bfloat16> {
  __device__ static float to(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 from(float v) { return __float2bfloat16_rn(v); }
};

// N elements moved as one access (16 bytes when N = 16 / sizeof(T)).
template <class T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

constexpr float kLog2e = 1.4426950408889634f;

// 2^x on the SFU with subnormal results flushed to zero: ex2.approx.ftz is one MUFU.EX2, where exp2f / __expf
// without -ftz add a range test and two multiplies to every call. Softmax calls it as
// exp(x - max) = 2^(x * log2(e) - max * log2(e)), one FFMA before it.
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// The values of a pack as floats. bf16 pairs take one integer op each (the low element shifted up, the high one
// masked in place) where converting element by element costs an extract and a shift for every high one.
template <class T, int N>
__device__ __forceinline__ void unpack(const Pack<T, N>& p, float (&f)[N]) {
  if constexpr (std::is_same_v<T, __nv_bfloat16> && N % 2 == 0) {
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      uint32_t w;
      memcpy(&w, &p.v[2 * i], sizeof w);
      f[2 * i] = __uint_as_float(w << 16);
      f[2 * i + 1] = __uint_as_float(w & 0xffff0000u);
    }
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) f[k] = Conv<T>::to(p.v[k]);
  }
}

struct SumOp {
  __device__ static float identity() { return 0.0f; }
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ static float identity() { return -__int_as_float(0x7f800000); }
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// All-reduce over aligned groups of `width` lanes (a power of two up to 32).
template <class Op>
__device__ __forceinline__ float warp_allreduce(float v, Op op, int width = 32) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1)
    if (m < width) v = op(v, __shfl_xor_sync(0xffffffffu, v, m));
  return v;
}

// All-reduce over the `tpr` threads that share a row; tpr is a power of two from 4 to 1024, the same for the whole
// block (so the __syncthreads are uniform), and a block holds blockDim.x / tpr rows. scratch: 32 floats.
template <class Op>
__device__ __forceinline__ float row_allreduce(float v, int tpr, float* scratch, Op op) {
  v = warp_allreduce(v, op, tpr < 32 ? tpr : 32);
  if (tpr <= 32) return v;
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const unsigned warps_per_row = static_cast<unsigned>(tpr) / 32, first = warp & ~(warps_per_row - 1);
  v = warp_allreduce(lane < warps_per_row ? scratch[first + lane] : Op::identity(), op);
  __syncthreads();  // scratch is reused by the next reduction
  return v;
}

// Two sums over the row's threads at once (one set of shuffles and barriers for both); scratch: 64 floats.
__device__ __forceinline__ void row_allreduce_sum2(float& a, float& b, int tpr, float* scratch) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1)
    if (m < tpr) a += __shfl_xor_sync(0xffffffffu, a, m), b += __shfl_xor_sync(0xffffffffu, b, m);
  if (tpr <= 32) return;
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = a, scratch[32 + warp] = b;
  __syncthreads();
  const unsigned warps_per_row = static_cast<unsigned>(tpr) / 32, first = warp & ~(warps_per_row - 1);
  a = lane < warps_per_row ? scratch[first + lane] : 0.0f;
  b = lane < warps_per_row ? scratch[32 + first + lane] : 0.0f;
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) a += __shfl_xor_sync(0xffffffffu, a, m), b += __shfl_xor_sync(0xffffffffu, b, m);
  __syncthreads();
}

}  // namespace gsq::kernels
