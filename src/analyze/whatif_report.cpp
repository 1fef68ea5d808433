// What the replay tells users: `analyze --what-if` tables, and the verdict and savings an analysis takes from it.
#include "analyze/whatif.hpp"
#include "analyze/whatif_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace gsq::analyze {

namespace {

// The CPU ops that hold the most of the critical path, largest first.
// The CPU ops holding most of the path, largest first.
std::vector<std::pair<std::string, int64_t>> top_op_list(const CriticalPath& p, size_t n = 5) {
  std::vector<std::pair<std::string, int64_t>> v(p.by_op.begin(), p.by_op.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (v.size() > n) v.resize(n);
  return v;
}

nlohmann::json top_ops(const CriticalPath& p, size_t n = 5) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [op, ns] : top_op_list(p, n)) out.push_back({{"op", op}, {"ns", ns}});
  return out;
}

}  // namespace

WhatIf what_if(const Trace& t, const Fixes& requested, std::shared_ptr<const ReplayGraph> graph,
               const RecorderCorrection& c) {
  WhatIf w;
  const auto rates = rates_for(t);
  if (!graph) graph = build_graph(t, c);
  w.baseline = replay(t, *graph, {}, rates);
  if (!w.baseline.ok) return w;
  w.correction = graph->correction;
  std::vector<Fixes> sets;
  for (const auto& n : kNamedFixes)
    if (requested.*(n.member)) {
      Fixes f;
      f.*(n.member) = true;
      sets.push_back(f);
    }
  if (requested.workers > 0) {
    Fixes f;
    f.workers = requested.workers;
    sets.push_back(f);
  }
  for (const auto& k : requested.faster) {
    Fixes f;
    f.faster.push_back(k);
    sets.push_back(f);
  }
  if (sets.size() > 1) sets.push_back(requested);
  auto row = [&](const Fixes& f, const Replay& r) {
    const double base = static_cast<double>(w.baseline.step_p50_ns);
    Fixes floor = f;
    floor.host_free = true;
    return WhatIfRow{fixes_name(f),
                     r.step_p50_ns,
                     r.wall_ns,
                     base > 0 ? 1.0 - static_cast<double>(r.step_p50_ns) / base : 0.0,
                     replay(t, *graph, floor, rates).step_p50_ns,
                     critical_verdict(r.path)};
  };
  w.rows.push_back(row({}, w.baseline));
  for (const auto& f : sets) {
    const auto r = replay(t, *graph, f, rates);
    w.rows.push_back(row(f, r));
    for (const auto& a : r.assumptions)
      if (std::find(w.assumptions.begin(), w.assumptions.end(), a) == w.assumptions.end()) w.assumptions.push_back(a);
  }
  if (w.assumptions.empty()) w.assumptions = w.baseline.assumptions;
  return w;
}

nlohmann::json to_json(const WhatIf& w) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : w.rows)
    rows.push_back({{"fixes", r.fixes},
                    {"step_p50_ns", r.step_p50_ns},
                    {"wall_ns", r.wall_ns},
                    {"saving_ratio", r.saving_ratio},
                    {"saving_kind", "predicted"},
                    {"floor_step_p50_ns", r.floor_p50_ns},
                    {"critical_path", r.critical}});
  const auto& p = w.baseline.path;
  return {{"model", w.baseline.model},
          {"ok", w.baseline.ok},
          {"recorded_step_p50_ns", w.baseline.recorded_p50_ns},
          {"replayed_step_p50_ns", w.baseline.step_p50_ns},
          {"correction", w.correction},
          {"critical_path",
           {{"host_ns", p.host_ns},
            {"cpu_ops_ns", p.cpu_ops_ns},
            {"wait_kernels_ns", p.wait_kernels_ns},
            {"wait_copies_ns", p.wait_copies_ns},
            {"verdict", critical_verdict(p)},
            {"top_ops", top_ops(p)}}},
          {"rows", rows},
          {"assumptions", w.assumptions}};
}

