// Two groups of the analyzer's findings: the hardware layer's (what the GPM counters sampled beside a trace say while
// compute kernels ran: DRAM bound, low occupancy, tensor pipes idle under GEMMs, PCIe saturated, clocks throttled)
// and the copies' (pageable, synchronous, not overlapped).
#include "analyze/analysis.hpp"
#include "analyze/text.hpp"
#include "analyze/trace_finding.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gsq::analyze::detail {

void hardware_findings(const Analysis& a, double gpu_share, double gemm_share, const Thresholds& th,
                       std::vector<Finding>& fs) {
  const auto& hw = a.hardware;
  const auto& b = a.breakdown;
  auto hw_mean = [&](const char* name) { return hw.mean.contains(name) ? hw.mean.at(name) : -1.0; };
  const double tensor = hw_mean("tensor_active"), dram = hw_mean("dram_bandwidth_utilization"),
               sm_active = hw_mean("sm_active"), occupancy = hw_mean("sm_occupancy");
  auto hw_evidence = [&](std::vector<Evidence> items) {
    items.push_back({"busy_samples", std::to_string(hw.busy_samples)});
    return items;
  };
  if (dram >= th.dram_bound)
    fs.push_back(finding("dram-bound", gpu_share,
                         fmt::format("Kernels run at {} of peak DRAM bandwidth: memory-bound", pct(dram)),
                         hw_evidence({{"dram_bandwidth_utilization", fmt::format("{:.3f}", dram)}}), 0,
                         "Move fewer bytes: fuse elementwise ops into their producers (torch.compile), keep "
                         "activations in bf16/fp16, use weight-only INT8/INT4 for decoding (gpusqueeze kernels "
                         "--suite quant); check the top kernels against `gpusqueeze probe mem`'s measured ceiling.",
                         "NVML GPM DRAM bandwidth utilisation averaged over busy samples", b.wall_ns));
  // Low occupancy matters only when nothing else is saturated: a Hopper GEMM keeps its tensor pipes busy with one
  // warp-specialised block per SM, a bandwidth-bound kernel is limited by DRAM whatever its occupancy.
  if (a.verdict.subclass == "latency/occupancy")
    fs.push_back(finding(
        "low-occupancy", gpu_share,
        fmt::format("SMs active {} but only {} of warp slots occupied: too few blocks or too many resources per block",
                    pct(sm_active), pct(occupancy)),
        hw_evidence(
            {{"sm_active", fmt::format("{:.3f}", sm_active)}, {"sm_occupancy", fmt::format("{:.3f}", occupancy)}}),
        0,
        "Launch more blocks (larger batch, split-K, smaller tiles), or cut registers/shared memory per block; "
        "`gpusqueeze occupancy BINARY KERNEL` shows what limits each kernel.",
        "NVML GPM SM activity and occupancy averaged over busy samples", b.wall_ns));
  if (tensor >= 0 && gemm_share >= 0.3 && tensor < th.tensor_underused)
    fs.push_back(finding(
        "tensor-underused", gpu_share,
        fmt::format("GEMM-type kernels take {} of kernel time but tensor pipes are active only {}", pct(gemm_share),
                    pct(tensor)),
        hw_evidence(
            {{"tensor_active", fmt::format("{:.3f}", tensor)}, {"gemm_share", fmt::format("{:.3f}", gemm_share)}}),
        0,
        "Run matmuls in bf16/fp16 (torch.autocast) or enable TF32 (torch.backends.cuda.matmul.allow_tf32 = True); "
        "pad dimensions to multiples of 16 so cuBLAS picks tensor-core kernels.",
        "NVML GPM tensor activity averaged over busy samples", b.wall_ns));
  for (const char* dir : {"pcie_rx", "pcie_tx"}) {
    const double bps = hw_mean(dir);
    if (bps >= th.pcie_saturated_bytes_per_s)
      fs.push_back(finding("pcie-saturated", gpu_share,
                           fmt::format("PCIe {} runs at {:.1f} GB/s while kernels run", dir + 5, bps / 1e9),
                           hw_evidence({{std::string(dir) + "_bytes_per_s", fmt::format("{:.0f}", bps)}}), 0,
                           "Keep data on the GPU between steps, use pinned memory and overlap copies with compute "
                           "on a second stream; compare with `gpusqueeze probe pcie`.",
                           "NVML GPM PCIe throughput averaged over busy samples", b.wall_ns));
  }
  if (hw.throttled_share >= th.throttled)
    fs.push_back(
        finding("clock-throttled", gpu_share * hw.throttled_share,
                fmt::format("Clocks slowed by power or thermal limits in {} of busy samples", pct(hw.throttled_share)),
                hw_evidence({{"throttled_share", fmt::format("{:.3f}", hw.throttled_share)},
                             {"sm_clock_hz", fmt::format("{:.0f}", std::max(0.0, hw_mean("sm_clock")))}}),
                0,
                "Check cooling and the power limit (`gpusqueeze doctor` reports both); a power-capped GEMM "
                "gains nothing from more work per launch.",
                "NVML clock-event reasons sampled beside the trace", b.wall_ns));
}

void copy_findings(const Analysis& a, std::vector<Finding>& fs) {
  const auto& c = a.copies;
  const auto& b = a.breakdown;
  const double w = std::max<double>(1, static_cast<double>(b.wall_ns - b.idle_startup_ns));  // the steady state
  if (c.pageable > 0) {
    fs.push_back(
        finding("pageable-copy", static_cast<double>(c.pageable_ns) / w,
                fmt::format("{} copies from/to pageable host memory ({:.1f} MB)", c.pageable,
                            static_cast<double>(c.pageable_bytes) / 1e6),
                {{"count", std::to_string(c.pageable)},
                 {"bytes", std::to_string(c.pageable_bytes)},
                 {"time_ns", std::to_string(c.pageable_ns)}},
                c.pageable_ns,
                "Allocate host tensors pinned (tensor.pin_memory(), DataLoader(pin_memory=True)) and copy with "
                "non_blocking=True: pageable copies are staged through a driver buffer and block the host.",
                "CUDA programming guide: pageable transfers are staged and synchronous for the host", b.wall_ns));
  }
  if (c.synchronous > 0) {
    fs.push_back(
        finding("sync-copy", static_cast<double>(c.pageable_ns) / w,
                fmt::format("{} copies block the host (cudaMemcpy or pageable; pageable HtoD ≤ 64 KiB not counted)",
                            c.synchronous),
                {{"count", std::to_string(c.synchronous)}}, 0,
                "Use pinned memory with non_blocking=True (cudaMemcpyAsync on a stream) so the host keeps launching.",
                "nsys expert rule cuda_memcpy_sync (same 64 KiB exclusion)", b.wall_ns));
  }
  if (c.unoverlapped > 0) {
    fs.push_back(finding("unoverlapped-copy", static_cast<double>(c.unoverlapped_ns) / w,
                         fmt::format("{} copies over 100 µs are less than half hidden behind compute", c.unoverlapped),
                         {{"count", std::to_string(c.unoverlapped)}, {"time_ns", std::to_string(c.unoverlapped_ns)}},
                         c.unoverlapped_ns,
                         "Issue copies on a side stream from pinned memory while the previous batch computes (double "
                         "buffering); wait on an event, not on the stream.",
                         "copies > 100 µs with < 50% overlap", b.wall_ns));
  }
}

}  // namespace gsq::analyze::detail
