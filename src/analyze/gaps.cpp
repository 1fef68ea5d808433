// Idle-gap attribution.
#include "analyze/gaps.hpp"

#include <algorithm>

namespace gsq::analyze::detail {

void classify_gaps(const Trace& t, const Thresholds& th, const GapInputs& in, Breakdown& b) {
  const auto& ev = t.events;
  const auto& [gpu_busy, wall_lo, wall_hi, gpu_ops, runtime_by_corr, runtime_by_thread, outer, one_off] = in;
  // Idle gaps over the whole window, each given to sync, launch or host.
  std::vector<Interval> gaps;
  int64_t cursor = wall_lo;
  for (const auto& g : gpu_busy) {
    if (g.lo > cursor) gaps.push_back({cursor, g.lo});
    cursor = std::max(cursor, g.hi);
  }
  if (wall_hi > cursor) gaps.push_back({cursor, wall_hi});
  b.gaps = gaps.size();
  for (const auto& gap : gaps) {
    // One-off start-up (context creation, lazy loading, …) running during the gap is its own class; the rest of the
    // gap is judged as usual.
    const int64_t startup = covered(one_off, gap.lo, gap.hi);
    b.idle_startup_ns += startup;
    const int64_t len = gap.hi - gap.lo - startup;
    if (len <= 0) continue;
    const auto next = std::lower_bound(gpu_ops.begin(), gpu_ops.end(), gap.hi,
                                       [&](size_t i, int64_t x) { return ev[i].start_ns < x; });
    const std::vector<size_t>* calls = nullptr;
    int64_t launched_at = -1;  // when the call that launched the next GPU work returned
    int64_t dispatch_ns =
        0;  // time in the gap spent in the CPU op that launched the next GPU work (framework dispatch)
    if (next != gpu_ops.end()) {
      const auto r = runtime_by_corr.find(ev[*next].correlation);
      if (r != runtime_by_corr.end()) {
        const Event& call = ev[r->second];
        launched_at = call.end_ns();
        const auto th_it = runtime_by_thread.find((int64_t{call.pid} << 32) | uint32_t(call.tid));
        if (th_it != runtime_by_thread.end()) calls = &th_it->second;
        const int64_t from = outer[r->second] >= 0 ? ev[static_cast<size_t>(outer[r->second])].start_ns : call.start_ns;
        dispatch_ns = std::max<int64_t>(0, std::min(gap.hi, call.end_ns()) - std::max(gap.lo, from));
      }
    }
    // The next work was launched before the GPU went idle: it waits on a stream or event dependency or a collective,
    // not on the host.
    if (launched_at >= 0 && launched_at <= gap.lo) {
      b.idle_queued_ns += len;
      continue;
    }
    if (calls == nullptr) {
      b.idle_host_ns += len;
      continue;
    }
    // Calls on that thread overlapping the gap or returning just after it began. A sync that drained the GPU just
    // before the gap does not make the gap: the host work after it does. What the sync costs is the overlap it
    // prevented — the host work of the gap could have run while the host sat blocked in the sync — so the sync's
    // share of the gap is at most the time blocked in it; the rest is judged like any other gap.
    int64_t blocked_in_sync = 0;
    int64_t in_runtime = 0;
    auto it = std::lower_bound(calls->begin(), calls->end(), gap.lo - 10'000'000,
                               [&](size_t i, int64_t x) { return ev[i].start_ns < x; });
    for (; it != calls->end() && ev[*it].start_ns < gap.hi; ++it) {
      const Event& r = ev[*it];
      if (r.end_ns() <= gap.lo) continue;
      if (!is_sync_call(t.name(r)))
        in_runtime += std::min(gap.hi, r.end_ns()) - std::max(gap.lo, r.start_ns);
      else if (r.start_ns < gap.lo + th.sync_drain_window_ns && r.end_ns() <= gap.lo + th.sync_drain_window_ns)
        blocked_in_sync += std::max<int64_t>(0, std::min(r.end_ns(), gap.lo) - r.start_ns);
    }
    const int64_t sync_part = std::min(len, blocked_in_sync), rest = len - sync_part;
    b.idle_sync_ns += sync_part;
    // Launch overhead: the thread spent most of the gap launching (in CUDA calls, or dispatching the op that launches).
    in_runtime = std::max(in_runtime, dispatch_ns);
    if (static_cast<double>(in_runtime) >= th.launch_gap_runtime_share * static_cast<double>(rest))
      b.idle_launch_ns += rest;
    else
      b.idle_host_ns += rest;
  }
}

std::vector<size_t> one_off_calls(const Trace& t) {
  const auto& ev = t.events;
  std::vector<double> durations;
  for (const auto& e : ev)
    if (e.kind == Kind::runtime) durations.push_back(static_cast<double>(e.dur_ns));
  if (durations.size() < 8) return {};  // too few calls to know what is usual
  std::nth_element(durations.begin(), durations.begin() + static_cast<long>(durations.size() / 2), durations.end());
  const double usual = durations[durations.size() / 2];
  const double limit = std::max(1e6, 1000 * usual);
  std::vector<size_t> out;
  for (size_t i = 0; i < ev.size(); ++i) {
    const Event& e = ev[i];
    if (e.kind != Kind::runtime || static_cast<double>(e.dur_ns) < limit) continue;
    const std::string& n = t.name(e);
    if (is_sync_call(n) || n.find("Memcpy") != std::string::npos || n.find("Memset") != std::string::npos) continue;
    out.push_back(i);
  }
  return out;
}

Interval one_off_span(const Trace& t, size_t call, const std::vector<int32_t>& outer) {
  const Event& c = t.events[call];
  Interval span{c.start_ns, c.end_ns()};
  if (outer[call] < 0) return span;
  // Events are sorted by start: the ops around the call start between its outermost op and the call.
  for (size_t i = call; i-- > static_cast<size_t>(outer[call]);) {
    const Event& e = t.events[i];
    if (e.kind != Kind::cpu_op || e.pid != c.pid || e.tid != c.tid || e.end_ns() < c.end_ns()) continue;
    if (t.name(e).starts_with("aten::")) return {e.start_ns, e.end_ns()};  // the latest start: the innermost
  }
  return span;
}

}  // namespace gsq::analyze::detail
