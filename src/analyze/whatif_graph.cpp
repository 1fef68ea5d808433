// The replay graph: the launching thread's items, their CUDA calls and the GPU ops they feed, cross-stream event
// waits; and the fixes' names and the rates they assume.
#include "analyze/whatif_graph.hpp"
#include "analyze/trace_facts.hpp"
#include "analyze/whatif.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <unordered_map>

namespace gsq::analyze {

namespace {

// How much slower the GPU of an untraced run may be than its recording's before the correction says the recording may
// be of another program or setting: above the largest slow-down the real-model corpus's ten GPU-bound recordings
// needed (× 1.007–1.070; ResNet-50 NCHW on the H100 the most; bench/results/2026-12-07-cpu-realmodels-accuracy).
constexpr double kGpuScaleSpread = 1.1;

// The launching threads (each with at least 5% of the launch calls: the main thread, autograd's backward thread),
// their top-level items merged in time order as one sequence, grouped into steps. An item of one thread that launches
// nothing while another launching thread's items run inside it is that thread waiting (`loss.backward()` while
// autograd's thread launches the backward pass): it is left out, so the sequence is the work in the order it ran.
std::vector<Step> build(const Trace& t, int32_t& thread, std::string& why, size_t& threads, size_t& records) {
  std::map<std::pair<int32_t, int32_t>, size_t> launches;
  std::unordered_map<int64_t, std::vector<size_t>> gpu_by_corr;
  size_t total = 0;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const auto& e = t.events[i];
    if (e.kind == Kind::runtime && (detail::is_launch_call(t.name(e)) || t.name(e).starts_with("cudaMemcpy")))
      ++launches[{e.pid, e.tid}], ++total;
    if (e.on_gpu() && e.correlation >= 0) gpu_by_corr[e.correlation].push_back(i);
  }
  if (launches.empty()) {
    why = "no CUDA launches in the trace: nothing to replay";
    return {};
  }
  const auto main = std::max_element(launches.begin(), launches.end(), [](const auto& a, const auto& b) {
                      return a.second < b.second;
                    })->first;
  thread = main.second;
  std::set<std::pair<int32_t, int32_t>> launching;
  for (const auto& [k, n] : launches)
    if (20 * n >= total) launching.insert(k);
  threads = launching.size();
  // Steps: ProfilerStep# annotations of the main thread's process, on the thread that has the most of them (the Python
  // thread marks steps; autograd's backward thread may launch more than it), else the whole run as one step.
  std::map<int32_t, size_t> marks;
  for (const auto& e : t.events)
    if (e.kind == Kind::annotation && e.pid == main.first && detail::is_step_marker(t.name(e))) ++marks[e.tid];
  std::vector<Step> steps;
  if (!marks.empty()) {
    const int32_t marker_tid = std::max_element(marks.begin(), marks.end(), [](const auto& a, const auto& b) {
                                 return a.second < b.second;
                               })->first;
    for (const auto& e : t.events)
      if (e.kind == Kind::annotation && e.pid == main.first && e.tid == marker_tid && detail::is_step_marker(t.name(e)))
        steps.push_back({e.start_ns, e.end_ns(), 0, {}});
  }
  std::sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.start < b.start; });
  // Top-level items of each launching thread: CPU ops and runtime calls not inside another one on that thread.
  struct Owned {
    Item item;
    std::pair<int32_t, int32_t> thread;
  };
  std::vector<Owned> owned;
  std::map<std::pair<int32_t, int32_t>, std::pair<int64_t, size_t>> open;  // thread → end of its open item, index
  int64_t launched_end = 0;
  for (const auto& e : t.events) {
    std::pair<int32_t, int32_t> th{e.pid, e.tid};
    // The DataLoader's next() is recorded as a range (user_annotation) since PyTorch 1.11: an item like a CPU op, so
    // the time the loop waits for its input is known as such. `gpusqueeze trace` records the Python shim's NVTX
    // ranges with the thread id NVTX gives, not the one CUDA's calls carry: in the launching process they are the
    // main thread's.
    const bool loader = e.kind == Kind::annotation && detail::is_dataloader_range(t.name(e));
    if (loader && !launching.count(th) && e.pid == main.first) th = main;
    if (!launching.count(th) || (e.kind != Kind::cpu_op && e.kind != Kind::runtime && !loader)) continue;
    auto& [open_end, open_index] = open.try_emplace(th, INT64_MIN, 0).first->second;
    if (e.start_ns >= open_end) {
      owned.push_back({{e.start_ns, e.dur_ns, 0, e.name, {}}, th});
      open_end = e.end_ns();
      open_index = owned.size() - 1;
    }
    if (e.kind != Kind::runtime) continue;
    auto& item = owned[open_index].item;
    Call c;
    c.off = e.start_ns - item.start;
    c.dur = e.dur_ns;
    const auto& n = t.name(e);
    c.type = detail::is_launch_call(n)     ? CallType::launch
             : n.starts_with("cudaMemcpy") ? CallType::copy
             : detail::is_sync_call(n)     ? CallType::sync
                                           : CallType::other;
    if (e.correlation >= 0)
      if (auto it = gpu_by_corr.find(e.correlation); it != gpu_by_corr.end()) c.gpu = it->second;
    int64_t awaited = 0;
    for (size_t g : c.gpu) {
      const auto& op = t.events[g];
      if (op.kind == Kind::memcpy && (op.src == MemKind::pageable || op.dst == MemKind::pageable)) c.pageable = true;
      if (op.kind == Kind::memcpy && op.copy == CopyKind::htod && op.src == MemKind::pageable) c.pageable_input = true;
      awaited = std::max(awaited, op.end_ns());
    }
    c.blocking = (c.type == CallType::sync && n != "cudaMemcpy") || n == "cudaMemcpy" || c.pageable;
    if (c.type == CallType::sync && n != "cudaMemcpy") awaited = launched_end;
    c.own = c.blocking ? c.dur - std::clamp<int64_t>(awaited - e.start_ns, 0, c.dur) : c.dur;
    for (size_t g : c.gpu) launched_end = std::max(launched_end, t.events[g].end_ns());
    item.calls.push_back(std::move(c));
  }
  // Waiting: an item without calls on one thread while another launching thread's items start inside it. The items
  // with calls sorted by start, so each check is a search, not a pass over every item.
  std::vector<std::pair<int64_t, std::pair<int32_t, int32_t>>> calling;  // start, thread
  if (threads > 1)
    for (const auto& o : owned)
      if (!o.item.calls.empty()) calling.emplace_back(o.item.start, o.thread);
  std::sort(calling.begin(), calling.end());
  std::vector<Item> items;
  for (const auto& o : owned) {
    bool waits = false;
    if (threads > 1 && o.item.calls.empty())
      for (auto x = std::lower_bound(calling.begin(), calling.end(), o.item.start,
                                     [](const auto&c, int64_t start) { return c.first < start; });
           !waits && x != calling.end() && x->first < o.item.start + o.item.dur; ++x)
        waits = x->second != o.thread;
    if (!waits) items.push_back(o.item);
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.start < b.start; });
  if (items.empty()) {
    why = "the launching thread has no CPU ops";
    return {};
  }
  if (steps.empty()) steps.push_back({items.front().start, items.back().start + items.back().dur, 0, {}});
  // What the recorder wrote on the launching threads inside the steps: its cost is per record.
  for (const auto& e : t.events)
    if ((e.kind == Kind::cpu_op || e.kind == Kind::runtime || e.kind == Kind::annotation) &&
        launching.count({e.pid, e.tid}))
      if (auto s = std::upper_bound(steps.begin(), steps.end(), e.start_ns,
                                    [](int64_t v, const Step& x) { return v < x.start; });
          s != steps.begin() && e.start_ns < std::prev(s)->end)
        ++records;
  for (auto& s : steps) {
    int64_t prev = s.start;
    for (const auto& it : items) {
      if (it.start < s.start || it.start >= s.end) continue;
      s.items.push_back(it);
      s.items.back().gap_before = std::max<int64_t>(0, it.start - prev);
      prev = std::max(prev, it.start + it.dur);
    }
    s.trailing_gap = std::max<int64_t>(0, s.end - prev);
  }
  return steps;
}