std::string render_markdown(const WhatIf& w) {
  if (!w.baseline.ok) return "### What if\n\n" + w.baseline.model + "\n";
  auto ms = [](int64_t ns) { return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6); };
  const auto& p = w.baseline.path;
  const double total = std::max<double>(1.0, static_cast<double>(p.total()));
  std::string md = fmt::format(
      "### Critical path and what if\n\nModel: {}. Untraced step P50 predicted {} against {} recorded ({:+.1f}%); "
      "the recorder's cost: {}.\n\n"
      "Critical path of the launching thread: host work {:.1f}%, CPU ops (dispatch, launches) {:.1f}%, waiting on "
      "kernels {:.1f}%, waiting on copies {:.1f}% → **{}**.\n\n",
      w.baseline.model, ms(w.baseline.step_p50_ns), ms(w.baseline.recorded_p50_ns),
      w.baseline.recorded_p50_ns > 0
          ? 100.0 * (static_cast<double>(w.baseline.step_p50_ns) / static_cast<double>(w.baseline.recorded_p50_ns) - 1)
          : 0.0,
      w.correction.empty() ? "none" : w.correction, 100.0 * static_cast<double>(p.host_ns) / total,
      100.0 * static_cast<double>(p.cpu_ops_ns) / total, 100.0 * static_cast<double>(p.wait_kernels_ns) / total,
      100.0 * static_cast<double>(p.wait_copies_ns) / total, critical_verdict(p));
  std::string ops;
  for (const auto& o : top_ops(p, 3))
    ops += fmt::format("{}{} {:.1f}%", ops.empty() ? "" : ", ", o["op"].get<std::string>(),
                       100.0 * o["ns"].get<double>() / total);
  if (!ops.empty()) md += "CPU ops holding the path: " + ops + ".\n\n";
  Table t{{"fixes", "predicted step P50", "predicted saving", "GPU floor", "wall", "critical path after"}, {}};
  bool host_bound_after = false;
  for (const auto& r : w.rows) {
    t.rows.push_back({r.fixes, ms(r.step_p50_ns), fmt::format("{:.1f}%", 100.0 * r.saving_ratio), ms(r.floor_p50_ns),
                      ms(r.wall_ns), r.critical});
    host_bound_after = host_bound_after || r.critical == "launch-bound" || r.critical == "host-bound";
  }
  md += t.markdown();
  md +=
      "\nGPU floor: the same fixes with the host's own time at zero (the GPU work, its order and its waits). The "
      "profiler slows the host more than the GPU";
  md += host_bound_after ? ": where a fix leaves the step launch- or host-bound, the step after it lies between the "
                           "prediction and the floor, nearer the floor the more the profiler slowed the host.\n"
                         : ".\n";
  for (const auto& a : w.assumptions) md += "\nassumes: " + a;
  return md + "\n";
}

