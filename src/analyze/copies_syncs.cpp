#include "analyze/copies_syncs.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace gsq::analyze::detail {

CopyStats copy_stats(const Trace& t, const std::unordered_map<int64_t, size_t>& runtime_by_corr,
                     const std::vector<Interval>& kernel_busy, const Thresholds& th) {
  CopyStats c;
  const auto& ev = t.events;
  std::map<std::string, std::pair<uint64_t, int64_t>> by_kind;
  for (size_t i = 0; i < ev.size(); ++i) {
    const Event& e = ev[i];
    if (e.kind != Kind::memcpy) continue;
    ++c.count;
    c.bytes += e.bytes;
    c.total_ns += e.dur_ns;
    c.size_histogram[size_bucket(e.bytes)]++;
    auto& k = by_kind[copy_kind_name(e.copy)];
    k.first += e.bytes;
    k.second += e.dur_ns;
    const bool pageable = e.src == MemKind::pageable || e.dst == MemKind::pageable;
    if (pageable) {
      ++c.pageable;
      c.pageable_bytes += e.bytes;
      c.pageable_ns += e.dur_ns;
    }
    // Synchronous for the host: a cudaMemcpy, or a pageable copy — except pageable HtoD of ≤ 64 KiB, which the driver
    // stages and returns from at once (nsys's rule leaves those out too).
    bool sync_call = false;
    if (const auto r = runtime_by_corr.find(e.correlation); r != runtime_by_corr.end())
      sync_call = is_sync_call(t.name(ev[r->second]));
    if (sync_call || (pageable && !(e.copy == CopyKind::htod && e.bytes <= 65536))) ++c.synchronous;
    const double hidden =
        e.dur_ns ? static_cast<double>(covered(kernel_busy, e.start_ns, e.end_ns())) / static_cast<double>(e.dur_ns)
                 : 1;
    if (e.dur_ns > th.unoverlapped_copy_min_ns && hidden < th.unoverlapped_copy_max_hidden) {
      ++c.unoverlapped;
      c.unoverlapped_ns += e.dur_ns;
    }
  }
  for (const auto& [k, v] : by_kind)
    c.gbps_by_kind[k] = v.second ? static_cast<double>(v.first) / static_cast<double>(v.second) : 0;
  return c;
}

std::vector<SyncPoint> sync_points(const Trace& t, const std::vector<int32_t>& outer) {
  const auto& ev = t.events;
  std::vector<SyncPoint> out;
  std::map<std::pair<std::string, std::string>, SyncPoint> syncs;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev[i].kind != Kind::runtime || !is_sync_call(t.name(ev[i]))) continue;
    const std::string cause = outer[i] >= 0 ? t.name(ev[static_cast<size_t>(outer[i])]) : "(no CPU op)";
    auto& s = syncs[{t.name(ev[i]), cause}];
    s.call = t.name(ev[i]);
    s.cause = cause;
    ++s.count;
    s.wait_ns += ev[i].dur_ns;
  }
  for (auto& [k, s] : syncs) out.push_back(s);
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.wait_ns > y.wait_ns; });
  return out;
}

}  // namespace gsq::analyze::detail
