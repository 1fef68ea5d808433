// Prometheus text exposition (format 0.0.4) of what NVML says about each GPU, plus the exporter's own health.
// Names follow Prometheus conventions: base units (bytes, seconds, hertz, watts, joules, celsius), `_total` for
// counters, `_ratio` for 0–1 fractions. A value NVML cannot give is absent, never a sentinel.
#pragma once

#include "gpu/collect.hpp"
#include "gpu/snapshot.hpp"

#include <string>
#include <vector>

namespace gsq::monitor {

struct SelfStats {
  double last_collection_seconds = 0;  // how long the last collection took
  double last_collection_unix = 0;     // when it finished
  uint64_t collections = 0, collection_errors = 0, scrapes = 0;
  uint64_t connections_cut = 0;  // shut down for outliving the request deadline
  bool watching = false;         // a watcher is attached: export its counters
  uint64_t captures = 0, capture_errors = 0;
  std::string version;
};

// `counters` is per GPU (same order as snapshot.gpus) and may be empty (a replayed snapshot has none).
[[nodiscard]] std::string render_metrics(const gpu::Snapshot& snapshot, const std::vector<gpu::Counters>& counters,
                                         const SelfStats& self);

// Label value escaping of the exposition format: backslash, double quote and newline.
[[nodiscard]] std::string escape_label(std::string_view v);

}  // namespace gsq::monitor