// The launch queue (ReplayGraph::queue_depth): a call that enqueues GPU work (a launch, an asynchronous copy or memset)
// over kQueueBlockedFactor × a launch's own cost (the launches' tenth percentile) and over 50 µs is taken as blocked on
// a full queue, where the GPU then had many ops queued; its own time is that cost, and the depth is the median, over
// those calls (up to 64 of them, spread over the run), of the ops launched before it that the GPU had not started when
// it returned, plus one. From `report -- CMD`'s recordings of GPU-bound programs
// (bench/results/2026-12-07-cpu-launch-queue): ConvNeXt-T fp32 inference filled the queue after its seventh step, each
// later step's launches then taking the GPU's 23 ms where the first seven took 4.4 ms.
constexpr int64_t kQueueBlockedFactor = 10, kQueueBlockedMinNs = 50'000;
constexpr size_t kQueueMinDepth = 256;

// ReplayGraph::launch_median_ns and launch_p10_ns; returns how many launch calls there are.
size_t launch_costs(ReplayGraph& g) {
  std::vector<int64_t> durs;
  for (const auto& s : g.steps)
    for (const auto& it : s.items)
      for (const auto& c : it.calls)
        if (c.type == CallType::launch) durs.push_back(c.dur);
  if (durs.empty()) return 0;
  std::sort(durs.begin(), durs.end());
  g.launch_median_ns = durs[durs.size() / 2];
  g.launch_p10_ns = durs[durs.size() / 10];
  return durs.size();
}

