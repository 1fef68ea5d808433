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
#include "kernels/quant_kernels.cuh"

namespace gsq::kernels {

namespace {

using namespace quant_detail;

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
