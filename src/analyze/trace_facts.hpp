// What the analyses ask of a trace beside its events: merged busy intervals, which calls launch or wait, which
// kernels are GEMMs, the CPU op around each runtime call, and the labels of copy sizes and kinds.
#pragma once

#include "analyze/model.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gsq::analyze::detail {

struct Interval {
  int64_t lo, hi;
};
// Sorted, overlapping intervals joined.
[[nodiscard]] std::vector<Interval> merge(std::vector<Interval> v);
[[nodiscard]] int64_t total(const std::vector<Interval>& v);
// Length of [lo, hi) covered by a merged, sorted interval list.
[[nodiscard]] int64_t covered(const std::vector<Interval>& merged, int64_t lo, int64_t hi);

[[nodiscard]] bool is_launch_call(std::string_view n);
[[nodiscard]] bool is_sync_call(std::string_view n);
[[nodiscard]] bool is_gemm_kernel(std::string_view n);
// A step marker: torch.profiler's ProfilerStep#N range (an NVTX range of that name in `gpusqueeze trace` recordings).
[[nodiscard]] inline bool is_step_marker(std::string_view n) {
  return n.starts_with("ProfilerStep#");
}
// The DataLoader's own range: PyTorch records each `next()` as "enumerate(DataLoader)#...__next__".
[[nodiscard]] inline bool is_dataloader_range(std::string_view n) {
  return n.starts_with("enumerate(DataLoader)");
}
// Launch calls per process, and the process that launches the most (the program's, where a trace holds several).
[[nodiscard]] std::unordered_map<int32_t, size_t> launches_by_pid(const Trace& t);
[[nodiscard]] std::optional<int32_t> main_launching_pid(const std::unordered_map<int32_t, size_t>& launches);
[[nodiscard]] std::optional<int32_t> main_launching_pid(const Trace& t);
// torch.optim's step: PyTorch records each as "Optimizer.step#AdamW.step" (and `gpusqueeze trace`'s Python shim
// records the same name as an NVTX range).
[[nodiscard]] inline bool is_optimizer_step_range(std::string_view n) {
  return n.starts_with("Optimizer.step#");
}
// The optimizer's steps in the process that launches the most, in time order, each with its class ("AdamW", "SGD",
// …) and the kernel launches its thread made inside it.
struct OptimizerRange {
  int64_t start = 0, end = 0;
  std::string optimizer;
  size_t launches = 0;
};
[[nodiscard]] std::vector<OptimizerRange> optimizer_step_ranges(const Trace& t);
// A softmax kernel that attention computed by hand launches (forward or backward), not the loss's log-softmax.
[[nodiscard]] bool is_attention_softmax_kernel(std::string_view kernel);
// Attention computed by hand in a step's items (a launching thread's ops in order, or its launches where the recording
// has no CPU ops): each item that launches a softmax kernel (is_attention_softmax_kernel), from the nearest item before
// it that launches a GEMM to the nearest after it that does, each within kAttentionReach items; runs in order, none
// overlapping; an item that launches both is a run alone (SDPA's math fallback). The forward's run is matmul (QK^T),
// scale, mask, softmax, cast, dropout, matmul (·V); its backward's the same ops' backward in reverse, between the two
// matmuls' backward.
inline constexpr size_t kAttentionReach = 8;
template <class Item>
[[nodiscard]] std::vector<std::pair<size_t, size_t>> attention_runs(const Trace& t, const std::vector<Item>& items) {
  auto launches = [&](const Item& x, auto&& pred) {
    for (const auto& c : x.calls)
      for (size_t g : c.gpu)
        if (t.events[g].kind == Kind::kernel && pred(t.name(t.events[g]))) return true;
    return false;
  };
  auto gemm = [&](size_t i) { return launches(items[i], [](std::string_view n) { return is_gemm_kernel(n); }); };
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!launches(items[i], [](std::string_view n) { return is_attention_softmax_kernel(n); })) continue;
    if (!runs.empty() && i <= runs.back().second) continue;  // inside the run already found
    if (gemm(i)) {  // one op computes it all (SDPA's math fallback): the run is that op
      runs.emplace_back(i, i);
      continue;
    }
    const size_t floor = runs.empty() ? 0 : runs.back().second + 1;
    std::optional<size_t> lo, hi;
    for (size_t k = i; k-- > floor && i - k <= kAttentionReach;)
      if (gemm(k)) {
        lo = k;
        break;
      }
    for (size_t k = i + 1; k < items.size() && k - i <= kAttentionReach; ++k)
      if (gemm(k)) {
        hi = k;
        break;
      }
    if (lo && hi) runs.emplace_back(*lo, *hi);
  }
  return runs;
}

