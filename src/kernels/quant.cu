// Weight-only quantized GEMV/GEMM for decoding: Y[M][N] = X[M][K] · dequant(W)ᵀ (+ bias), M = 1…16.
//
// At these M the work would be bound by reading W, so the kernels are built around the weight stream
// (quant_kernels.cuh). M = 1 and 2: CUDA-core warp kernels, a warp owns R output channels
// and walks K in 16-byte chunks per lane, U chunks per channel in flight, the activations shared by the R channels
// from L1; INT4 nibbles become fp16/bf16 pairs by or-ing them into the exponent of 1024 (or 128) and one subtraction
// or fma, products of 8 weights accumulate in fp16/bf16 pairs, then in fp32; INT8 converts through the fp32 exponent
// trick. Larger M: tensor-core kernels (mma.sync m16n8k16, fp32 accumulators) on the same weight layouts: a warp
// owns 16·RT channels, weights stream through a per-thread cp.async ring, X rows fill the mma's 8 columns (two
// n-tiles at M = 16), so the dequantization is shared by all M rows instead of repeated per row. The group's scale
// and offset apply once per group: Σ x·(u·s + o) = s·Σ x·(u - 8) + (o + 8s)·Σ x.
#include "kernels/quant_kernels.cuh"

#include <utility>

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

// The kernel shapes, as template arguments of the launchers below.
// Warp kernels: R output channels a warp, U 16-byte chunks a channel in flight, the block's warps splitting K KS ways.
template <int R, int U, int KS>
struct WarpPlan {
  static constexpr int kRows = R, kChunks = U, kSplit = KS, kRowsPerBlock = kWarps / KS * R;
};
// Tensor-core kernels: RT m-tiles of 16 channels a warp, S cp.async stages, the block's 4 warps splitting K KS ways.
template <int RT, int S, int KS>
struct MmaPlan {
  static constexpr int kTiles = RT, kStages = S, kSplit = KS, kRowsPerBlock = kWarps / KS * 16 * RT;
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

// W4A16 on tensor cores (W = group / 32 words per lane and group).
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

// The dispatch table, in the manner of CUB's tuning policies: for each weight format, rows by the M they serve up
// to (M is rounded up to 1, 2, 4, 8 or 16; rows beyond M are computed, as 0 on CUDA cores and as a copy of the last
// row on tensor cores, but never stored), the first that matches wins. Each row names the card and the result folder
// it was measured on (bench/tune/quant_tune.cu sweeps every shape beside the shipped table, weights rotated past the
// L2).
enum class QuantKernel { warp, mma };
struct QuantPolicy {
  bool int4;
  int m_to;  // the largest (rounded) M the row serves
  QuantKernel kernel;
  int a, b, split;  // warp: R channels, U chunks in flight; mma: RT m-tiles, S stages. split: the K split KS
  // Only where the output channels give every SM at least this many warps (N / R >= min_warps_per_sm × SMs); 0: any.
  int min_warps_per_sm;
  bool fp16_only;  // bf16 activations take a later row
  const char* measured;
};
constexpr QuantPolicy kQuantPolicies[] = {
    // M = 1: K split two ways unless the channels alone give 12 warps an SM. 8192x8192 14.3 µs unsplit against 15.5
    // split, 8192x28672 40.4 against 42.4, 28672x8192 38.9 against 44.1; 4096x4096 6.3 split against 6.9 unsplit.
    {true, 1, QuantKernel::warp, 4, 1, 1, 12, false, "H200; 2026-12-03-h200-quant-flush/tune-m1.log"},
    {true, 1, QuantKernel::warp, 4, 1, 2, 0, false, "H200; 2026-12-03-h200-quant-flush/tune-m1.log"},
    // M = 2 with fp16 activations: the warp kernel (U = 1 is as fast but needs a stack frame); 21.0 µs at 8192x8192
    // on an H100 where the best tensor-core shape took 23.1.
    {true, 2, QuantKernel::warp, 4, 2, 2, 0, true, "H100; 2026-12-07-h100-row-shapes (quant-bf16.json, quant_tune)"},
    // M = 2 with bf16 activations, since bf16 products are summed in pairs like fp16's: the warp kernel unsplit, 20.0
    // µs at 8192x8192, 58.8 at 28672x8192, 60.3 at 8192x28672, where the tensor-core row below took 22.5, 74.6, 67.7.
    {true, 2, QuantKernel::warp, 4, 1, 1, 0, false, "H100; 2026-12-07-h100-quant-m1 (quant_tune --bf16)"},
    {true, 8, QuantKernel::mma, 2, 4, 4, 0, false, "H200; 2026-12-03-h200-quant-mma"},
    {true, 16, QuantKernel::mma, 2, 3, 4, 0, false, "H200; 2026-12-03-h200-quant-mma"},
    {false, 1, QuantKernel::warp, 4, 4, 2, 0, false, "H200; 2026-12-03-h200-quant-flush"},
    {false, 2, QuantKernel::warp, 4, 1, 2, 0, false, "H200; 2026-12-03-h200-quant-flush"},
    {false, 16, QuantKernel::mma, 1, 6, 4, 0, false, "H200; 2026-12-03-h200-quant-mma"},
};
constexpr size_t kQuantPolicyCount = sizeof kQuantPolicies / sizeof kQuantPolicies[0];

// Launches row I of the table if it serves (INT4, MT) and its condition holds; false leaves the call to a later row.
template <class T, bool INT4, int MT, size_t I>
bool try_policy(const QuantArgs& a, cudaStream_t s, cudaError_t& status) {
  constexpr QuantPolicy p = kQuantPolicies[I];
  // Warp kernels exist for M <= 2 only: a later row takes larger M.
  if constexpr (p.int4 != INT4 || p.m_to < MT || (p.kernel == QuantKernel::warp && MT > 2) ||
                (p.fp16_only && !std::is_same_v<T, __half>)) {
    return false;
  } else {
    if (p.min_warps_per_sm > 0 && a.n / p.a < int64_t{p.min_warps_per_sm} * sm_count()) return false;
    using Warp = WarpPlan<p.a, p.b, p.split>;
    using Mma = MmaPlan<p.a, p.b, p.split>;
    if constexpr (p.kernel == QuantKernel::warp && INT4)
      status = w4_warp<T, MT, Warp>(a, s);
    else if constexpr (p.kernel == QuantKernel::warp)
      status = w8_warp<T, MT, Warp>(a, s);
    else if constexpr (INT4)
      status = w4_mma<T, MT, Mma>(a, s);
    else
      status = w8_mma<T, MT, Mma>(a, s);
    return true;
  }
}

template <class T, bool INT4, int MT, size_t... I>
cudaError_t launch_by_table(const QuantArgs& a, cudaStream_t s, std::index_sequence<I...>) {
  cudaError_t status = cudaErrorInvalidValue;  // no row serves this M: a table that leaves a hole
  (void)(try_policy<T, INT4, MT, I>(a, s, status) || ...);
  return status;
}

template <class T>
cudaError_t quant_typed(bool int4, const QuantArgs& a, cudaStream_t s) {
  auto pick = [&](auto mt) {
    constexpr int MT = decltype(mt)::value;
    constexpr auto rows = std::make_index_sequence<kQuantPolicyCount>{};
    return int4 ? launch_by_table<T, true, MT>(a, s, rows) : launch_by_table<T, false, MT>(a, s, rows);
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
