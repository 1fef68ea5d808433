// Idle-gap attribution: each interval with no GPU work is given to a dependency (next work already queued), a sync
// (bounded by the overlap it prevented), launch overhead or the host. docs/attribution.md states the rules.
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
};

// Fills b.gaps and b.idle_{queued,sync,launch,host}_ns.
void classify_gaps(const Trace& t, const Thresholds& th, const GapInputs& in, Breakdown& b);

}  // namespace gsq::analyze::detail
