// The analyses over one trace. Each step is a small function over the sorted events; the verdict compares their shares.
#include "analyze/analysis.hpp"

#include "analyze/copies_syncs.hpp"
#include "analyze/fix_findings.hpp"

#include "analyze/gaps.hpp"
#include "analyze/text.hpp"
#include "analyze/trace_facts.hpp"
#include "analyze/trace_finding.hpp"
#include "analyze/whatif.hpp"

#include "core/stats.hpp"
#include "core/table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <unordered_map>

namespace gsq::analyze {

using namespace detail;

Analysis analyze(const Trace& t, const Thresholds& th) {
  Analysis a;
  a.origin = t.origin;
  a.source = t.source;
  a.rank = t.rank;
  a.events = t.events.size();
  a.window = t.window;
  const auto& ev = t.events;

  // Index runtime calls by correlation, and launching threads' runtime calls by time.
  std::unordered_map<int64_t, size_t> runtime_by_corr;
  std::unordered_map<int64_t, std::vector<size_t>> runtime_by_thread;
  std::vector<int64_t> launch_call_ns;
  int64_t wall_lo = INT64_MAX, wall_hi = INT64_MIN;
  std::vector<Interval> gpu_iv, kernel_iv, copy_iv, comm_iv, compute_iv;
  int64_t loader_ns = 0;  // the DataLoader's own ranges: the time the loop waited for its input
  size_t loader_calls = 0;
  for (size_t i = 0; i < ev.size(); ++i) {
    const Event& e = ev[i];
    wall_lo = std::min(wall_lo, e.start_ns);
    wall_hi = std::max(wall_hi, e.end_ns());
    if ((e.kind == Kind::cpu_op || e.kind == Kind::annotation) && is_dataloader_range(t.name(e)))
      loader_ns += e.dur_ns, ++loader_calls;
    if (e.kind == Kind::runtime) {
      ++a.runtime_calls;
      if (e.correlation >= 0) runtime_by_corr.emplace(e.correlation, i);
      runtime_by_thread[(int64_t{e.pid} << 32) | uint32_t(e.tid)].push_back(i);
      if (is_launch_call(t.name(e))) launch_call_ns.push_back(e.dur_ns);
    }
    if (e.on_gpu()) gpu_iv.push_back({e.start_ns, e.end_ns()});
    if (e.kind == Kind::kernel) {
      ++a.kernels;
      kernel_iv.push_back({e.start_ns, e.end_ns()});
      const bool comm = t.name(e).find("nccl") != std::string::npos;
      (comm ? comm_iv : compute_iv).push_back({e.start_ns, e.end_ns()});
      a.comm_kernels += comm;
    }
    if (e.kind == Kind::memcpy || e.kind == Kind::memset) copy_iv.push_back({e.start_ns, e.end_ns()});
  }
  const auto gpu_busy = merge(gpu_iv), kernel_busy = merge(kernel_iv), copy_busy = merge(copy_iv);
  const auto comm_busy = merge(comm_iv), compute_busy = merge(compute_iv);
  a.comm_ns = total(comm_busy);
  for (const auto& c : comm_busy) a.comm_exposed_ns += (c.hi - c.lo) - covered(compute_busy, c.lo, c.hi);
  auto& b = a.breakdown;
  b.wall_ns = wall_hi - wall_lo;
  b.gpu_busy_ns = total(gpu_busy);
  b.kernel_busy_ns = total(kernel_busy);
  for (const auto& c : copy_busy) b.copy_only_ns += (c.hi - c.lo) - covered(kernel_busy, c.lo, c.hi);
  if (!launch_call_ns.empty())
    a.median_launch_call_ns =
        static_cast<int64_t>(stats::percentile(std::vector<double>(launch_call_ns.begin(), launch_call_ns.end()), 0.5));

  const auto outer = outermost_ops(t);

  // GPU ops by start, to find what ran after each gap and who launched it.
  std::vector<size_t> gpu_ops;
  for (size_t i = 0; i < ev.size(); ++i)
    if (ev[i].on_gpu()) gpu_ops.push_back(i);  // ev is sorted by start, so gpu_ops is too
  std::vector<Interval> one_off_iv;
  for (const size_t i : one_off_calls(t)) {
    one_off_iv.push_back({ev[i].start_ns, ev[i].end_ns()});
    a.startup_calls.emplace_back(t.name(ev[i]), ev[i].dur_ns);
  }
  std::sort(a.startup_calls.begin(), a.startup_calls.end(),
            [](const auto& x, const auto& y) { return x.second > y.second; });
  const auto one_off = merge(std::move(one_off_iv));
  classify_gaps(t, th, {gpu_busy, wall_lo, wall_hi, gpu_ops, runtime_by_corr, runtime_by_thread, outer, one_off}, b);

  // Top kernels, by normalised name.
  std::map<std::string, std::vector<double>> groups;
  int64_t kernel_sum = 0, short_kernel_ns = 0, gemm_ns = 0, layout_ns = 0;
  detail::FixSignals fixes;  // what the fixes users make change (fix_findings.cpp)
  for (size_t i = 0; i < ev.size(); ++i) {
    const Event& e = ev[i];
    if (!e.on_gpu()) continue;
    std::string op;
    if (const auto r = runtime_by_corr.find(e.correlation); r != runtime_by_corr.end() && outer[r->second] >= 0) {
      op = t.name(ev[static_cast<size_t>(outer[r->second])]);
    }
    a.gpu_ns_by_op[op.empty() ? "(no CPU op)" : op] += e.dur_ns;
    if (e.kind != Kind::kernel) continue;
    const std::string& n = t.name(e);
    groups[normalize_kernel_name(n)].push_back(static_cast<double>(e.dur_ns));
    kernel_sum += e.dur_ns;
    if (a.median_launch_call_ns > 0 && e.dur_ns < a.median_launch_call_ns) {
      ++a.short_kernels;
      short_kernel_ns += e.dur_ns;
    }
    if (is_gemm_kernel(n)) gemm_ns += e.dur_ns;
    if (op == "aten::contiguous" || op == "aten::clone" || op == "aten::copy_" || op == "aten::permute")
      layout_ns += e.dur_ns;
    fixes.observe(e, n, op);
  }
  for (auto& [name, d] : groups) {
    KernelGroup g;
    g.name = name;
    g.count = d.size();
    for (double x : d) g.total_ns += static_cast<int64_t>(x);
    const auto s = stats::summarize(d);
    g.mean_ns = s.mean, g.p50_ns = s.p50, g.p99_ns = s.p99;
    g.share = kernel_sum ? static_cast<double>(g.total_ns) / static_cast<double>(kernel_sum) : 0;
    a.top_kernels.push_back(std::move(g));
  }
  std::sort(a.top_kernels.begin(), a.top_kernels.end(),
            [](const auto& x, const auto& y) { return x.total_ns > y.total_ns; });

  a.copies = detail::copy_stats(t, runtime_by_corr, kernel_busy, th);
  a.syncs = detail::sync_points(t, outer);

  for (const auto& e : ev)
    if (e.kind == Kind::annotation && is_step_marker(t.name(e))) a.step_ns.push_back(e.dur_ns);

  // Verdict: the largest share of the steady state (wall time less one-off start-up). Short kernels' run time counts
  // as launch-limited, not as GPU work.
  const double wall = std::max<double>(1, static_cast<double>(b.wall_ns - b.idle_startup_ns));
  const double launch_share = (static_cast<double>(b.idle_launch_ns) + static_cast<double>(short_kernel_ns)) / wall;
  // Compute kernels' busy time; NCCL time counts as communication where no compute hides it.
  const double gpu_share = std::max(0.0, static_cast<double>(total(compute_busy) - short_kernel_ns)) / wall;
  const std::array<std::pair<const char*, double>, 7> shares{
      {{"gpu-bound", gpu_share},
       {"host-bound", static_cast<double>(b.idle_host_ns) / wall},
       {"sync-bound", static_cast<double>(b.idle_sync_ns) / wall},
       {"dependency-bound", static_cast<double>(b.idle_queued_ns) / wall},
       {"launch-bound", launch_share},
       {"transfer-bound", static_cast<double>(b.copy_only_ns) / wall},
       {"communication-bound", static_cast<double>(a.comm_exposed_ns) / wall}}};
  const auto top =
      *std::max_element(shares.begin(), shares.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
  a.verdict.cls = top.first;
  a.verdict.share = top.second;
  a.verdict.subclass = a.verdict.cls == "gpu-bound" ? "unknown" : "";
  // Hardware layer: counter samples taken while a compute kernel ran.
  auto busy_at = [&](int64_t ts) {
    const auto it = std::upper_bound(compute_busy.begin(), compute_busy.end(), ts,
                                     [](int64_t v, const Interval& iv) { return v < iv.lo; });
    return it != compute_busy.begin() && ts < std::prev(it)->hi;
  };
  HardwareLayer& hw = a.hardware;
  for (const auto& track : t.counters) {
    double sum = 0;
    size_t n = 0, throttled = 0;
    for (size_t i = 0; i < track.t_ns.size() && i < track.values.size(); ++i) {
      if (!busy_at(track.t_ns[i])) continue;
      sum += track.values[i], ++n;
      // NVML clock-event reasons that slow a busy GPU: SW power cap, HW slowdown, SW/HW thermal, power brake.
      if (track.name == "clock_event_reasons" && (static_cast<uint64_t>(track.values[i]) & 0xECu)) ++throttled;
    }
    if (n == 0) continue;
    hw.mean[track.name] = sum / static_cast<double>(n);
    hw.busy_samples = std::max(hw.busy_samples, n);
    if (track.name == "clock_event_reasons")
      hw.throttled_share = static_cast<double>(throttled) / static_cast<double>(n);
  }
  auto hw_mean = [&](const char* name) { return hw.mean.contains(name) ? hw.mean.at(name) : -1.0; };
  const double tensor = hw_mean("tensor_active"), dram = hw_mean("dram_bandwidth_utilization"),
               sm_active = hw_mean("sm_active"), occupancy = hw_mean("sm_occupancy");
  const double gemm_share = kernel_sum ? static_cast<double>(gemm_ns) / static_cast<double>(kernel_sum) : 0;
  if (a.verdict.cls == "gpu-bound" && (tensor >= 0 || dram >= 0 || sm_active >= 0)) {
    if (tensor >= th.tensor_active)
      a.verdict.subclass = "matrix";
    else if (dram >= th.dram_bound)
      a.verdict.subclass = "memory";
    else if (sm_active >= th.sm_active && occupancy >= 0 && occupancy < th.low_occupancy)
      a.verdict.subclass = "latency/occupancy";
    else
      a.verdict.subclass = "other";
  }
  if (a.verdict.cls == "gpu-bound" && a.verdict.subclass != "unknown") {
    a.verdict.summary = fmt::format(
        "GPU-bound, {}: kernels keep the GPU busy {} of the time; while they run, tensor pipes are active {}, DRAM "
        "bandwidth is at {} of peak, SMs are active {} with {} of warp slots occupied ({} counter samples).",
        a.verdict.subclass, pct(a.verdict.share), tensor >= 0 ? pct(tensor) : "n/a", dram >= 0 ? pct(dram) : "n/a",
        sm_active >= 0 ? pct(sm_active) : "n/a", occupancy >= 0 ? pct(occupancy) : "n/a", hw.busy_samples);
  } else if (a.verdict.cls == "gpu-bound") {
    a.verdict.summary = fmt::format(
        "GPU-bound: kernels keep the GPU busy {} of the time; GEMM-type kernels are {} of kernel "
        "time. Compute vs memory needs hardware counters, which this trace does not have (record it with "
        "`gpusqueeze trace --gpu-metrics 100`).",
        pct(a.verdict.share), pct(kernel_sum ? static_cast<double>(gemm_ns) / static_cast<double>(kernel_sum) : 0));
  } else {
    a.verdict.summary =
        b.idle_startup_ns > 0
            ? fmt::format("{}: {} of the time after one-off start-up ({} of {}; start-up took {} of the {} window).",
                          a.verdict.cls, pct(a.verdict.share), ms(static_cast<int64_t>(a.verdict.share * wall)),
                          ms(b.wall_ns - b.idle_startup_ns), ms(b.idle_startup_ns), ms(b.wall_ns))
            : fmt::format("{}: {} of the wall time ({} of {}).", a.verdict.cls, pct(a.verdict.share),
                          ms(static_cast<int64_t>(a.verdict.share * wall)), ms(b.wall_ns));
  }

  // Findings.
  auto& fs = a.findings;
  const double w = wall;
  hardware_findings(a, gpu_share, gemm_share, th, fs);
  if (b.idle_startup_ns > 0) {
    std::vector<Evidence> ev_startup{{"idle_startup_ns", std::to_string(b.idle_startup_ns)},
                                     {"wall_ns", std::to_string(b.wall_ns)}};
    for (size_t i = 0; i < a.startup_calls.size() && i < 3; ++i)
      ev_startup.push_back({fmt::format("call_{}", i + 1),
                            fmt::format("{} {}", a.startup_calls[i].first, ms(a.startup_calls[i].second))});
    fs.push_back(finding(
        "one-off-startup",
        static_cast<double>(b.idle_startup_ns) / static_cast<double>(std::max<int64_t>(1, b.wall_ns)),
        fmt::format("One-off start-up held the GPU idle {} of the window; the verdict is judged without it",
                    ms(b.idle_startup_ns)),
        std::move(ev_startup), 0,
        "Profile after warm-up: torch.profiler.schedule(wait=1, warmup=1, active=N), or run a few iterations before "
        "starting the trace. Start-up (CUDA context creation, the first cuDNN/cuBLAS call, lazy module loading, "
        "first large allocations) is paid once per process; CUDA graphs and launch tuning cannot reduce it.",
        "runtime calls ≥ 1 ms and ≥ 1000× the median call, syncs and copies excepted", b.wall_ns));
  }
  if (b.idle_queued_ns > 0) {
    fs.push_back(finding(
        "queued-idle", static_cast<double>(b.idle_queued_ns) / w,
        fmt::format("GPU idle {} of the time with its next work already launched",
                    pct(static_cast<double>(b.idle_queued_ns) / w)),
        {{"idle_queued_ns", std::to_string(b.idle_queued_ns)}, {"wall_ns", std::to_string(b.wall_ns)}},
        b.idle_queued_ns,
        "The host is ahead; the GPU waits on a dependency: an event or stream wait (cudaStreamWaitEvent, "
        "torch.cuda.Stream.wait_stream), a collective waiting for other ranks, or work queued behind another stream. "
        "Look at what ran just before each gap on the other streams and ranks.",
        "GPU idle gaps whose next GPU work was launched before the gap began", b.wall_ns));
  }
  if (b.idle_host_ns > 0) {
    fs.push_back(finding(
        "host-idle", static_cast<double>(b.idle_host_ns) / w,
        fmt::format("GPU idle {} of the time while the CPU does non-CUDA work",
                    pct(static_cast<double>(b.idle_host_ns) / w)),
        {{"idle_host_ns", std::to_string(b.idle_host_ns)},
         {"wall_ns", std::to_string(b.wall_ns)},
         {"gaps", std::to_string(b.gaps)}},
        b.idle_host_ns,
        "Overlap input work with the GPU: DataLoader(num_workers>0, pin_memory=True, prefetch), move "
        "preprocessing to the GPU or a background thread, and keep the host ahead by not synchronising per step.",
        "GPU idle with the launching thread outside CUDA calls", b.wall_ns));
  }
  // The DataLoader's own ranges (summed in the first pass): the time the training loop waited for its input, whatever
  // the GPU did meanwhile.
  if (static_cast<double>(loader_ns) / w >= 0.05) {
    const bool single = std::any_of(ev.begin(), ev.end(), [&](const Event& e) {
      return e.kind != Kind::kernel && t.name(e).find("_SingleProcessDataLoaderIter") != std::string::npos;
    });
    fs.push_back(finding(
        "dataloader", static_cast<double>(loader_ns) / w,
        fmt::format("The loop waits for the DataLoader {} of the time ({} batches fetched{})",
                    pct(static_cast<double>(loader_ns) / w), loader_calls,
                    single ? ", in the training process itself: num_workers=0" : ""),
        {{"dataloader_ns", std::to_string(loader_ns)}, {"batches", std::to_string(loader_calls)}}, loader_ns,
        "DataLoader(num_workers=N (the CPU cores the augmentation needs), pin_memory=True, persistent_workers=True, "
        "prefetch_factor=2+); move per-sample CPU transforms to the GPU (torchvision.transforms.v2 on tensors, DALI) "
        "when the workers cannot keep up.",
        "enumerate(DataLoader) ranges ≥ 5% of the steady-state window; saving: their time, an upper bound (the "
        "workers must keep up)",
        b.wall_ns));
  }
  if (!a.syncs.empty()) {
    const auto& s = a.syncs.front();
    size_t count = 0;
    for (const auto& x : a.syncs) count += x.count;
    fs.push_back(
        finding("sync-point", static_cast<double>(b.idle_sync_ns) / w,
                fmt::format("{} host syncs; the largest group: {} × {} from {}", count, s.count, s.call, s.cause),
                {{"count", std::to_string(count)},
                 {"top_call", s.call},
                 {"top_cause", s.cause},
                 {"top_count", std::to_string(s.count)},
                 {"top_wait_ns", std::to_string(s.wait_ns)},
                 {"gpu_idle_after_syncs_ns", std::to_string(b.idle_sync_ns)}},
                b.idle_sync_ns,
                "Remove per-step syncs: keep losses/metrics on the GPU and read them every N steps (`.item()`, "
                "`.cpu()`, `print(tensor)`, `if tensor:` all sync); torch.cuda.set_sync_debug_mode('warn') finds them.",
                "GPU idle after a synchronising call that returned ≤ 50 µs into the gap, up to the time the host was "
                "blocked in that call (the overlap the sync prevented)",
                b.wall_ns));
  }
  copy_findings(a, fs);
  // Reported when most kernels are shorter than their launch, and always when launching is the verdict (the verdict's
  // class has its finding).
  const bool short_majority = a.kernels > 0 && a.short_kernels * 2 >= a.kernels;
  if (short_majority || a.verdict.cls == "launch-bound") {
    fs.push_back(finding(
        "launch-bound", launch_share,
        short_majority ? fmt::format("{} of {} kernels run shorter than their launch call ({} median)", a.short_kernels,
                                     a.kernels, us(a.median_launch_call_ns))
                       : fmt::format("GPU idle {} of the steady state while the host was launching", pct(launch_share)),
        {{"count", std::to_string(a.short_kernels)},
         {"kernels", std::to_string(a.kernels)},
         {"median_launch_call_ns", std::to_string(a.median_launch_call_ns)},
         {"launch_gap_ns", std::to_string(b.idle_launch_ns)}},
        b.idle_launch_ns,
        "Capture the loop in a CUDA graph (torch.cuda.graphs / torch.compile(mode=\"reduce-overhead\")) "
        "or fuse the small ops (torch.compile, a fused kernel) so each launch does more work.",
        "kernels shorter than the median cudaLaunchKernel call", b.wall_ns));
  }
  if (!a.top_kernels.empty()) {
    std::vector<Evidence> ev_top;
    for (size_t i = 0; i < std::min<size_t>(3, a.top_kernels.size()); ++i) {
      const auto& g = a.top_kernels[i];
      ev_top.push_back({fmt::format("kernel_{}", i + 1),
                        fmt::format("{} — {} calls, {} total, {} of kernel time", abbreviate(g.name, 80), g.count,
                                    us(g.total_ns), pct(g.share))});
    }
    Finding f =
        finding("top-kernels", 0,
                fmt::format("Top kernel: {} ({} of kernel time)", abbreviate(a.top_kernels[0].name, 60),
                            pct(a.top_kernels[0].share)),
                std::move(ev_top), 0,
                "Optimise from the top of this list; `gpusqueeze occupancy` shows their resources.", "", b.wall_ns);
    f.severity = Severity::info;
    fs.push_back(std::move(f));
  }
  if (static_cast<double>(a.comm_ns) >= th.comm_min_share * w &&
      static_cast<double>(a.comm_ns - a.comm_exposed_ns) < th.comm_min_overlap * static_cast<double>(a.comm_ns)) {
    const double overlap = 1 - static_cast<double>(a.comm_exposed_ns) / static_cast<double>(a.comm_ns);
    fs.push_back(finding(
        "comm-overlap", static_cast<double>(a.comm_exposed_ns) / w,
        fmt::format("Only {} of NCCL time overlaps compute ({} exposed)", pct(overlap), ms(a.comm_exposed_ns)),
        {{"count", std::to_string(a.comm_kernels)},
         {"comm_ns", std::to_string(a.comm_ns)},
         {"exposed_ns", std::to_string(a.comm_exposed_ns)}},
        a.comm_exposed_ns,
        "Issue collectives asynchronously (async_op=True, wait just before the result is used); in DDP let "
        "gradient buckets all-reduce during backward (bucket_cap_mb), in FSDP enable forward/backward prefetch.",
        "NCCL time above 5% of wall with less than half hidden behind compute", b.wall_ns));
  }
  if (kernel_sum > 0 && static_cast<double>(layout_ns) / static_cast<double>(kernel_sum) > th.layout_copy_share) {
    fs.push_back(
        finding("layout-copies", static_cast<double>(layout_ns) / w,
                fmt::format("Layout work (copy_/contiguous/clone) is {} of GPU kernel time",
                            pct(static_cast<double>(layout_ns) / static_cast<double>(kernel_sum))),
                {{"time_ns", std::to_string(layout_ns)}}, layout_ns,
                "Convert the model and inputs once at load time (model.to(memory_format=torch.channels_last)) instead "
                "of per step; avoid .contiguous() after transposes inside the loop.",
                "above 15% of GPU time", b.wall_ns));
  }
  // The fixes users make, each with a saving calibrated on the real-model corpus.
  detail::fix_findings(t, a, fixes, kernel_sum, w, b.wall_ns, fs);
  if (t.lost_gpu_records + t.lost_cpu_records > 0) {
    Finding f = finding("incomplete-trace", 1.0,
                        fmt::format("The recorder lost {} GPU and {} CPU records: every figure here is judged on "
                                    "incomplete data",
                                    t.lost_gpu_records, t.lost_cpu_records),
                        {{"lost_gpu_records", std::to_string(t.lost_gpu_records)},
                         {"lost_cpu_records", std::to_string(t.lost_cpu_records)}},
                        0,
                        "Record again with a larger pool (gpusqueeze trace --buffer-mb 1024), a shorter window "
                        "(--delay/--duration), or --cpu-api none; the writer could not keep up with the program.",
                        "any record lost (the tracer's stats chunk)", b.wall_ns);
    f.severity = Severity::warn;
    fs.insert(fs.begin(), std::move(f));
    a.verdict.summary += " Judged on incomplete data: records were lost.";
  }
  judge_by_critical_path(t, a, {th.untraced_step_ns, th.recorder_record_ns});
  rank_findings(a.findings);  // read in order: the worst and largest first, a specific cause before its whole
  // Lost records qualify every other finding: said first.
  std::stable_partition(a.findings.begin(), a.findings.end(),
                        [](const Finding& f) { return f.id == "incomplete-trace"; });
  return a;
}

}  // namespace gsq::analyze
