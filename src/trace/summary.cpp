// A trace's summary: records by kind, time span, drops, the tracer's own stats; as a struct and as JSON.
#include "trace/format.hpp"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace gsq::trace {

Summary summarize(const TraceFile& t) {
  Summary s;
  int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
  for (const Record& r : t.records) {
    first = std::min(first, r.start_ns);
    last = std::max(last, r.end_ns);
    switch (static_cast<RecordKind>(r.kind)) {
      case RecordKind::kernel:
        ++s.kernels;
        s.gpu_busy_ns += diff_ns(r.end_ns, r.start_ns);
        if (r.flags & kFromGraph) ++s.graph_kernels;
        break;
      case RecordKind::memcpy:
        ++s.memcpys;
        s.copy_bytes += r.bytes;
        s.gpu_busy_ns += diff_ns(r.end_ns, r.start_ns);
        if (r.src_kind == 1 || r.dst_kind == 1) ++s.pageable_copies;
        if (r.src_kind == 2 || r.dst_kind == 2) ++s.pinned_copies;
        break;
      case RecordKind::memset:
        ++s.memsets;
        break;
      case RecordKind::sync:
        ++s.syncs;
        break;
      case RecordKind::api:
        ++s.api_calls;
        break;
      case RecordKind::range:
        ++s.ranges;
        break;
      case RecordKind::overhead:
        break;
    }
  }
  if (!t.records.empty()) s.span_ns = diff_ns(last, first);
  return s;
}

nlohmann::json summary_json(const TraceFile& t) {
  const Summary s = summarize(t);
  return {{"schema", "gpusqueeze.trace-info/1"},
          {"file", t.path.string()},
          {"header", t.header},
          {"stats", t.stats},
          {"complete", t.complete},
          {"truncation", t.truncation.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.truncation)},
          {"counts",
           {{"kernels", s.kernels},
            {"graph_kernels", s.graph_kernels},
            {"memcpys", s.memcpys},
            {"pageable_copies", s.pageable_copies},
            {"pinned_copies", s.pinned_copies},
            {"memsets", s.memsets},
            {"syncs", s.syncs},
            {"api_calls", s.api_calls},
            {"ranges", s.ranges}}},
          {"copy_bytes", s.copy_bytes},
          {"span_ns", s.span_ns},
          {"devices", t.devices},
          {"counter_tracks", [&] {
             nlohmann::json a = nlohmann::json::array();
             for (const auto& c : t.counters)
               a.push_back({{"name", c.name},
                            {"unit", c.unit},
                            {"source", c.source},
                            {"device", c.device},
                            {"samples", c.values.size()}});
             return a;
           }()}};
}

}  // namespace gsq::trace
