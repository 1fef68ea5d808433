// Taking a live snapshot: NVML for the GPUs, procfs/sysfs for the host.
#pragma once

#include "gpu/nvml.hpp"
#include "gpu/snapshot.hpp"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace gsq::gpu {

// Reads the host only (works without a driver). `tool_version` goes into the snapshot.
[[nodiscard]] HostSnapshot collect_host();

// Full snapshot. Throws Error(no_gpu) when NVML cannot be opened or sees no GPU.
[[nodiscard]] Snapshot collect_snapshot(const Nvml& nvml);
// The same with the host part taken earlier (the exporter reads procfs/sysfs once, NVML at every collection).
[[nodiscard]] Snapshot collect_snapshot(const Nvml& nvml, HostSnapshot host);

// Reads the per-GPU values that move under load (clocks, event reasons, PCIe gen, temperature, power, replays).
struct LiveReading {
  Field<uint32_t> sm_clock_mhz, pcie_gen;
  Field<uint64_t> clock_event_reasons_mask;
  Field<uint32_t> pcie_replay_counter;
  Field<int32_t> temperature_c;
  Field<double> power_w;
};
[[nodiscard]] LiveReading read_live(const Nvml& nvml, uint32_t gpu_index);

// Counters the exporter reads with every collection (not part of a snapshot): energy since the driver loaded and
// PCIe throughput over NVML's 20 ms window.
// Re-reads, in a snapshot collect_snapshot() took, only the fields that change while a GPU runs (clocks, power,
// temperature, throttle reasons, memory, utilization, processes, ECC/remap/NVLink counters, PCIe link state): what
// the exporter reads at every collection. Throws Error(no_gpu) when a GPU is gone.
void refresh_snapshot(const Nvml& nvml, Snapshot& s);

struct Counters {
  Field<uint64_t> energy_mj;
  Field<uint32_t> pcie_tx_kb_per_s, pcie_rx_kb_per_s;
  // Filled by readers that keep state between calls (the exporter's): GPM metrics over the last collection interval
  // (name as in gpu_metrics(), ratio or bytes/s) and the XID events seen since start.
  std::vector<std::pair<std::string, double>> gpm;
  Field<uint64_t> xid_events, last_xid;
};
[[nodiscard]] Counters read_counters(const Nvml& nvml, uint32_t gpu_index);

// Just the SM clock and the clocks-event reasons: two NVML calls, cheap enough to take with every benchmark sample.
struct ClockReading {
  Field<uint32_t> sm_clock_mhz;
  Field<uint64_t> clock_event_reasons_mask;
};
[[nodiscard]] ClockReading read_clock(const Nvml& nvml, uint32_t gpu_index);

// Folds readings taken while a load ran into the summary a snapshot stores.
[[nodiscard]] LoadSample summarize_load(const std::vector<LiveReading>& readings, double duration_s);

[[nodiscard]] std::string utc_now_iso8601();

}  // namespace gsq::gpu