void judge_by_critical_path(const Trace& t, Analysis& a, const RecorderCorrection& c) {
  const auto rates = rates_for(t);
  const auto graph = build_graph(t, c);
  a.replay_graph = graph;
  ReplayRates as_recorded = rates;
  as_recorded.recorder_corrected = false;
  const auto raw = replay(t, *graph, {}, as_recorded);  // checks the model against the recording
  const auto base = replay(t, *graph, {}, rates);       // the untraced program: what the verdict and savings are about
  auto& j = a.critical_path;
  j.replayed = true;
  j.model = base.model;
  if (!base.ok || base.wall_ns <= 0) return;
  const auto& p = base.path;
  const auto cls = critical_verdict(p);
  const double total = static_cast<double>(std::max<int64_t>(1, p.total()));
  j.has_path = j.ok = true;
  j.verdict = cls;
  j.host_share = static_cast<double>(p.host_ns) / total;
  j.cpu_ops_share = static_cast<double>(p.cpu_ops_ns) / total;
  j.wait_kernels_share = static_cast<double>(p.wait_kernels_ns) / total;
  j.wait_copies_share = static_cast<double>(p.wait_copies_ns) / total;
  j.replayed_step_p50_ns = raw.step_p50_ns;
  j.recorded_step_p50_ns = base.recorded_p50_ns;
  j.untraced_step_p50_ns = base.step_p50_ns;
  j.correction = graph->correction;
  j.host_scale = graph->host_scale;
  j.host_ns = graph->host_ns;
  j.records = graph->records;
  j.queue_depth = graph->queue_depth;
  j.queued_launches = graph->queued_launches;
  j.top_ops = top_op_list(p);
  // A replay that cannot reproduce the recording is missing dependencies the trace does not show (cross-stream
  // events, other ranks, a GPU shared with other processes): it judges nothing, and says so.
  const double fidelity =
      raw.recorded_p50_ns > 0 ? static_cast<double>(raw.step_p50_ns) / static_cast<double>(raw.recorded_p50_ns) : 0.0;
  j.fidelity = fidelity;
  j.launched_gpu_share = base.launched_gpu_share;
  if (base.launched_gpu_share < 0.9) {  // minor launching threads launched GPU work the replay does not order
    j.ok = false;
    j.why = fmt::format(
        "the replayed threads launched {:.1f}% of the GPU time; threads with under 5% of the launches each launched "
        "the rest, which the replay does not order, so the verdict stays with the idle-time rules and savings stay "
        "upper bounds",
        100.0 * base.launched_gpu_share);
    return;
  }
  if (fidelity < 0.9 || fidelity > 1.1) {
    j.ok = false;
    j.why = fmt::format(
        "the replay gives {:.1f}% of the recorded step time: the trace lacks dependencies the run had (cross-stream "
        "events, other ranks, other processes on the GPU), so the verdict stays with the idle-time rules and savings "
        "stay upper bounds",
        100.0 * fidelity);
    return;
  }
  // Without step markers the replay is the whole recording, one-off start-up included (context creation, lazy module
  // loading, cuBLAS/NCCL initialisation on the first call), which the idle-time rules leave out of the window. Where
  // that start-up is a large part of the run, its host time would decide the path's verdict: the idle-time rules'
  // verdict stands, and the path is shown for what it is. From a public trace of a 2×RTX 4090 tensor-parallel Llama
  // (tokenomics-from-first-principles): 426 ms of start-up in 820 ms read launch-bound where 313 of the 370 ms of
  // kernels are NCCL's.
  if (graph->steps.size() <= 1 && a.breakdown.wall_ns > 0 && 4 * a.breakdown.idle_startup_ns > a.breakdown.wall_ns) {
    j.ok = false;
    j.why = fmt::format(
        "one step (no step markers) whose one-off start-up is {:.0f}% of the run: the path is mostly start-up, so "
        "the verdict stays with the idle-time rules (record steps after warm-up: torch.profiler.schedule)",
        100.0 * static_cast<double>(a.breakdown.idle_startup_ns) / static_cast<double>(a.breakdown.wall_ns));
    return;
  }
  // A host class must be able to pay for itself: where the step with the host's own time taken out entirely (the
  // replay's floor) is within 10% of the step, no host fix saves more than that and the GPU's work sets the step (the
  // critical path only alternates between the two). 10%: the saving at which a finding warns (detail::finding). From
  // the real-model corpus: ResNet-50 inference, 7.95 ms untraced with its floor at 7.5 ms, read launch-bound once the
  // recorder's cost was taken out, and is fixed by its kernels (channels_last), not its launches.
  bool gpu_sets_step = false;  // the floor rule below overrode the critical path's host class
  if (cls == "launch-bound" || cls == "host-bound") {
    Fixes host_free;
    host_free.host_free = true;
    const auto floor = replay(t, *graph, host_free, rates);
    j.host_free_step_p50_ns = floor.step_p50_ns;
    if (base.step_p50_ns > 0 && floor.step_p50_ns > 0 && 10 * floor.step_p50_ns > 9 * base.step_p50_ns) {
      const std::string gpu_cls =
          floor.path.wait_copies_ns > floor.path.wait_kernels_ns ? "transfer-bound" : "gpu-bound";
      j.verdict = gpu_cls;
      const std::string was = a.verdict.cls;
      a.verdict.summary = fmt::format(
          "{}: the host's own time taken out entirely, the step would still take {:.3f} of {:.3f} ms ({:.1f}% less): "
          "the GPU's work sets it (the critical path's largest class is {}, the idle-time rules said {}).",
          gpu_cls, static_cast<double>(floor.step_p50_ns) / 1e6, static_cast<double>(base.step_p50_ns) / 1e6,
          100.0 * (1.0 - static_cast<double>(floor.step_p50_ns) / static_cast<double>(base.step_p50_ns)), cls, was);
      if (was != gpu_cls) a.verdict.subclass.clear();
      a.verdict.cls = gpu_cls;
      gpu_sets_step = true;
    }
  }
  if (!gpu_sets_step && cls != a.verdict.cls) {
    const bool host_side = cls == "host-bound" || cls == "launch-bound";
    const auto pct = [&](int64_t ns) { return 100.0 * static_cast<double>(ns) / total; };
    a.verdict.summary = host_side
                            ? fmt::format(
                                  "{}: the host's time is {:.1f}% of the critical path (its own work {:.1f}%, CPU ops "
                                  "{:.1f}%); the idle-time rules said {}.",
                                  cls, pct(p.host_ns + p.cpu_ops_ns), pct(p.host_ns), pct(p.cpu_ops_ns), a.verdict.cls)
                            : fmt::format(
                                  "{}: waiting on the GPU is {:.1f}% of the critical path (kernels {:.1f}%, copies "
                                  "{:.1f}%); the idle-time rules said {}.",
                                  cls, pct(p.wait_kernels_ns + p.wait_copies_ns), pct(p.wait_kernels_ns),
                                  pct(p.wait_copies_ns), a.verdict.cls);
    a.verdict.cls = cls;
    if (cls != "gpu-bound") a.verdict.subclass.clear();
  }
  static const std::map<std::string, const char*> fix_of{{"sync-point", "sync"},
                                                         {"sync-copy", "sync"},
                                                         {"pageable-copy", "pinned"},
                                                         {"host-idle", "host"},
                                                         {"launch-bound", "graphs"},
                                                         {"unoverlapped-copy", "pinned,prefetch"},
                                                         {"layout-conversions", "layout"},
                                                         {"fp32-gemm", "tf32"},
                                                         {"unfused-optimizer", "optimizer"},
                                                         {"unfused-attention", "attention"}};
  // Attention by hand the replay can fuse: runs of matmul, softmax, matmul among the steps' items (with none, a softmax
  // the finding counted outside such a run, the finding keeps its bound). Looked for only when the finding is there.
  const auto attention_runs = [&] {
    return std::any_of(graph->steps.begin(), graph->steps.end(),
                       [&](const Step& st) { return !detail::attention_runs(t, st.items).empty(); });
  };
  std::map<std::string, int64_t> saved_by_fix;
  for (auto& f : a.findings) {
    const auto it = fix_of.find(f.id);
    // The fused optimizer is replayed from the optimizer's step ranges, fused attention from its runs; without them the
    // finding keeps its bound.
    if (it == fix_of.end() || (f.id == "unfused-optimizer" && graph->optimizer_steps.empty()) ||
        (f.id == "unfused-attention" && !attention_runs())) {
      if (f.saving_ratio) f.evidence.push_back({"saving_kind", "upper bound"});
      continue;
    }
    if (!saved_by_fix.count(it->second))
      saved_by_fix[it->second] =
          std::max<int64_t>(0, base.wall_ns - replay(t, *graph, parse_fixes(it->second), rates).wall_ns);
    const int64_t saved = saved_by_fix[it->second];
    f.saving_ratio = static_cast<double>(saved) / static_cast<double>(base.wall_ns);
    // A predicted saving of 10% warns, as an idle share of 10% does (detail::finding), even where the idle time the
    // finding counts is small (a sync that stalls the next step's launches costs more than its own wait).
    if (*f.saving_ratio >= 0.10 && f.severity == Severity::info) f.severity = Severity::warn;
    for (auto& e : f.evidence)
      if (e.name == "saving_ns") e.value = std::to_string(saved);
    f.evidence.push_back({"saving_kind", "predicted"});
    f.evidence.push_back({"what_if", it->second});
    if (f.id == "fp32-gemm") {  // the other fix it names, faster again
      Fixes bf16;
      bf16.bf16 = true;
      f.evidence.push_back({"bf16_saving_ns", std::to_string(std::max<int64_t>(
                                                  0, base.wall_ns - replay(t, *graph, bf16, rates).wall_ns))});
    }
  }
}

}  // namespace gsq::analyze
