// What the analyses ask of a trace beside its events: merged busy intervals, which calls launch or wait, which
// kernels are GEMMs, the CPU op around each runtime call, and the labels of copy sizes and kinds.
#pragma once

#include "analyze/model.hpp"

#include <cstdint>
#include <string>
#include <string_view>
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
[[nodiscard]] std::string size_bucket(uint64_t bytes);  // "a ≤4 KiB" ... "e >16 MiB" (the letter sorts them)
[[nodiscard]] std::string copy_kind_name(CopyKind k);
// For every runtime call: the outermost CPU op (aten::item, aten::to, ...) enclosing it on its thread, else -1.
[[nodiscard]] std::vector<int32_t> outermost_ops(const Trace& t);

}  // namespace gsq::analyze::detail
