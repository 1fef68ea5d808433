// The stages of analyze() (analysis.cpp runs them in order): one pass that indexes the trace, one over its GPU work,
// the verdict by shares of the steady state, the counters' refinement of it, and the findings about where the time
// went. Each reads what the stages before it produced; none reads the analysis' JSON.
#pragma once

#include "analyze/analysis.hpp"
#include "analyze/fix_findings.hpp"
#include "analyze/trace_facts.hpp"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace gsq::analyze::detail {

// The first pass: what later stages look up.
struct TraceIndex {
  std::unordered_map<int64_t, size_t> runtime_by_corr;                 // CUDA calls by correlation id
  std::unordered_map<int64_t, std::vector<size_t>> runtime_by_thread;  // (pid << 32 | tid) → its CUDA calls
  int64_t wall_lo = INT64_MAX, wall_hi = INT64_MIN;
  // Merged busy intervals: any GPU work, kernels, copies and memsets, NCCL kernels, other kernels.
  std::vector<Interval> gpu_busy, kernel_busy, copy_busy, comm_busy, compute_busy;
  std::vector<int32_t> outer;     // each event's outermost CPU op (outermost_ops), -1 where none
  std::vector<size_t> gpu_ops;    // GPU events, by start
  std::vector<Interval> one_off;  // merged intervals of the one-off start-up calls (one_off_calls)
  int64_t loader_ns = 0;          // the DataLoader's own ranges: the time the loop waited for its input
  size_t loader_calls = 0;
};
// Also fills the analysis' counts, NCCL time, busy figures of its breakdown, median launch call and start-up calls.
[[nodiscard]] TraceIndex index_trace(const Trace& t, Analysis& a);

// The pass over GPU work: time by top-level CPU op and kernel group (filled into the analysis), and what the verdict
// and findings weigh.
struct KernelTally {
  int64_t kernel_sum = 0;       // all kernels' time
  int64_t short_kernel_ns = 0;  // kernels shorter than the median launch call
  int64_t gemm_ns = 0, layout_ns = 0;
  FixSignals fixes;  // what the fixes users make change (fix_findings.cpp)
  // GEMM-type kernels' share of kernel time.
  [[nodiscard]] double gemm_share() const {
    return kernel_sum ? static_cast<double>(gemm_ns) / static_cast<double>(kernel_sum) : 0;
  }
};
[[nodiscard]] KernelTally tally_kernels(const Trace& t, const TraceIndex& ix, Analysis& a);

// The steady state (wall less one-off start-up) and the shares the verdict compared.
struct Shares {
  double wall = 1, launch = 0, gpu = 0;
};
// The verdict's class and share: the largest share of the steady state (gaps classified into the breakdown first).
[[nodiscard]] Shares judge_by_shares(const TraceIndex& ix, const KernelTally& k, Analysis& a);
// Counter samples taken while compute kernels ran (the hardware layer), the GPU-bound verdict's subclass from them,
// and the verdict's sentence.
void refine_verdict(const Trace& t, const TraceIndex& ix, const KernelTally& k, const Shares& s, const Thresholds& th,
                    Analysis& a);
// The findings about where the time went (start-up, idle gaps, the DataLoader, syncs, copies, launches, top kernels,
// NCCL overlap, layout copies), appended to a.findings.
void time_findings(const Trace& t, const TraceIndex& ix, const KernelTally& k, const Shares& s, const Thresholds& th,
                   Analysis& a);

}  // namespace gsq::analyze::detail