void find_launch_queue(const Trace& t, ReplayGraph& g, size_t launches) {
  if (launches < 16) return;
  // A launch's own cost: the tenth percentile (once the queue is full, most launches wait, and the median with them;
  // the steps before it filled, or the launches that found a slot, give the cost).
  const int64_t typical = g.launch_p10_ns;
  const int64_t blocked_over = std::max(kQueueBlockedFactor * typical, kQueueBlockedMinNs);
  // Every GPU op the replayed calls launched: (launch call's start, GPU start), by launch.
  std::vector<std::pair<int64_t, int64_t>> launched;
  std::vector<Call*> blocked;
  std::vector<int64_t> blocked_start;
  for (auto& s : g.steps)
    for (auto& it : s.items)
      for (auto& c : it.calls) {
        for (size_t op : c.gpu) launched.emplace_back(it.start + c.off, t.events[op].start_ns);
        // A candidate: an enqueuing call that does not wait for the GPU by itself, and long.
        if (!c.gpu.empty() && c.type != CallType::sync && !c.blocking && c.dur > blocked_over) {
          blocked.push_back(&c);
          blocked_start.push_back(it.start + c.off);
        }
      }
  if (blocked.size() < 3) return;
  std::sort(launched.begin(), launched.end());
  std::vector<size_t> depths;
  const size_t stride = std::max<size_t>(1, blocked.size() / 64);
  for (size_t i = 0; i < blocked.size(); i += stride) {
    const int64_t start = blocked_start[i], returned = start + blocked[i]->dur;
    size_t pending = 0;
    for (const auto& [at, gpu_start] : launched) {
      if (at >= start) break;
      pending += gpu_start > returned;
    }
    depths.push_back(pending + 1);
  }
  std::nth_element(depths.begin(), depths.begin() + static_cast<std::ptrdiff_t>(depths.size() / 2), depths.end());
  const size_t depth = depths[depths.size() / 2];
  // A queue holds hundreds of launches (1020–1021 on every recording of the real-model sets where one filled; the one
  // false find, a training step that syncs each step, gave 26): fewer is slow calls of another cause.
  if (depth < kQueueMinDepth) return;
  g.queue_depth = depth;
  for (auto* c : blocked) {
    c->queued = true;
    c->own = std::min(c->dur, typical);
  }
  g.queued_launches = blocked.size();
}

}  // namespace

