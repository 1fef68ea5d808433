// Idle-gap attribution: each interval with no GPU work is given to one-off start-up, a dependency (next work already
// queued), a sync (bounded by the overlap it prevented), launch overhead or the host. docs/attribution.md states the
// rules.
#pragma once

#include "analyze/analysis.hpp"
#include "analyze/trace_facts.hpp"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace gsq::analyze::detail {

// What the analysis has already indexed, by reference.
struct GapInputs {
  const std::vector<Interval>& gpu_busy;  // merged
  int64_t wall_lo, wall_hi;
  const std::vector<size_t>& gpu_ops;  // GPU events, by start
  const std::unordered_map<int64_t, size_t>& runtime_by_corr;
  const std::unordered_map<int64_t, std::vector<size_t>>& runtime_by_thread;  // (pid << 32 | tid) → runtime calls
  const std::vector<int32_t>& outer;                                          // outermost CPU op of each event, or -1
  const std::vector<Interval>& one_off;  // merged intervals of the calls one_off_calls returns
};

// Runtime calls that are one-off start-up rather than the program's steady state: context creation, a first library
// call, lazy module loading, a large first allocation. A call is one when it lasts ≥ 1 ms and ≥ 1000× the median
// runtime call; synchronising calls and copies, which wait on the GPU, never are. Returns event indices.
[[nodiscard]] std::vector<size_t> one_off_calls(const Trace& t);
// What a one-off call holds the GPU idle for: the innermost aten:: op around it on its thread, whose other work waits
// on the same initialisation (a first aten::mm creating cuBLAS's handle and loading its kernels between calls the
// recorder does not see), else the call itself. `outer`: each event's outermost CPU op (outermost_ops).
[[nodiscard]] Interval one_off_span(const Trace& t, size_t call, const std::vector<int32_t>& outer);

// Fills b.gaps and b.idle_{startup,queued,sync,launch,host}_ns.
void classify_gaps(const Trace& t, const Thresholds& th, const GapInputs& in, Breakdown& b);

}  // namespace gsq::analyze::detail
