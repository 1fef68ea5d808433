// The replay of the launching thread's items and the GPU ops they feed, with or without fixes, and the critical path.
#include "analyze/whatif.hpp"
#include "analyze/trace_facts.hpp"
#include "analyze/whatif_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

namespace gsq::analyze {

namespace {

using detail::is_layout_transpose;

bool is_elementwise(std::string_view kernel) {
  return kernel.find("elementwise") != std::string_view::npos;
}

int64_t median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A GPU op as replayed: when it could start (its launch returned), when it ran, and the op before it on its stream.
struct GpuRec {
  int64_t ready = 0, start = 0, end = 0;
  int64_t pred = -1;  // event index of the stream predecessor it waited for, -1 when it started at `ready`
  bool copy = false;
};

struct GpuState {
  std::map<std::pair<int32_t, int32_t>, std::pair<int64_t, int64_t>> stream_free;  // end, event index of the last op
  int64_t last_end = 0, last_op = -1;
  std::unordered_map<size_t, GpuRec> ops;
};

// The launching thread's replayed time, piece by piece, for the backward walk of the critical path.
struct Segment {
  enum Kind { gap, op, wait } kind = gap;
  int64_t start = 0, end = 0;
  uint32_t name = 0;     // the item's op
  int64_t awaited = -1;  // wait: the GPU op whose end released it
};

// Walks back from the step's end: CPU segments until a wait, then the GPU ops that released it (stream
// predecessors while they kept the op from starting), back to the CPU at the launch of the first one, and so on.
void walk_critical_path(const std::vector<Segment>& segs, const GpuState& gpu, int64_t step_start, int64_t step_end,
                        const Trace& t, CriticalPath& path) {
  int64_t cur = step_end;
  for (auto i = static_cast<std::ptrdiff_t>(segs.size()) - 1; i >= 0 && cur > step_start;) {
    const auto& sg = segs[static_cast<size_t>(i)];
    if (sg.start >= cur) {
      --i;
      continue;
    }
    const int64_t end = std::min(sg.end, cur);
    if (sg.kind == Segment::wait && sg.awaited >= 0 && gpu.ops.count(static_cast<size_t>(sg.awaited))) {
      path.cpu_ops_ns += std::max<int64_t>(0, end - gpu.ops.at(static_cast<size_t>(sg.awaited)).end);  // return path
      int64_t g = sg.awaited;
      int64_t gcur = std::min(end, gpu.ops.at(static_cast<size_t>(g)).end);
      for (size_t hops = 0; hops <= gpu.ops.size(); ++hops) {  // bounded: a malformed trace may repeat an op
        const auto& rec = gpu.ops.at(static_cast<size_t>(g));
        const int64_t lo = std::max(rec.start, step_start);
        if (gcur > lo) (rec.copy ? path.wait_copies_ns : path.wait_kernels_ns) += gcur - lo;
        if (rec.start <= step_start) {
          cur = step_start;
          break;
        }
        if (rec.pred >= 0 && rec.pred != g && gpu.ops.count(static_cast<size_t>(rec.pred))) {  // its stream predecessor
          gcur = rec.start;
          g = rec.pred;
          continue;
        }
        path.cpu_ops_ns += std::max<int64_t>(0, rec.start - rec.ready);  // launch latency
        cur = rec.ready;
        break;
      }
      cur = std::min(cur, sg.start);  // the wait is consumed whatever the chain gave: the walk always moves back
      continue;
    }
    const int64_t d = end - sg.start;
    if (sg.kind == Segment::gap) {
      if (sg.end - sg.start <= kDispatchGapNs) {
        path.cpu_ops_ns += d;
        path.by_op["(Python and dispatch between ops)"] += d;
      } else {
        path.host_ns += d;
      }
    } else if (sg.kind == Segment::op) {
      // The DataLoader's `next()` is input work on the host, not framework dispatch.
      (detail::is_dataloader_range(t.names[sg.name]) ? path.host_ns : path.cpu_ops_ns) += d;
      path.by_op[t.names[sg.name]] += d;
    } else {
      path.wait_kernels_ns += d;
    }
    cur = sg.start;
    --i;
  }
  if (cur > step_start) path.host_ns += cur - step_start;
}

}  // namespace

Replay replay(const Trace& t, const Fixes& fx, const ReplayRates& rates) {
  return replay(t, *build_graph(t), fx, rates);
}

namespace {
// Which of a step's items a CUDA graph would replay: in each run of items that neither block (a sync, a staged copy)
// nor are a DataLoader's next(), the span from the first item that launches GPU work to the last. Capturing that span
// (torch.cuda.graphs, torch.compile(mode="reduce-overhead")) replays its launches with none of the Python, dispatch
// or launch-free ops between them; what lies outside it (input preparation before the first launch, the sync that
// reads the result) still runs on the host. Taking only the items that launch as replayed would keep the host time of
// a torch.profiler recording's views, reshapes and other launch-free ops: GPT-2 inference then predicts 2.37 ms after
// graphs where 0.74 ms was measured (bench/results/2026-12-06-h200-realmodels-heldout).
std::vector<bool> graph_captured(const Trace& t, const std::vector<Item>& items) {
  std::vector<bool> captured(items.size(), false);
  auto blocks = [](const Item& it) {
    return std::any_of(it.calls.begin(), it.calls.end(), [](const Call& c) { return c.blocking; });
  };
  auto launches = [](const Item& it) {
    return std::any_of(it.calls.begin(), it.calls.end(), [](const Call& c) { return !c.gpu.empty(); });
  };
  size_t i = 0;
  while (i < items.size()) {
    if (blocks(items[i]) || detail::is_dataloader_range(t.names[items[i].name])) {
      ++i;
      continue;
    }
    size_t end = i;  // the run [i, end)
    while (end < items.size() && !blocks(items[end]) && !detail::is_dataloader_range(t.names[items[end].name])) ++end;
    size_t first = end, last = end;
    for (size_t k = i; k < end; ++k)
      if (launches(items[k])) {
        if (first == end) first = k;
        last = k;
      }
    if (first != end)
      for (size_t k = first; k <= last; ++k) captured[k] = true;
    i = end;
  }
  return captured;
}
}  // namespace

namespace {

// The first GPU op an item launched (a fused run keeps its kernel's time under this index).
size_t first_gpu_op(const Item& x) {
  for (const auto& c : x.calls)
    if (!c.gpu.empty()) return c.gpu.front();
  return size_t{0};
}

// The one launch of an op that a fix makes from several (a fused optimizer step, fused attention): `first`, the
// first launch of the ops it replaces, at the op's start, launching `kernel` alone, within the op's `item_dur`.
Call sole_launch(const Call& first, size_t kernel, int64_t item_dur) {
  Call c = first;
  c.off = 0;
  c.dur = c.own = std::min(c.dur, item_dur);
  c.blocking = c.pageable = c.pageable_input = false;
  c.gpu = {kernel};
  return c;
}

// `optimizer`: the items of each optimizer step become one op that launches one kernel, the fused optimizer's. The
// kernel moves the bytes the single-tensor kernels moved, once: their time above the shortest one's (a kernel's fixed
// cost, which the fused kernel pays once) × the passes the fused kernel makes over memory against theirs
// (detail::fused_optimizer_pass_ratio). On the host it costs two of the step's ops at their mean time (the fused op
// and its dispatch); the Python loop over the parameters between the ops goes with them.
std::vector<Item> fuse_optimizer_steps(const Trace& t, const ReplayGraph& g, const std::vector<Item>& in,
                                       std::unordered_map<size_t, int64_t>& dur_override) {
  std::vector<Item> out;
  for (size_t i = 0; i < in.size();) {
    if (in[i].optimizer_step < 0) {
      out.push_back(in[i++]);
      continue;
    }
    size_t j = i;
    int64_t host = 0, kernels_ns = 0, kernels = 0, shortest = INT64_MAX;
    size_t first_kernel = SIZE_MAX;
    const Call* first_launch = nullptr;
    for (; j < in.size() && in[j].optimizer_step == in[i].optimizer_step; ++j) {
      host += in[j].dur;
      for (const auto& c : in[j].calls)
        for (size_t k : c.gpu)
          if (t.events[k].kind == Kind::kernel) {
            kernels_ns += t.events[k].dur_ns, ++kernels;
            shortest = std::min(shortest, t.events[k].dur_ns);
            if (first_kernel == SIZE_MAX) first_kernel = k, first_launch = &c;
          }
    }
    Item fused = in[i];
    fused.dur = 2 * host / static_cast<int64_t>(j - i);
    fused.calls.clear();
    if (first_launch) {
      fused.calls.push_back(sole_launch(*first_launch, first_kernel, fused.dur));
      const double ratio = detail::fused_optimizer_pass_ratio(g.optimizer_steps[in[i].optimizer_step].optimizer);
      dur_override[first_kernel] =
          shortest + static_cast<int64_t>(ratio * static_cast<double>(kernels_ns - kernels * shortest));
    }
    out.push_back(std::move(fused));
    i = j;
  }
  return out;
}

// `attention`: each run of items that computes attention by hand (detail::attention_runs) becomes one op launching one
// kernel, the fused attention's. The kernel does the run's matrix multiplies and nothing else (the score matrix's
// scaling, masking, softmax, dropout and casts are inside it, never written to memory): the run's GEMM kernels' time.
// On the host it costs the run's costliest op (the dispatch of one scaled_dot_product_attention); the Python between
// the run's ops goes with them.
std::vector<Item> fuse_attention_runs(const Trace& t, const std::vector<Item>& in,
                                      std::unordered_map<size_t, int64_t>& dur_override) {
  std::vector<Item> out;
  size_t next = 0;
  for (const auto& [lo, hi] : detail::attention_runs(t, in)) {
    out.insert(out.end(), in.begin() + static_cast<std::ptrdiff_t>(next), in.begin() + static_cast<std::ptrdiff_t>(lo));
    Item fused = in[lo];
    fused.calls.clear();
    int64_t gemm_ns = 0;
    size_t first_gemm = SIZE_MAX;
    const Call* first_launch = nullptr;
    for (size_t j = lo; j <= hi; ++j) {
      fused.dur = std::max(fused.dur, in[j].dur);
      for (const auto& c : in[j].calls)
        for (size_t k : c.gpu)
          if (t.events[k].kind == Kind::kernel && detail::is_gemm_kernel(t.name(t.events[k]))) {
            gemm_ns += t.events[k].dur_ns;
            if (first_gemm == SIZE_MAX) first_gemm = k, first_launch = &c;
          }
    }
    if (first_launch) {
      fused.calls.push_back(sole_launch(*first_launch, first_gemm, fused.dur));
      dur_override[first_gemm] = gemm_ns;
    }
    out.push_back(std::move(fused));
    next = hi + 1;
  }
  out.insert(out.end(), in.begin() + static_cast<std::ptrdiff_t>(next), in.end());
  return out;
}

// The fixes that change a step's shape: the ops `sync` and `layout` drop, and runs of single elementwise kernels that
// `fuse` makes one (one dispatch, the slowest op's; one kernel, the slowest: it reads once), the kept kernel's time in
// dur_override; `optimizer` (fuse_optimizer_steps), `attention` (fuse_attention_runs).
std::vector<Item> shape_items(const Trace& t, const ReplayGraph& graph, const Fixes& fx,
                              const std::vector<Item>& in_items, std::unordered_map<size_t, int64_t>& dur_override) {
  std::vector<Item> fused;  // `optimizer` and `attention` reshape the items first; the others read the step's own
  if (fx.optimizer) fused = fuse_optimizer_steps(t, graph, in_items, dur_override);
  if (fx.attention) fused = fuse_attention_runs(t, fx.optimizer ? fused : in_items, dur_override);
  const std::vector<Item>& in = fx.optimizer || fx.attention ? fused : in_items;
  auto single_elementwise = [&](const Item& x) {
    size_t kernels = 0;
    for (const auto& c : x.calls) {
      if (c.blocking) return false;
      for (size_t g : c.gpu)
        if (t.events[g].kind != Kind::kernel || !is_elementwise(t.name(t.events[g])) || ++kernels > 1) return false;
    }
    return kernels == 1;
  };
  std::vector<Item> items;
  bool prev_fusable = false;
  for (const auto& item : in) {
    auto it = item;
    const auto& name = t.names[it.name];
    if ((fx.sync && (name == "aten::item" || name == "aten::_local_scalar_dense")) ||
        (fx.layout && name == "aten::contiguous")) {
      prev_fusable = false;
      continue;
    }
    const bool fusable = fx.fuse && single_elementwise(it);
    if (fusable && prev_fusable) {
      items.back().dur = std::max(items.back().dur, it.dur);
      const size_t kept = first_gpu_op(items.back()), here = first_gpu_op(it);
      dur_override[kept] =
          std::max(dur_override.count(kept) ? dur_override[kept] : t.events[kept].dur_ns, t.events[here].dur_ns);
      continue;
    }
    prev_fusable = fusable;
    items.push_back(std::move(it));
  }
  return items;
}

// Places GPU op g on its stream: it starts when its launch returned (`ready`) and the stream is free, and after the
// work of another stream it waits for (a cudaStreamWaitEvent); it runs `dur`. A prefetched copy runs on a side stream
// that the compute stream then waits for (the event the prefetch records). Returns the op as placed.
const GpuRec& place_gpu_op(const Trace& t, const ReplayGraph& graph, size_t g, int64_t ready, int64_t dur,
                           bool prefetched, GpuState& gpu) {
  const auto& op = t.events[g];
  auto& [free, prev] = gpu.stream_free[{op.device, prefetched ? -2 - op.stream : op.stream}];
  GpuRec rec;
  rec.ready = ready;
  rec.start = std::max(rec.ready, free);
  rec.pred = free > rec.ready ? prev : -1;
  if (const auto w = graph.waits_for.find(g); w != graph.waits_for.end())
    if (const auto d = gpu.ops.find(w->second); d != gpu.ops.end() && d->second.end > rec.start) {
      rec.start = d->second.end;
      rec.pred = static_cast<int64_t>(w->second);
    }
  rec.end = rec.start + dur;
  rec.copy = op.kind == Kind::memcpy;
  free = rec.end;
  prev = static_cast<int64_t>(g);
  if (prefetched) {
    auto& [cfree, cprev] = gpu.stream_free[{op.device, op.stream}];
    if (rec.end > cfree) {
      cfree = rec.end;
      cprev = static_cast<int64_t>(g);
    }
  }
  if (rec.end >= gpu.last_end) {
    gpu.last_end = rec.end;
    gpu.last_op = static_cast<int64_t>(g);
  }
  return gpu.ops[g] = rec;
}

// Where a step's batch reaches the GPU when no DataLoader range says where it was made: the item of the step's first
// host-to-device copy, where that copy comes before the step's first kernel (the input, not a scalar copied in the
// middle of the step); items.size() where the step has a DataLoader range or no such copy: nothing is inferred.
size_t first_input_copy(const Trace& t, const std::vector<Item>& items) {
  for (const auto& it : items)
    if (detail::is_dataloader_range(t.names[it.name])) return items.size();
  for (size_t i = 0; i < items.size(); ++i)
    for (const auto& c : items[i].calls)
      for (size_t g : c.gpu) {
        if (t.events[g].kind == Kind::kernel) return items.size();
        if (t.events[g].kind == Kind::memcpy && t.events[g].copy == CopyKind::htod) return i;
      }
  return items.size();
}

// What a replay with these fixes assumes, said beside its predictions.
std::vector<std::string> replay_assumptions(const Fixes& fx, const ReplayRates& rates, bool loader_seen,
                                            bool input_inferred) {
  std::vector<std::string> out;
  out.push_back(rates.source);
  if (fx.fuse) out.push_back("a fused run costs its slowest op's dispatch and its slowest kernel");
  if (fx.layout)
    out.push_back(fmt::format(
        "layout: top-level aten::contiguous calls dropped, NCHW<->NHWC transpose kernels and their launches "
        "free, PyTorch's NCHW batch-norm kernels at {:.2f}× their time (their channels_last kernels' "
        "cost on the real-model corpus); converting weights and inputs once at load is not counted; the "
        "convolutions' own kernels as recorded (cuDNN may pick other NHWC kernels, faster or slower)",
        detail::kNhwcBatchNormRatio));
  if (fx.tf32)
    out.push_back(
        fmt::format("tf32: fp32 GEMM kernels (sgemm, gemm_f32f32_f32f32) at {:.3f}× their time (TF32 "
                    "GEMMs' cost on the real-model corpus); other kernels as recorded",
                    detail::kTf32GemmRatio));
  if (fx.bf16)
    out.push_back(fmt::format(
        "bf16: fp32 GEMM kernels at {:.3f}× their time (bf16 GEMMs {:.3f}, their operands' casts {:.3f}), fp32 "
        "memory-efficient attention at {:.2f}×, {} cast ops on the host before each GEMM's launch, priced as the "
        "recording's one-kernel ops (ratios from the real-model corpus); elementwise kernels as recorded",
        detail::kBf16GemmRatio + detail::kBf16CastShare, detail::kBf16GemmRatio, detail::kBf16CastShare,
        detail::kBf16AttentionRatio, detail::kAutocastCastsPerGemm));
  if (fx.optimizer)
    out.push_back(
        "optimizer: each Optimizer.step# range's ops made one op (two of their mean host time) launching one kernel "
        "that moves the single-tensor kernels' bytes once: their time above the shortest one's × 7/20 (Adam, AdamW) "
        "or 5/8 (SGD), the passes over memory counted from torch.optim's code; other optimizers' kernels as recorded. "
        "Without such ranges (a recording of neither torch.profiler nor `gpusqueeze trace`'s Python shim) it changes "
        "nothing");
  if (fx.attention)
    out.push_back(
        "attention: each run of ops from a matrix multiply through a softmax kernel to the next matrix multiply (up to "
        "eight ops either side; its backward likewise) made one op, the run's costliest, launching one kernel that "
        "costs the run's GEMM kernels (the fused kernel does their arithmetic; the scores' scaling, mask, softmax, "
        "dropout and casts never reach memory); a softmax outside attention between two GEMMs (a router) is taken "
        "for attention too");
  if (fx.host) out.push_back("one worker thread; each step waits for its input from the worker");
  if (fx.workers > 0 && loader_seen)
    out.push_back(fmt::format(
        "workers:{}: each batch's enumerate(DataLoader) time × {:.1f} (a worker's torch ops on one thread, the batch "
        "through shared memory) spent by one of {} workers in parallel, prefetching; the main process's next() then "
        "costs nothing, and the workers' CPU cores are free",
        fx.workers, kWorkerBatchSlowdown, fx.workers));
  else if (fx.workers > 0 && input_inferred)
    out.push_back(fmt::format(
        "workers:{}: the trace has no enumerate(DataLoader) ranges (torch.profiler and `gpusqueeze trace`'s Python "
        "shim record them; not a loader of another kind, nor `--no-python-shim`): the host's own time before each "
        "step's first host-to-device copy, where it comes before the step's first kernel, is taken as the batch's "
        "making (× {:.1f} in a worker), spent by one of {} workers in parallel",
        fx.workers, kWorkerBatchSlowdown, fx.workers));
  else if (fx.workers > 0)
    out.push_back(
        "workers: the trace has no enumerate(DataLoader) ranges, and no step copies its input to the GPU before its "
        "first kernel with host time before the copy, so the fix changes nothing here");
  if (fx.prefetch)
    out.push_back(
        "prefetch: each asynchronous host-to-device copy issued one step earlier on a side stream (the first step "
        "has nothing prefetched); the copy engine and the kernels do not slow each other");
  return out;
}

}  // namespace

Replay replay(const Trace& t, const ReplayGraph& graph_in, const Fixes& fx, const ReplayRates& rates) {
  Replay r;
  r.model = graph_in.why;
  const int32_t thread = graph_in.thread;
  auto steps = graph_in.steps;  // the fixes change a copy
  if (steps.empty()) return r;
  r.ok = true;
  r.launched_gpu_share = graph_in.launched_gpu_share;
  const std::string who = graph_in.threads > 1
                              ? fmt::format("{} launching threads merged (main thread {})", graph_in.threads, thread)
                              : fmt::format("thread {}", thread);
  r.model =
      fmt::format("replay of {} ({} step{}{}{}{})", who, steps.size(), steps.size() == 1 ? "" : "s",
                  steps.size() > 1 || t.events.empty() ? ", ProfilerStep#" : ": no step markers, the whole run",
                  graph_in.waits_for.empty() ? ""
                                             : fmt::format("; {} cross-stream event wait{}", graph_in.waits_for.size(),
                                                           graph_in.waits_for.size() == 1 ? "" : "s"),
                  graph_in.queue_depth == 0
                      ? ""
                      : fmt::format("; the launch queue full: {} launches waited behind {} unstarted ops, replayed "
                                    "as waiting on the GPU",
                                    graph_in.queued_launches, graph_in.queue_depth - 1));
  const int64_t launch_floor = graph_in.launch_median_ns;
  // bf16 autocast casts each fp32 GEMM's operands first: a small op each on the host, priced as the recording's own
  // ops that launch one kernel and nothing else (an elementwise op's dispatch and launch).
  int64_t cast_op_ns = 0;
  if (fx.bf16) {
    std::vector<int64_t> small;
    for (const auto& s : steps)
      for (const auto& it : s.items)
        if (it.calls.size() == 1 && it.calls.front().type == CallType::launch && it.calls.front().gpu.size() == 1)
          small.push_back(it.dur);
    cast_op_ns = small.empty() ? launch_floor : median(small);
  }
  auto fp32_gemms = [&](const Call& c) {
    return fx.bf16
               ? std::count_if(c.gpu.begin(), c.gpu.end(),
                               [&](size_t g) {
                                 return t.events[g].kind == Kind::kernel && detail::is_fp32_gemm(t.name(t.events[g]));
                               })
               : 0;
  };
  std::unordered_map<size_t, int64_t> dur_override;  // fused kernels
  auto kernel_dur = [&](size_t index) {
    const auto& e = t.events[index];
    double d = static_cast<double>(dur_override.count(index) ? dur_override.at(index) : e.dur_ns);
    for (const auto& [k, x] : fx.faster)
      if (e.kind == Kind::kernel && t.name(e).find(k) != std::string::npos) d /= x;
    if (fx.layout && e.kind == Kind::kernel && is_layout_transpose(t.name(e))) d = 0;
    if (fx.layout && e.kind == Kind::kernel && detail::is_nchw_batch_norm(t.name(e))) d *= detail::kNhwcBatchNormRatio;
    if ((fx.tf32 || fx.bf16) && e.kind == Kind::kernel && detail::is_fp32_gemm(t.name(e)))
      d *= fx.bf16 ? detail::kBf16GemmRatio + detail::kBf16CastShare : detail::kTf32GemmRatio;
    if (fx.bf16 && e.kind == Kind::kernel && detail::is_fp32_attention(t.name(e))) d *= detail::kBf16AttentionRatio;
    if (fx.pinned && e.kind == Kind::memcpy && e.copy == CopyKind::htod && e.src == MemKind::pageable)
      d = static_cast<double>(e.bytes) / rates.pinned_h2d_bytes_per_s * 1e9;
    if (rates.recorder_corrected) d *= graph_in.gpu_scale;  // the GPU slower untraced than recorded (ReplayGraph)
    return static_cast<int64_t>(d);
  };
  const double scale = rates.recorder_corrected ? graph_in.host_scale : 1.0;  // the recorder's cost taken out
  auto host = [&](int64_t ns) {                                               // the host's own time
    return fx.host_free ? int64_t{0} : static_cast<int64_t>(static_cast<double>(ns) * scale);
  };
  GpuState gpu;
  std::multimap<int64_t, size_t> pending;  // the launch queue: GPU start → op, of ops launched and not yet started
  int64_t now = steps.front().start;
  int64_t prev_end = now;        // where the previous step ended (its CPU and GPU work done)
  int64_t rec_prev_end = now;    // the same, as recorded
  int64_t prev_step_start = -1;  // the previous step's CPU start: when a prefetched copy was issued
  bool loader_seen = false;      // workers: a DataLoader range was replayed
  bool input_inferred = false;   // workers: without one, the host's time before a step's first input copy was moved
  for (auto& s : steps) {
    std::vector<Item> items = shape_items(t, graph_in, fx, s.items, dur_override);
    const int64_t step_start = now;  // the CPU's; it may run ahead of the GPU when nothing syncs
    int64_t worker = 0, step_gpu_end = 0, step_gpu_op = -1;
    std::vector<Segment> segs;
    const std::vector<bool> captured = fx.graphs ? graph_captured(t, items) : std::vector<bool>(items.size(), false);
    // workers without the DataLoader's ranges (a recording without the Python shim, a loader of another kind): the
    // batch is made before it is copied to the GPU, so the host's time before that copy is taken as its making.
    const size_t first_input = fx.workers > 0 ? first_input_copy(t, items) : items.size();
    for (size_t i = 0; i < items.size(); ++i) {
      auto& it = items[i];
      const bool graph = captured[i];
      // Inside a captured span no Python runs on replay: its gaps and launch-free ops go with the launches.
      int64_t gap = graph && i > 0 && captured[i - 1] ? 0 : host(it.gap_before);
      if (first_input < items.size() && i <= first_input && gap > kDispatchGapNs) {
        input_inferred = true;
        worker += static_cast<int64_t>(static_cast<double>(gap) * kWorkerBatchSlowdown) / fx.workers;  // one of N
      } else if (fx.host && gap > kDispatchGapNs) {  // input work moves to the worker; the per-op dispatch cannot
        worker += gap;
      } else {
        if (gap > 0) segs.push_back({Segment::gap, now, now + gap, 0, -1});
        now += gap;
      }
      if (fx.workers > 0 && detail::is_dataloader_range(t.names[it.name])) {
        loader_seen = true;
        // the batch is made by one of N workers, N at a time, each slower than the main process was
        worker += static_cast<int64_t>(static_cast<double>(host(it.dur)) * kWorkerBatchSlowdown) / fx.workers;
        continue;
      }
      int64_t shift = 0, seg_cursor = now;
      const bool dropped_sync_after_copy =
          fx.pinned && std::any_of(it.calls.begin(), it.calls.end(), [](const Call& c) { return c.pageable_input; });
      int64_t graph_dur = 0;
      for (const auto& c : it.calls) {
        shift += host(cast_op_ns) * detail::kAutocastCastsPerGemm * fp32_gemms(c);  // autocast's casts come first
        const int64_t cs = now + host(c.off) + shift;
        int64_t dur = host(c.queued ? c.own : c.dur);
        int64_t queue_wait = 0;
        // The launch queue: a launch returns once fewer than queue_depth ops it queued behind are still unstarted.
        if (graph_in.queue_depth > 0 && !graph && !c.gpu.empty()) {
          const int64_t back = cs + dur;
          while (!pending.empty() && pending.begin()->first <= back) pending.erase(pending.begin());
          if (pending.size() >= graph_in.queue_depth) {
            auto release = pending.begin();
            std::advance(release, static_cast<std::ptrdiff_t>(pending.size() - graph_in.queue_depth));
            queue_wait = release->first - back;
            const auto& rel = gpu.ops.at(release->second);
            const int64_t awaited = rel.pred >= 0 ? rel.pred : static_cast<int64_t>(release->second);
            segs.push_back({Segment::op, seg_cursor, back, it.name, -1});
            segs.push_back({Segment::wait, back, back + queue_wait, it.name, awaited});
            seg_cursor = back + queue_wait;
            dur += queue_wait;
          }
        }
        bool blocks = c.blocking;
        const bool transpose_only =
            fx.layout && !c.gpu.empty() && std::all_of(c.gpu.begin(), c.gpu.end(), [&](size_t g) {
              return t.events[g].kind == Kind::kernel && is_layout_transpose(t.name(t.events[g]));
            });
        if (transpose_only) {  // the conversion is not launched at all
          dur = 0;
        } else if (c.pageable_input && fx.pinned) {  // an async copy from pinned memory (off the launching thread)
          dur = host(launch_floor);
          blocks = false;
        } else if (c.type == CallType::sync && (fx.sync || dropped_sync_after_copy)) {
          dur = host(c.own);
          blocks = false;
        } else if (blocks) {
          dur = host(c.own);  // plus the wait, below
        }
        for (size_t g : c.gpu) {
          const auto& op = t.events[g];
          // prefetch: an asynchronous input copy goes to a side stream, issued while the previous step ran
          const bool prefetched = fx.prefetch && !blocks && op.kind == Kind::memcpy && op.copy == CopyKind::htod;
          int64_t ready = graph ? now : queue_wait > 0 ? cs + dur : cs + std::min(dur, c.dur);
          if (prefetched && prev_step_start >= 0) ready = std::min(ready, prev_step_start);
          // A graph's kernels follow each other with the GPU's own gap between them (ReplayRates).
          const int64_t graph_gap = graph && op.kind == Kind::kernel ? rates.graph_kernel_gap_ns : 0;
          const auto& rec = place_gpu_op(t, graph_in, g, ready, kernel_dur(g) + graph_gap, prefetched, gpu);
          if (graph_in.queue_depth > 0 && !graph) pending.emplace(rec.start, g);
          if (rec.end >= step_gpu_end) {
            step_gpu_end = rec.end;
            step_gpu_op = static_cast<int64_t>(g);
          }
        }
        if (blocks) {
          int64_t awaited = gpu.last_end, awaited_op = gpu.last_op;
          if (c.type == CallType::copy) {
            awaited = 0;
            for (size_t g : c.gpu)
              if (gpu.ops.count(g) && gpu.ops[g].end >= awaited) {
                awaited = gpu.ops[g].end;
                awaited_op = static_cast<int64_t>(g);
              }
          }
          const int64_t wait = std::max<int64_t>(0, awaited - (cs + dur));
          if (wait > 0) {
            segs.push_back({Segment::op, seg_cursor, cs + dur, it.name, -1});
            segs.push_back({Segment::wait, cs + dur, cs + dur + wait, it.name, awaited_op});
            seg_cursor = cs + dur + wait;
          }
          dur += wait;
        }
        shift += dur - host(c.dur);
        graph_dur += static_cast<int64_t>(c.gpu.size()) * rates.graph_per_kernel_ns;
      }
      const int64_t item_dur = graph ? (fx.host_free ? 0 : graph_dur) : host(it.dur) + shift;
      now += item_dur;
      if (now > seg_cursor) segs.push_back({Segment::op, seg_cursor, now, it.name, -1});
    }
    const int64_t trailing = host(s.trailing_gap);
    if (fx.host && trailing > kDispatchGapNs) {
      worker += trailing;
    } else {
      if (trailing > 0) segs.push_back({Segment::gap, now, now + trailing, 0, -1});
      now += trailing;
    }
    if ((fx.host || fx.workers > 0) && worker > now - step_start) {  // the workers cannot keep up: they set the pace
      segs.push_back({Segment::gap, now, step_start + worker, 0, -1});
      now = step_start + worker;
    }
    // A step ends when its CPU work and the GPU work it launched are both done: without a sync the CPU runs ahead,
    // and the next step's time is set by whichever side is slower.
    int64_t end = std::max(now, prev_end);
    if (step_gpu_end > end) {
      segs.push_back({Segment::wait, now, step_gpu_end, 0, step_gpu_op});
      end = step_gpu_end;
    }
    walk_critical_path(segs, gpu, prev_end, end, t, r.path);
    prev_step_start = step_start;
    r.step_ns.push_back(end - prev_end);
    prev_end = end;
    // The recorded step by the same rule: its CPU span or the end of the GPU work it launched, whichever is later
    // (a CPU that runs ahead shows short ProfilerStep spans while the GPU sets the pace).
    int64_t rec_end = std::max(s.end, rec_prev_end);
    for (const auto& it : s.items)
      for (const auto& c : it.calls)
        for (size_t g : c.gpu) rec_end = std::max(rec_end, t.events[g].end_ns());
    r.recorded_step_ns.push_back(rec_end - rec_prev_end);
    rec_prev_end = rec_end;
  }
  r.step_p50_ns = median(r.step_ns);
  r.recorded_p50_ns = median(r.recorded_step_ns);
  for (int64_t d : r.step_ns) r.wall_ns += d;
  r.assumptions = replay_assumptions(fx, rates, loader_seen, input_inferred);
  return r;
}

std::string critical_verdict(const CriticalPath& p) {
  // Which side sets the step first: the host's time (its own work and the CPU ops' dispatch) against the time it
  // waits on the GPU, then the larger class within that side. Taking the largest of the four classes alone splits a
  // host that sets the step in two: a DataLoader-bound ResNet-50 (Kineto's tb_plugin samples, num_workers=0: input
  // work 36.5%, dispatch 25.9%, waiting on kernels 36.5%) read gpu-bound, and its fix is four workers (−28%).
  const int64_t host_side = p.host_ns + p.cpu_ops_ns, gpu_side = p.wait_kernels_ns + p.wait_copies_ns;
  if (host_side > gpu_side) return p.host_ns > p.cpu_ops_ns ? "host-bound" : "launch-bound";
  return p.wait_copies_ns > p.wait_kernels_ns ? "transfer-bound" : "gpu-bound";
}

}  // namespace gsq::analyze