Fixes parse_fixes(const std::string& list) {
  Fixes f;
  std::stringstream in(list);
  for (std::string w; std::getline(in, w, ',');) {
    const auto named =
        std::find_if(std::begin(kNamedFixes), std::end(kNamedFixes), [&](const NamedFix& n) { return w == n.name; });
    if (named != std::end(kNamedFixes)) {
      f.*(named->member) = true;
    } else if (w.rfind("kernel:", 0) == 0 && w.find('=') != std::string::npos) {
      const auto eq = w.find('=');
      double x = 0;
      try {
        x = std::stod(w.substr(eq + 1));
      } catch (...) {
      }
      if (x <= 0) throw_bad_input(fmt::format("--what-if {}: the factor must be a positive number", w));
      f.faster.emplace_back(w.substr(7, eq - 7), x);
    } else if (w.rfind("workers:", 0) == 0) {
      int n = 0;
      try {
        n = std::stoi(w.substr(8));
      } catch (...) {
      }
      if (n <= 0 || n > 1024)
        throw_bad_input(fmt::format("--what-if {}: N is the DataLoader's num_workers, 1 to 1024", w));
      f.workers = n;
    } else if (!w.empty()) {
      std::string known;
      for (const auto& n : kNamedFixes) known += std::string(n.name) + ", ";
      throw_bad_input(fmt::format("--what-if: unknown fix '{}' ({}workers:N, kernel:NAME=N)", w, known));
    }
  }
  return f;
}

bool changes_kernels(const Fixes& f) {
  return f.fuse || f.layout || f.tf32 || f.bf16 || f.optimizer || f.attention || !f.faster.empty();
}

std::string fixes_name(const Fixes& f) {
  std::string s;
  auto add = [&](const std::string& w) { s += (s.empty() ? "" : ",") + w; };
  for (const auto& n : kNamedFixes)
    if (f.*(n.member)) add(n.name);
  if (f.workers > 0) add(fmt::format("workers:{}", f.workers));
  for (const auto& [k, x] : f.faster) add(fmt::format("kernel:{}={:g}", k, x));
  return s.empty() ? "as recorded" : s;
}

ReplayRates rates_for(const Trace& t) {
  ReplayRates r;
  if (t.gpu_name.find("H100") != std::string::npos || t.gpu_name.find("H200") != std::string::npos) {
    r.pinned_h2d_bytes_per_s = 55.3e9;
    r.source =
        "pinned PCIe 55.3 GB/s measured on this project's H200 (Gen5 x16); 1 µs per graph kernel a stated default";
  }
  return r;
}

