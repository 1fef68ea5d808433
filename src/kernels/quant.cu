// Weight-only quantized GEMV/GEMM for decoding: Y[M][N] = X[M][K] · dequant(W)ᵀ (+ bias), M = 1…16.
//
// At these M the work would be bound by reading W, so the kernels are built around the weight stream
// (quant_kernels.cuh). M ≤ 2: CUDA-core warp kernels, a warp owns R output channels and walks K in 16-byte chunks per
// lane, U chunks per channel in flight, the activations shared by the R channels from L1; INT4 nibbles become
// fp16/bf16 pairs by or-ing them into the exponent of 1024 (or 128) and one subtraction or fma, products of 8 weights
// accumulate in fp16/bf16 pairs, then in fp32; INT8 converts through the fp32 exponent trick. M ≥ 4: tensor-core
// kernels (mma.sync m16n8k16, fp32 accumulators) on the same weight layouts: a warp owns 16·RT channels, weights
// stream through a per-thread cp.async ring, X rows fill the mma's 8 columns (two n-tiles at M = 16), so the
// dequantization is shared by all M rows instead of repeated per row. The group's scale and offset apply once per
// group: Σ x·(u·s + o) = s·Σ x·(u - 8) + (o + 8s)·Σ x.
#include "kernels/quant_kernels.cuh"

namespace gsq::kernels {

namespace {

using namespace quant_detail;

// SMs of the current device (the runtime answers from its cache).
int sm_count() {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
    return 132;
  return sms;
}

// Configurations measured with bench/tune/quant_tune.cu on the H200 (bench/results/2026-12-03-h200-quant-mma/,
// -quant-flush/): the CUDA-core warp kernels at M = 1 and 2, the tensor-core kernels from M = 4 on.
template <int R, int U, int KS>
struct WarpPlan {
  static constexpr int kRows = R, kChunks = U, kSplit = KS, kRowsPerBlock = kWarps / KS * R;
};

template <class T, int MT, class Plan>
cudaError_t w4_warp(const QuantArgs& a, cudaStream_t s) {
  const auto grid = static_cast<unsigned>((a.n + Plan::kRowsPerBlock - 1) / Plan::kRowsPerBlock);
  w4a16_warp_kernel<T, MT, Plan::kRows, Plan::kChunks, Plan::kSplit>
      <<<grid, kWarps * 32, 0, s>>>(static_cast<T*>(a.y), static_cast<const T*>(a.x), static_cast<const uint32_t*>(a.w),
                                    static_cast<const __half2*>(a.params), static_cast<const T*>(a.bias),
                                    static_cast<int>(a.m), a.n, a.k, static_cast<int>(a.group));
  return cudaGetLastError();
}

// The tensor-core kernels: RT m-tiles of 16 channels per warp, S cp.async stages, the block's 4 warps splitting K
// KS ways (W4A16: W = group / 32 words per lane and group).
template <int RT, int S, int KS>
struct MmaPlan {
  static constexpr int kTiles = RT, kStages = S, kSplit = KS, kRowsPerBlock = kWarps / KS * 16 * RT;
};

template <class T, int MT, class Plan>
cudaError_t w4_mma(const QuantArgs& a, cudaStream_t s) {
  constexpr int NT = MT <= 8 ? 1 : 2;
  const auto grid = static_cast<unsigned>((a.n + Plan::kRowsPerBlock - 1) / Plan::kRowsPerBlock);
  auto go = [&](auto kernel) {
    kernel<<<grid, kWarps * 32, 0, s>>>(static_cast<T*>(a.y), static_cast<const T*>(a.x),
                                        static_cast<const uint32_t*>(a.w), static_cast<const __half2*>(a.params),
                                        static_cast<const T*>(a.bias), static_cast<int>(a.m), a.n, a.k);
    return cudaGetLastError();
  };
  if (a.group == 64) return go(w4a16_mma_kernel<T, NT, Plan::kTiles, 2, Plan::kStages, Plan::kSplit>);
  return go(w4a16_mma_kernel<T, NT, Plan::kTiles, 4, Plan::kStages, Plan::kSplit>);
}

template <class T, int MT, class Plan>
cudaError_t w8_mma(const QuantArgs& a, cudaStream_t s) {
  constexpr int NT = MT <= 8 ? 1 : 2;
  const auto grid = static_cast<unsigned>((a.n + Plan::kRowsPerBlock - 1) / Plan::kRowsPerBlock);
  w8a16_mma_kernel<T, NT, Plan::kTiles, Plan::kStages, Plan::kSplit><<<grid, kWarps * 32, 0, s>>>(
      static_cast<T*>(a.y), static_cast<const T*>(a.x), static_cast<const uint8_t*>(a.w),
      static_cast<const float*>(a.params), static_cast<const T*>(a.bias), static_cast<int>(a.m), a.n, a.k);
  return cudaGetLastError();
}

template <class T, int MT, class Plan>
cudaError_t w8_warp(const QuantArgs& a, cudaStream_t s) {
  const auto grid = static_cast<unsigned>((a.n + Plan::kRowsPerBlock - 1) / Plan::kRowsPerBlock);
  w8a16_warp_kernel<T, MT, Plan::kRows, Plan::kChunks, Plan::kSplit><<<grid, kWarps * 32, 0, s>>>(
      static_cast<T*>(a.y), static_cast<const T*>(a.x), static_cast<const uint8_t*>(a.w),
      static_cast<const float*>(a.params), static_cast<const T*>(a.bias), static_cast<int>(a.m), a.n, a.k);
  return cudaGetLastError();
}

// M is rounded up to the next instantiated row count; rows beyond m_rows are computed (as 0 on CUDA cores, as a copy
// of the last row on tensor cores) but never stored.
template <class T, int MT>
cudaError_t w4_launch(const QuantArgs& a, cudaStream_t s) {
  if constexpr (MT == 1) {
    // K split two ways, unless the channels alone give at least 12 warps per SM. Weight-rotating sweep
    // (bench/results/2026-12-03-h200-quant-flush/tune-m1.log): 8192x8192 14.3 against 15.5 µs split, 8192x28672
    // 40.4 against 42.4, 28672x8192 38.9 against 44.1; 4096x4096 6.3 split against 6.9.
    using Unsplit = WarpPlan<4, 1, 1>;
    if (a.n / Unsplit::kRows >= 12 * sm_count()) return w4_warp<T, MT, Unsplit>(a, s);
    return w4_warp<T, MT, WarpPlan<4, 1, 2>>(a, s);
  } else if constexpr (MT == 2)  // U = 1 is as fast but needs a stack frame at M = 2
    return w4_warp<T, MT, WarpPlan<4, 2, 2>>(a, s);
  else if constexpr (MT <= 8)
    return w4_mma<T, MT, MmaPlan<2, 4, 4>>(a, s);
  else
    return w4_mma<T, MT, MmaPlan<2, 3, 4>>(a, s);
}

template <class T, int MT>
cudaError_t w8_launch(const QuantArgs& a, cudaStream_t s) {
  if constexpr (MT == 1)
    return w8_warp<T, MT, WarpPlan<4, 4, 2>>(a, s);
  else if constexpr (MT == 2)
    return w8_warp<T, MT, WarpPlan<4, 1, 2>>(a, s);
  else
    return w8_mma<T, MT, MmaPlan<1, 6, 4>>(a, s);
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
