// The findings about where a trace's time went: one stage of analyze() (stages.hpp).
#include "analyze/stages.hpp"

#include "analyze/text.hpp"
#include "analyze/trace_finding.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gsq::analyze::detail {

void time_findings(const Trace& t, const TraceIndex& ix, const KernelTally& k, const Shares& s, const Thresholds& th,
                   Analysis& a) {
  const auto& b = a.breakdown;
  const auto& ev = t.events;
  auto& fs = a.findings;
  const double w = s.wall;
  hardware_findings(a, s.gpu, k.gemm_share(), th, fs);
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
  // The DataLoader's own ranges (summed by index_trace): the time the training loop waited for its input, whatever
  // the GPU did meanwhile.
  if (static_cast<double>(ix.loader_ns) / w >= 0.05) {
    const bool single = std::any_of(ev.begin(), ev.end(), [&](const Event& e) {
      return e.kind != Kind::kernel && t.name(e).find("_SingleProcessDataLoaderIter") != std::string::npos;
    });
    fs.push_back(finding(
        "dataloader", static_cast<double>(ix.loader_ns) / w,
        fmt::format("The loop waits for the DataLoader {} of the time ({} batches fetched{})",
                    pct(static_cast<double>(ix.loader_ns) / w), ix.loader_calls,
                    single ? ", in the training process itself: num_workers=0" : ""),
        {{"dataloader_ns", std::to_string(ix.loader_ns)}, {"batches", std::to_string(ix.loader_calls)}}, ix.loader_ns,
        "DataLoader(num_workers=N (the CPU cores the augmentation needs), pin_memory=True, persistent_workers=True, "
        "prefetch_factor=2+) and batch.to(device, non_blocking=True) (a pinned batch copied without blocking the "
        "loop; `--what-if workers:N,pinned` replays both); move per-sample CPU transforms to the GPU "
        "(torchvision.transforms.v2 on tensors, DALI) when the workers cannot keep up.",
        "enumerate(DataLoader) ranges ≥ 5% of the steady-state window; saving: their time, an upper bound (the "
        "workers must keep up)",
        b.wall_ns));
  }
  if (!a.syncs.empty()) {
    const auto& top = a.syncs.front();
    size_t count = 0;
    for (const auto& x : a.syncs) count += x.count;
    fs.push_back(
        finding("sync-point", static_cast<double>(b.idle_sync_ns) / w,
                fmt::format("{} host syncs; the largest group: {} × {} from {}", count, top.count, top.call, top.cause),
                {{"count", std::to_string(count)},
                 {"top_call", top.call},
                 {"top_cause", top.cause},
                 {"top_count", std::to_string(top.count)},
                 {"top_wait_ns", std::to_string(top.wait_ns)},
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
        "launch-bound", s.launch,
        short_majority ? fmt::format("{} of {} kernels run shorter than their launch call ({} median)", a.short_kernels,
                                     a.kernels, us(a.median_launch_call_ns))
                       : fmt::format("GPU idle {} of the steady state while the host was launching", pct(s.launch)),
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
  if (k.kernel_sum > 0 && static_cast<double>(k.layout_ns) / static_cast<double>(k.kernel_sum) > th.layout_copy_share) {
    fs.push_back(
        finding("layout-copies", static_cast<double>(k.layout_ns) / w,
                fmt::format("Layout work (copy_/contiguous/clone) is {} of GPU kernel time",
                            pct(static_cast<double>(k.layout_ns) / static_cast<double>(k.kernel_sum))),
                {{"time_ns", std::to_string(k.layout_ns)}}, k.layout_ns,
                "Convert the model and inputs once at load time (model.to(memory_format=torch.channels_last)) instead "
                "of per step; avoid .contiguous() after transposes inside the loop.",
                "above 15% of GPU time", b.wall_ns));
  }
}

}  // namespace gsq::analyze::detail