namespace {

// Each Kineto "Stream Wait Event": the first op queued on the waiting stream after the cudaStreamWaitEvent waits for
// the last op queued on the other stream before the cudaEventRecord it names (queue order: the launch calls' times).
std::unordered_map<size_t, size_t> event_waits(const Trace& t) {
  std::unordered_map<size_t, size_t> out;
  if (t.stream_waits.empty()) return out;
  std::unordered_map<int64_t, int64_t> call_start;  // correlation → its runtime call's start
  for (const auto& e : t.events)
    if (e.kind == Kind::runtime && e.correlation >= 0) call_start.emplace(e.correlation, e.start_ns);
  std::map<std::pair<int32_t, int32_t>, std::vector<std::pair<int64_t, size_t>>> queued;  // stream → (launch, op)
  for (size_t i = 0; i < t.events.size(); ++i) {
    const auto& e = t.events[i];
    if (!e.on_gpu() || e.correlation < 0) continue;
    if (const auto c = call_start.find(e.correlation); c != call_start.end())
      queued[{e.device, e.stream}].emplace_back(c->second, i);
  }
  for (auto& [k, v] : queued) std::sort(v.begin(), v.end());
  for (const auto& w : t.stream_waits) {
    const auto rec = call_start.find(w.record_correlation), wait = call_start.find(w.correlation);
    const auto from = queued.find({w.device, w.wait_on_stream}), to = queued.find({w.device, w.stream});
    if (rec == call_start.end() || wait == call_start.end() || from == queued.end() || to == queued.end()) continue;
    auto dep = std::lower_bound(from->second.begin(), from->second.end(), std::make_pair(rec->second, size_t{0}));
    auto next = std::upper_bound(to->second.begin(), to->second.end(),
                                 std::make_pair(wait->second, std::numeric_limits<size_t>::max()));
    if (dep == from->second.begin() || next == to->second.end()) continue;
    out[next->second] = std::prev(dep)->second;
  }
  return out;
}

// The factor in [lo, hi] at which `step_at` (a replayed step that grows with the factor) gives `target`, halving the
// interval 30 times.
template <class StepAt>
double factor_for(double lo, double hi, int64_t target, StepAt&& step_at) {
  for (int i = 0; i < 30; ++i) {
    const double mid = (lo + hi) / 2;
    (step_at(mid) < target ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

// The recorder's cost out of the host time (RecorderCorrection): by the untraced step when there is one, else by the
// recorder's share of the host time on the corpus, or a cost per record given.
void set_host_scale(const Trace& t, ReplayGraph& g, const RecorderCorrection& corr) {
  const bool gsqt = t.source == "gpusqueeze";
  const char* recorder = gsqt ? "gpusqueeze trace" : "the profiler";
  if (g.steps.empty() || g.host_ns <= 0) return;
  if (corr.host_scale >= 0) {
    g.host_scale = corr.host_scale;
    g.correction = fmt::format("host time × {:.3f}: {}", g.host_scale, corr.host_scale_why);
    return;
  }
  // The host's share left once the recorder's cost is out: --recorder-cost per record, else the corpus's share (a
  // Kineto recording sparser than the corpus's: its cost per record).
  const double density = static_cast<double>(g.records) / (static_cast<double>(g.host_ns) / 1e6);
  const bool per_record = corr.record_ns >= 0 || (!gsqt && density < kShareFromRecordsPerMs);
  const double cost = corr.record_ns >= 0 ? corr.record_ns : per_record ? kKinetoRecordCostNs : 0.0;
  const double by_cost =
      per_record ? std::max(0.0, 1.0 - cost * static_cast<double>(g.records) / static_cast<double>(g.host_ns))
      : gsqt     ? kGsqtHostScale
                 : kKinetoHostScale;
  if (corr.untraced_step_ns > 0) {
    ReplayRates rates = rates_for(t);
    auto p50 = [&](double s) {
      g.host_scale = s;
      return replay(t, g, {}, rates).step_p50_ns;
    };
    // The replayed step grows with the host's share, so bisect; past the recorded host (the untraced run slower than
    // the recording) up to twice it. Except where the GPU sets the replayed step as recorded: the host's time does not
    // show in it there, so a longer untraced step is a slower GPU (another process, clocks, its own spread; a recorder
    // only adds host time): the host is corrected by the default correction (by_cost) and the GPU's ops are slowed
    // until the replay gives the untraced step.
    const std::string cost_from = corr.record_ns >= 0 ? "--recorder-cost"
                                  : per_record
                                      ? fmt::format("{}'s cost per record on the real-model corpus", recorder)
                                      : fmt::format("{}'s share of the host time on the real-model corpus", recorder);
    const int64_t floor = p50(0), as_recorded = p50(1);
    // An untraced step at or over the replay as recorded would need a host slower than the recorded one, which a
    // recorder never makes: the GPU ran slower (once the default correction is out of the host, the GPU sets the
    // step, or nearly: a recording whose host was slowed to near the GPU's pace, GPT-2 training under torch.profiler,
    // is GPU-bound untraced all the same). Taken where slowing the GPU's ops alone gives the untraced step within 2%.
    // (Eager GPT-2 inference, 25.39 ms untraced against 25.2 replayed: the host × 1.37 this took before made the step
    // after fused attention launch-bound at 18.9 ms, where 14.7 ms was measured.)
    if (corr.untraced_step_ns > floor && corr.untraced_step_ns >= as_recorded) {
      g.host_scale = by_cost;
      g.gpu_scale = factor_for(1, 2, corr.untraced_step_ns, [&](double s) {  // at most twice as slow as recorded
        g.gpu_scale = s;
        return replay(t, g, {}, rates).step_p50_ns;
      });
      const auto got = static_cast<double>(replay(t, g, {}, rates).step_p50_ns);
      if (std::abs(got / static_cast<double>(corr.untraced_step_ns) - 1.0) > 0.02) g.gpu_scale = 1.0;
    }
    if (g.gpu_scale != 1.0) {
      g.correction = fmt::format(
          "host time × {:.3f} ({}), GPU ops × {:.3f}: the untraced step given ({:.3f} ms) is at or over the replay as "
          "recorded ({:.3f} ms), which a recorder's cost cannot make, so the GPU ran slower untraced{}",
          by_cost, cost_from, g.gpu_scale, static_cast<double>(corr.untraced_step_ns) / 1e6,
          static_cast<double>(as_recorded) / 1e6,
          g.gpu_scale > kGpuScaleSpread ? "; more than runs of one program differ: the recording may not be of the "
                                          "same program or settings"
                                        : "");
      return;
    }
    const int64_t top = p50(2);
    // Outside what the replay can give: at or under its GPU floor the host's time is all taken out; past twice the
    // recorded host time the factor stops there.
    if (corr.untraced_step_ns <= floor || corr.untraced_step_ns >= top) {
      const bool under = corr.untraced_step_ns <= floor;
      g.host_scale = under ? 0 : 2;
      g.correction = fmt::format(
          "{}: the untraced step given ({:.3f} ms) is {} ({:.3f} ms){}",
          under ? "host time taken out entirely" : "host time × 2, the most allowed",
          static_cast<double>(corr.untraced_step_ns) / 1e6,
          under ? "at or under the replay's GPU floor" : "longer than the replay with twice the recorded host time",
          static_cast<double>(under ? floor : top) / 1e6,
          under ? "" : "; the recording may not be of the same program or settings");
      return;
    }
    const double found = factor_for(0, 2, corr.untraced_step_ns, p50);
    // Where the GPU sets the step, the untraced step bounds the host's time from above only: a smaller factor (the
    // recorder's cost per record: --recorder-cost, else the corpus's) that still gives the step within 2% is as
    // consistent with it, and is taken.
    if (by_cost < found && static_cast<double>(p50(by_cost)) >= 0.98 * static_cast<double>(corr.untraced_step_ns)) {
      g.host_scale = by_cost;
      g.correction = fmt::format(
          "host time × {:.3f} ({}): the untraced step given ({:.3f} ms) is the GPU's, so it bounds the host's "
          "time from above only (× {:.3f} at most)",
          by_cost, cost_from, static_cast<double>(corr.untraced_step_ns) / 1e6, found);
      return;
    }
    g.host_scale = found;
    g.correction = fmt::format(
        "host time × {:.3f}: the factor that makes the as-recorded replay give the untraced step given ({:.3f} ms)",
        g.host_scale, static_cast<double>(corr.untraced_step_ns) / 1e6);
    return;
  }
  if (per_record && (cost <= 0 || g.records == 0)) {
    g.correction = "none: the host replayed as recorded";
    return;
  }
  g.host_scale = by_cost;
  const std::string per_record_from =
      corr.record_ns >= 0 ? std::string("--recorder-cost")
                          : fmt::format(
                                "{}'s cost on the real-model corpus: {:.0f} records a ms of host time, sparser "
                                "than the corpus's",
                                recorder, density);
  g.correction = per_record
                     ? fmt::format(
                           "host time × {:.3f}: {:.2f} µs per record ({}) taken out of {:.3f} ms of host time over {} "
                           "CPU ops and CUDA calls recorded{}",
                           g.host_scale, cost / 1e3, per_record_from, static_cast<double>(g.host_ns) / 1e6, g.records,
                           g.host_scale == 0 ? " (all of it)" : "")
                     : fmt::format(
                           "host time × {:.3f}: {}'s share of the host time on the real-model corpus taken out of "
                           "{:.3f} ms of host time ({} CPU ops and CUDA calls recorded)",
                           g.host_scale, recorder, static_cast<double>(g.host_ns) / 1e6, g.records);
}

// The optimizer's step ranges (detail::optimizer_step_ranges), and each item that starts inside one tagged with it.
void find_optimizer_steps(const Trace& t, ReplayGraph& g) {
  g.optimizer_steps = detail::optimizer_step_ranges(t);
  for (auto& s : g.steps)
    for (auto& it : s.items) {
      const auto r = std::upper_bound(g.optimizer_steps.begin(), g.optimizer_steps.end(), it.start,
                                      [](int64_t v, const detail::OptimizerRange& x) { return v < x.start; });
      if (r != g.optimizer_steps.begin() && it.start < std::prev(r)->end)
        it.optimizer_step = static_cast<int32_t>(std::prev(r) - g.optimizer_steps.begin());
    }
}

}  // namespace

std::shared_ptr<const ReplayGraph> build_graph(const Trace& t, const RecorderCorrection& corr) {
  auto g = std::make_shared<ReplayGraph>();
  g->steps = build(t, g->thread, g->why, g->threads, g->records);
  if (g->steps.empty()) return g;
  g->waits_for = event_waits(t);
  find_optimizer_steps(t, *g);
  // The GPU time the replayed thread launched, against all GPU time from its first step's start to the end of its
  // last step or of the last GPU op it launched.
  int64_t mine = 0, all = 0, end = g->steps.back().end;
  for (const auto& s : g->steps)
    for (const auto& it : s.items)
      for (const auto& c : it.calls)
        for (size_t i : c.gpu) {
          mine += t.events[i].dur_ns;
          end = std::max(end, t.events[i].end_ns());
        }
  // GPU ops whose launch the recording does not hold, or holds from before the first step, were launched before the
  // steps began: a host that runs ahead of a GPU-bound step queues work that the recorded window then executes (a
  // torch.profiler trace of ConvNeXt-T fp32 inference: a third of its GPU time at the window's start). They are the
  // backlog, not another thread's launches.
  std::unordered_map<int64_t, int64_t> launched_at;  // correlation id → its launch's start
  for (const auto& e : t.events)
    if (e.kind == Kind::runtime && e.correlation >= 0) launched_at.emplace(e.correlation, e.start_ns);
  for (const auto& e : t.events)
    if (e.on_gpu() && e.start_ns >= g->steps.front().start && e.start_ns < end) {
      const auto l = e.correlation >= 0 ? launched_at.find(e.correlation) : launched_at.end();
      if (l != launched_at.end() && l->second >= g->steps.front().start) all += e.dur_ns;
    }
  g->launched_gpu_share = all > 0 ? static_cast<double>(mine) / static_cast<double>(all) : 1.0;
  find_launch_queue(t, *g, launch_costs(*g));
  for (const auto& s : g->steps) {
    g->host_ns += s.trailing_gap;
    for (const auto& it : s.items) {
      g->host_ns += it.gap_before + it.dur;
      for (const auto& c : it.calls) g->host_ns -= c.dur - c.own;  // waiting for the GPU is not the host's own time
    }
  }
  set_host_scale(t, *g, corr);
  return g;
}

}  // namespace gsq::analyze
