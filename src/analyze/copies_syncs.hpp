// Two stages of analyze(): the copies (kinds, sizes, pageable memory, which ones block the host or are not hidden
// behind kernels) and the synchronisation points with the CPU op that caused each.
#pragma once

#include "analyze/analysis.hpp"
#include "analyze/trace_facts.hpp"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace gsq::analyze::detail {

// `runtime_by_corr`: CUDA calls by correlation id; `kernel_busy`: the kernels' merged busy intervals.
[[nodiscard]] CopyStats copy_stats(const Trace& t, const std::unordered_map<int64_t, size_t>& runtime_by_corr,
                                   const std::vector<Interval>& kernel_busy, const Thresholds& th);
// `outer`: each event's outermost CPU op (outermost_ops), -1 where none; the largest wait first.
[[nodiscard]] std::vector<SyncPoint> sync_points(const Trace& t, const std::vector<int32_t>& outer);

}  // namespace gsq::analyze::detail