// The fused optimizer's passes over memory against the single-tensor path's (foreach=False), counted from
// torch.optim's code, not fitted: the fused kernel reads each parameter's tensors once and writes the changed ones
// once. AdamW/Adam: param, grad, exp_avg and exp_avg_sq read, three written (7), where the single-tensor step's ops
// (weight decay, lerp_, mul_ + addcmul_, sqrt, div, add_ eps, addcdiv_) pass 20 times; SGD with momentum: param, grad
// and buffer read, two written (5) against 8 (mul_ + add_ on the buffer, add_ on the parameter). Other optimizers: 1
// (their kernels' memory time kept). `optimizer`: the class in the range's name ("AdamW", "SGD", …).
[[nodiscard]] inline double fused_optimizer_pass_ratio(std::string_view optimizer) {
  if (optimizer == "Adam" || optimizer == "AdamW") return 7.0 / 20.0;
  if (optimizer == "SGD") return 5.0 / 8.0;
  return 1.0;
}
// cuDNN's and cutlass's NCHW <-> NHWC conversions around convolutions of NCHW tensors.
[[nodiscard]] bool is_layout_transpose(std::string_view kernel);
// PyTorch's batch-norm kernels for NCHW tensors (at::native::batch_norm_*_kernel without "channels_last"):
// channels_last swaps each for its channels_last counterpart.
[[nodiscard]] bool is_nchw_batch_norm(std::string_view kernel);
// What channels_last costs an NCHW batch-norm kernel's time: its channels_last counterparts' time over its own in the
// before and after traces of the real-model corpus's two ResNet-50 pairs (inference 0.53, training forward and backward
// 0.56); the held-out ResNeXt-50 and RegNetY-1.6GF pairs gave 0.44 and 0.62. Sums and command:
// bench/results/2026-12-07-cpu-realmodels-accuracy (bench/realmodels/batch_norm_ratio.py).
inline constexpr double kNhwcBatchNormRatio = 0.54;
// A single-precision GEMM on the CUDA cores (no TF32, no reduced precision): cuBLAS's and cutlass's sgemm kernels and
// xmma "gemm_f32f32_f32f32" (fp32 operands, fp32 math; a TF32 one reads "gemm_f32f32_tf32f32", cutlass's "s1688gemm").
// Convolutions' implicit GEMMs are not counted: cuDNN's TF32 switch is on by default.
[[nodiscard]] bool is_fp32_gemm(std::string_view kernel);
// PyTorch's memory-efficient attention on fp32 tensors (fmha_cutlassF_f32…, fmha_cutlassB_f32…): no tensor cores.
[[nodiscard]] bool is_fp32_attention(std::string_view kernel);
// What the precision fixes cost an fp32 GEMM's time: the fixed GEMMs' time over the fp32 ones' in the before and
// after traces of the real-model pairs (bench/realmodels/precision_ratio.py; bench/results/2026-12-07-cpu-precision):
// TF32 (torch.backends.cuda.matmul.allow_tf32) 0.159, 0.176, 0.188 (ViT-B/16 training, BERT-base training,
// ConvNeXt-T inference; H100); bf16 autocast 0.047, 0.059 (BERT-base, ViT-B/16 inference; H100) and 0.20 (GPT-2 on an
// H200, whose vocabulary of 50257 leaves its output GEMM unaligned). The datasheet's peak ratios (H100 SXM: fp32 67,
// TF32 495, bf16 989 dense TFLOPS) give 0.135 and 0.068.
inline constexpr double kTf32GemmRatio = 0.176, kBf16GemmRatio = 0.059;
// Under bf16 autocast, fp32 memory-efficient attention runs in bf16 at 0.097–0.101 of its time (the three bf16 pairs);
// every fp32 GEMM's operands are cast first: 2.7–3.5 cast kernels per GEMM, whose time was 0.026–0.054 of the fp32
// GEMMs' (medians taken), each cast a small op on the host.
inline constexpr double kBf16AttentionRatio = 0.10, kBf16CastShare = 0.039;
inline constexpr int kAutocastCastsPerGemm = 3;
[[nodiscard]] std::string size_bucket(uint64_t bytes);  // "a ≤4 KiB" ... "e >16 MiB" (the letter sorts them)
[[nodiscard]] std::string copy_kind_name(CopyKind k);
// For every runtime call: the outermost CPU op (aten::item, aten::to, ...) enclosing it on its thread, else -1.
[[nodiscard]] std::vector<int32_t> outermost_ops(const Trace& t);

}  // namespace gsq::analyze::detail
