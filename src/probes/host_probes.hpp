// Host-side costs that CUDA events cannot time (they happen on the CPU): launch enqueue, synchronisation calls and
// allocation, measured with a steady clock over many calls per sample; and the summaries the CLI prints for the
// L2 and overlap probes. The GPU-side launch cost lives in `bench core` (launch.empty, with/without graphs).
#pragma once

#include "bench/runner.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gsq::probes {

struct HostCost {
  std::string name;                // "launch.enqueue", "sync.stream_idle", "alloc.cudaMalloc+cudaFree", ...
  std::string what;                // one line for the table
  std::string size;                // "1Mi" for allocations, "" otherwise
  std::vector<double> samples_ns;  // per call
  double p50_ns = 0, p99_ns = 0, ci_lo_ns = 0, ci_hi_ns = 0;
};

// group: "launch" (launch enqueue, graph launch per kernel, stream/device synchronize idle and after a kernel) or
// "alloc" (cudaMalloc+cudaFree vs cudaMallocAsync+cudaFreeAsync from the device's default pool). Throws
// Error(no_gpu) without a device.
[[nodiscard]] std::vector<HostCost> measure_host_costs(const std::string& group, int device, int samples,
                                                       const std::function<void(const std::string&)>& progress);
[[nodiscard]] nlohmann::json host_costs_json(const std::vector<HostCost>& costs, const std::string& gpu_name);
[[nodiscard]] Table host_costs_table(const std::vector<HostCost>& costs);

// Where the L2 ends, from an l2.read sweep (batch mode): the plateau below it, the HBM bandwidth above it, and the
// largest size still above the midpoint of the two. nullopt if the run has fewer than three sizes.
struct L2Transition {
  double l2_bytes_per_s = 0, hbm_bytes_per_s = 0;
  int64_t last_l2_size = 0, first_hbm_size = 0;  // bytes
};
[[nodiscard]] std::optional<L2Transition> l2_transition(const bench::Run& run);

// serial / streams time for each host-memory kind of an overlap.copy_compute run: "pinned" → 1.9, "pageable" → 1.0.
[[nodiscard]] std::vector<std::pair<std::string, double>> overlap_speedups(const bench::Run& run);

}  // namespace gsq::probes
