// From a trace to the bottleneck: utilisation, idle breakdown, top kernels, copies, syncs, launch-bound detection,
// layout work, step times; a verdict and findings in the project's one finding shape.
#pragma once

#include "analyze/model.hpp"
#include "core/finding.hpp"
#include "core/table.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gsq::analyze {

inline constexpr const char* kAnalysisSchema = "gpusqueeze.analysis/1";

// The critical path of the launching thread, replayed with the recorder's cost taken out (judge_by_critical_path,
// whatif_report.cpp), and whether it judged the verdict. One owner: judge_by_critical_path writes it, the outputs
// read it.
struct PathJudgement {
  bool replayed = false;  // judge_by_critical_path ran (the JSON's "critical_path" is null where it did not)
  bool has_path = false;  // the replay gave a path (false: only ok = false and the model are known)
  bool ok = false;        // the path judged the verdict; false with `why` where it could not
  std::string model, verdict, why;
  // Shares of the path: the host's own work, CPU ops (dispatch, launches), waiting on kernels, waiting on copies.
  double host_share = 0, cpu_ops_share = 0, wait_kernels_share = 0, wait_copies_share = 0;
  int64_t replayed_step_p50_ns = 0;  // the replay as recorded (the model checked against the recording)
  int64_t recorded_step_p50_ns = 0, untraced_step_p50_ns = 0;
  std::optional<int64_t> host_free_step_p50_ns;  // the step with the host's own time taken out (host classes only)
  std::string correction;                        // how the recorder's cost was taken out
  double host_scale = 1, fidelity = 0, launched_gpu_share = 0;
  int64_t host_ns = 0;
  size_t records = 0;
  size_t queue_depth = 0, queued_launches = 0;           // the launch queue the replay holds launches to (0: none seen)
  std::vector<std::pair<std::string, int64_t>> top_ops;  // CPU ops holding most of the path, largest first
};
[[nodiscard]] nlohmann::json to_json(const PathJudgement& p);

// Thresholds, each with where it comes from.
struct Thresholds {
  int64_t sync_drain_window_ns = 50'000;  // a gap starting ≤ 50 µs before a sync call returns was drained by it
  double launch_gap_runtime_share = 0.5;  // gap spent ≥ 50% launching (CUDA calls, or dispatching the launching op)
  int64_t unoverlapped_copy_min_ns = 100'000;  // issue/nsys-style: copies over 100 µs ...
  double unoverlapped_copy_max_hidden = 0.5;   // ... less than half hidden behind compute
  double layout_copy_share = 0.15;             // layout work above 15% of GPU time → layout advice
  double comm_min_share = 0.05;                // NCCL time above 5% of wall ...
  double comm_min_overlap = 0.5;               // ... less than half overlapped with compute → comm-overlap
  // Hardware layer (NVML GPM ratios averaged while compute kernels run), the subclass and its findings:
  double tensor_active = 0.5;     // tensor pipes active ≥ 50% → matrix
  double dram_bound = 0.7;        // DRAM bandwidth ≥ 70% of peak → memory, dram-bound
  double sm_active = 0.5;         // SMs busy ≥ 50% ...
  double low_occupancy = 0.25;    // ... with < 25% of warp slots occupied → latency/occupancy, low-occupancy
  double tensor_underused = 0.2;  // GEMM-type kernels ≥ 30% of kernel time but tensor pipes < 20% → tensor-underused
  double pcie_saturated_bytes_per_s = 40e9;  // ≥ 40 GB/s in one direction (gen5 x16 carries ~55) → pcie-saturated
  double throttled = 0.2;                    // a power/thermal clock-event reason in ≥ 20% of busy samples
  // The recorder's cost, taken out of the host time before the verdict and every prediction (whatif.hpp): an untraced
  // step time the user measured (analyze --untraced-step), else a per-record cost (< 0: the recorder's default).
  int64_t untraced_step_ns = 0;
  double recorder_record_ns = -1;
};

struct KernelGroup {
  std::string name;  // normalised
  size_t count = 0;
  int64_t total_ns = 0;
  double mean_ns = 0, p50_ns = 0, p99_ns = 0, share = 0;  // share of GPU kernel time
};

