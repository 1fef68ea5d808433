// The stages of analyze() that index a trace and judge its verdict (stages.hpp).
#include "analyze/stages.hpp"

#include "analyze/gaps.hpp"
#include "analyze/text.hpp"

#include "core/stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>

namespace gsq::analyze::detail {

TraceIndex index_trace(const Trace& t, Analysis& a) {
  const auto& ev = t.events;
  // Index runtime calls by correlation, and launching threads' runtime calls by time.
  TraceIndex ix;
  auto& [runtime_by_corr, runtime_by_thread, wall_lo, wall_hi, gpu_busy, kernel_busy, copy_busy, comm_busy,
         compute_busy, outer, gpu_ops, one_off, loader_ns, loader_calls] = ix;
  std::vector<int64_t> launch_call_ns, eager_launch_ns;
  std::vector<Interval> gpu_iv, kernel_iv, copy_iv, comm_iv, compute_iv;
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
      if (const auto n = t.name(e); n == "cudaLaunchKernel" || n == "cudaLaunchKernel_ptsz")
        eager_launch_ns.push_back(e.dur_ns);
    }
    if (e.on_gpu()) {
      gpu_iv.push_back({e.start_ns, e.end_ns()});
      gpu_ops.push_back(i);  // ev is sorted by start, so gpu_ops is too: what ran after each gap, who launched it
    }
    if (e.kind == Kind::kernel) {
      ++a.kernels;
      kernel_iv.push_back({e.start_ns, e.end_ns()});
      const bool comm = t.name(e).find("nccl") != std::string::npos;
      (comm ? comm_iv : compute_iv).push_back({e.start_ns, e.end_ns()});
      a.comm_kernels += comm;
    }
    if (e.kind == Kind::memcpy || e.kind == Kind::memset) copy_iv.push_back({e.start_ns, e.end_ns()});
  }
  gpu_busy = merge(gpu_iv), kernel_busy = merge(kernel_iv), copy_busy = merge(copy_iv);
  comm_busy = merge(comm_iv), compute_busy = merge(compute_iv);
  a.comm_ns = total(comm_busy);
  for (const auto& c : comm_busy) a.comm_exposed_ns += (c.hi - c.lo) - covered(compute_busy, c.lo, c.hi);
  auto& b = a.breakdown;
  b.wall_ns = wall_hi - wall_lo;
  b.gpu_busy_ns = total(gpu_busy);
  b.kernel_busy_ns = total(kernel_busy);
  for (const auto& c : copy_busy) b.copy_only_ns += (c.hi - c.lo) - covered(kernel_busy, c.lo, c.hi);
  auto median = [](const std::vector<int64_t>& v) {
    return v.empty() ? int64_t{0}
                     : static_cast<int64_t>(stats::percentile(std::vector<double>(v.begin(), v.end()), 0.5));
  };
  a.median_launch_call_ns = median(launch_call_ns);
  a.median_eager_launch_ns = median(eager_launch_ns);

  outer = outermost_ops(t);

  std::vector<Interval> one_off_iv;
  for (const size_t i : one_off_calls(t)) {
    one_off_iv.push_back(one_off_span(t, i, outer));
    a.startup_calls.emplace_back(t.name(ev[i]), ev[i].dur_ns);
  }
  std::sort(a.startup_calls.begin(), a.startup_calls.end(),
            [](const auto& x, const auto& y) { return x.second > y.second; });
  one_off = merge(std::move(one_off_iv));
  return ix;
}

KernelTally tally_kernels(const Trace& t, const TraceIndex& ix, Analysis& a) {
  const auto& ev = t.events;
  // Top kernels, by normalised name.
  KernelTally k;
  auto& [kernel_sum, short_kernel_ns, gemm_ns, layout_ns, fixes] = k;
  std::map<std::string, std::vector<double>> groups;
  for (size_t i = 0; i < ev.size(); ++i) {
    const Event& e = ev[i];
    if (!e.on_gpu()) continue;
    std::string op;
    if (const auto r = ix.runtime_by_corr.find(e.correlation);
        r != ix.runtime_by_corr.end() && ix.outer[r->second] >= 0) {
      op = t.name(ev[static_cast<size_t>(ix.outer[r->second])]);
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
  return k;
}

Shares judge_by_shares(const TraceIndex& ix, const KernelTally& k, Analysis& a) {
  // Verdict: the largest share of the steady state (wall time less one-off start-up). Short kernels' run time counts
  // as launch-limited, not as GPU work.
  const auto& b = a.breakdown;
  Shares s;
  const double wall = s.wall = std::max<double>(1, static_cast<double>(b.wall_ns - b.idle_startup_ns));
  const double launch_share = s.launch =
      (static_cast<double>(b.idle_launch_ns) + static_cast<double>(k.short_kernel_ns)) / wall;
  // Compute kernels' busy time; NCCL time counts as communication where no compute hides it.
  const double gpu_share = s.gpu =
      std::max(0.0, static_cast<double>(total(ix.compute_busy) - k.short_kernel_ns)) / wall;
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
  return s;
}

void refine_verdict(const Trace& t, const TraceIndex& ix, const KernelTally& k, const Shares& s, const Thresholds& th,
                    Analysis& a) {
  // Hardware layer: counter samples taken while a compute kernel ran.
  auto busy_at = [&](int64_t ts) {
    const auto it = std::upper_bound(ix.compute_busy.begin(), ix.compute_busy.end(), ts,
                                     [](int64_t v, const Interval& iv) { return v < iv.lo; });
    return it != ix.compute_busy.begin() && ts < std::prev(it)->hi;
  };
  const auto& b = a.breakdown;
  const double wall = s.wall;
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
        pct(a.verdict.share), pct(k.gemm_share()));
  } else {
    a.verdict.summary =
        b.idle_startup_ns > 0
            ? fmt::format("{}: {} of the time after one-off start-up ({} of {}; start-up took {} of the {} window).",
                          a.verdict.cls, pct(a.verdict.share), ms(static_cast<int64_t>(a.verdict.share * wall)),
                          ms(b.wall_ns - b.idle_startup_ns), ms(b.idle_startup_ns), ms(b.wall_ns))
            : fmt::format("{}: {} of the wall time ({} of {}).", a.verdict.cls, pct(a.verdict.share),
                          ms(static_cast<int64_t>(a.verdict.share * wall)), ms(b.wall_ns));
  }
}

}  // namespace gsq::analyze::detail
