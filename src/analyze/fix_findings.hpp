// The fixes users make, read from the kernels they change (calibrated on the real-model corpus,
// bench/results/2026-12-06-h100-realmodels and -h200-realmodels-heldout): cuDNN's own NCHW<->NHWC conversions (channels
// last), fp32 GEMMs without TF32 (TF32 or bf16), single-tensor optimizer ops (a fused optimizer), attention computed
// as matmul + softmax (SDPA). One stage of analyze(): the kernel pass feeds FixSignals, then fix_findings judges them.
#pragma once

#include "analyze/model.hpp"
#include "core/finding.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gsq::analyze {
struct Analysis;
namespace detail {

struct FixSignals {
  int64_t convert_ns = 0, nchw_bn_ns = 0, fp32_gemm_ns = 0, optim_ns = 0, softmax_ns = 0;
  size_t optim_kernels = 0, softmax_kernels = 0;
  bool fused_attention = false, multi_tensor_optim = false;
  // One kernel: its name and the top-level CPU op that launched it ("" in a recording without ops).
  void observe(const Event& e, const std::string& n, const std::string& op);
};

// The findings of those fixes, appended to `fs`: `kernel_sum` the kernels' time, `wall` and `wall_ns` the window.
void fix_findings(const Trace& t, const Analysis& a, const FixSignals& s, int64_t kernel_sum, double wall,
                  int64_t wall_ns, std::vector<Finding>& fs);

}  // namespace detail
}  // namespace gsq::analyze