struct CopyStats {
  size_t count = 0, pageable = 0, synchronous = 0, unoverlapped = 0;
  uint64_t bytes = 0, pageable_bytes = 0;
  int64_t total_ns = 0, pageable_ns = 0, unoverlapped_ns = 0;
  std::map<std::string, size_t> size_histogram;  // "≤4K", "4K–64K", ...
  std::map<std::string, double> gbps_by_kind;    // achieved, bytes/time over all copies of a kind
};

struct SyncPoint {
  std::string call;   // cudaStreamSynchronize, cudaMemcpyAsync (pageable), ...
  std::string cause;  // innermost CPU op around it: aten::item, aten::to, ...
  size_t count = 0;
  int64_t wait_ns = 0;
};

struct Breakdown {
  int64_t wall_ns = 0;
  int64_t gpu_busy_ns = 0;     // union of kernels, copies, memsets on all devices
  int64_t kernel_busy_ns = 0;  // union of kernels
  int64_t copy_only_ns = 0;    // copies/memsets with no kernel running anywhere
  int64_t idle_host_ns = 0, idle_sync_ns = 0, idle_launch_ns = 0;
  int64_t idle_queued_ns = 0;   // the next GPU work was already launched: waiting on a dependency, not the host
  int64_t idle_startup_ns = 0;  // one-off start-up inside the window (context creation, lazy loading, ...)
  size_t gaps = 0;
};

struct Verdict {
  std::string cls;       // host-bound, launch-bound, sync-bound, transfer-bound, gpu-bound, communication-bound
  std::string subclass;  // gpu-bound: matrix, memory, latency/occupancy, other; unknown without counters
  double share = 0;      // of wall time
  std::string summary;
};

// Hardware counters averaged over the samples taken while compute kernels ran (empty when the trace has none).
struct HardwareLayer {
  size_t busy_samples = 0;
  std::map<std::string, double> mean;  // track name → mean over busy samples
  double throttled_share = 0;          // busy samples with a power/thermal/HW clock-event reason set
};

struct ReplayGraph;  // whatif.hpp

struct Analysis {
  std::string origin, source;
  int rank = -1;
  size_t events = 0, kernels = 0, runtime_calls = 0;
  Breakdown breakdown;
  std::vector<KernelGroup> top_kernels;
  CopyStats copies;
  std::vector<SyncPoint> syncs;
  std::vector<std::pair<std::string, int64_t>> startup_calls;  // one-off start-up calls: name, duration
  size_t short_kernels = 0;                                    // kernels shorter than the median launch call
  int64_t median_launch_call_ns = 0;
  // The median cudaLaunchKernel call (the eager launch, one API, whatever the fix): the host's speed per CUDA call in
  // this recording. Two recordings of one program on one machine keep it within 0.82-1.17× on the real-model corpus
  // (diff's host-speed check, diff.hpp); 0 when the window has none (a graph replay).
  int64_t median_eager_launch_ns = 0;
  std::map<std::string, int64_t> gpu_ns_by_op;  // top-level CPU op → GPU time it launched
  std::vector<int64_t> step_ns;                 // ProfilerStep#N durations
  std::string window;                           // the steady-state window judged (Trace::window), "" = whole trace
  size_t comm_kernels = 0;                      // NCCL kernels
  int64_t comm_ns = 0, comm_exposed_ns = 0;     // their busy time, and the part no compute kernel overlaps
  HardwareLayer hardware;
  Verdict verdict;
  PathJudgement critical_path;  // the replay's critical path and its judgement of the verdict (whatif_report.cpp)
  std::shared_ptr<const ReplayGraph> replay_graph;  // the graph it was judged on, kept for --what-if
  std::vector<Finding> findings;
};

[[nodiscard]] Analysis analyze(const Trace& t, const Thresholds& th = {});
[[nodiscard]] nlohmann::json to_json(const Analysis& a);
[[nodiscard]] Table breakdown_table(const Analysis& a);
[[nodiscard]] Table kernels_table(const Analysis& a, size_t rows = 10);
[[nodiscard]] std::string render_markdown(const Analysis& a);

}  // namespace gsq::analyze
