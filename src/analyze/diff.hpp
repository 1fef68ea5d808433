// What changed between two analyses: verdict, time breakdown, steps, kernels and copies, findings gained and lost.
#pragma once

#include "analyze/analysis.hpp"
#include "core/table.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace gsq::analyze {

// How much slower the host ran per CUDA call in BEFORE's recording than in AFTER's: the ratio of their median
// cudaLaunchKernel calls (Analysis::median_eager_launch_ns), 0 when either has none. One program recorded twice on one
// machine keeps it within kHostSpeedSpread; beyond it the recordings' host times differ by that ratio too (another
// load on the machine, CPU clocks), not by the change alone.
[[nodiscard]] double host_speed_ratio(const Analysis& before, const Analysis& after);
// From the before/after recordings of the real-model pairs (H100; held-out sets 3 and 4 with torch.profiler and
// `gpusqueeze trace`, eight re-recorded corpus pairs with torch.profiler; bench/realmodels/host_speed.py,
// bench/results/2026-12-07-cpu-host-speed): 44 of 48 recording pairs within 0.82-1.17, where the host factors their
// untraced steps imply differ by 0.66-1.33 whatever the launch ratio; the four beyond (0.70, 0.71, 0.78, 1.62) had
// factors that differ by nearly the same ratio (0.71, 0.79, 0.87, 1.65), and `diff --fixes` missed them by -28%, -29%,
// -18% and +67% with BEFORE's host as recorded, by +2%, -1%, +5% and +3% at AFTER's speed.
inline constexpr double kHostSpeedSpread = 1.25;
[[nodiscard]] inline bool hosts_comparable(double ratio) {
  return ratio == 0 || (ratio <= kHostSpeedSpread && ratio >= 1 / kHostSpeedSpread);
}

// Kernels a step in AFTER over BEFORE (0 when either has no steps). A fix that leaves the kernels alone (sync, pinned,
// prefetch, host, workers, graphs) keeps it near 1; beyond kKernelChangeRatio either way the change also changed the
// kernels (a captured graph taking another attention path), which a replay of BEFORE cannot see. From the real-model
// recordings of such fixes (held-out sets 3-5, 22 pairs, both recorders): 0.99-1.37 (torch.profiler's window of an
// asynchronous variant takes in part of a neighbouring step), the one pair whose kernels changed 2.25-2.75
// (RoBERTa's captured forward running attention unfused in fp32; `diff --fixes` missed it by -36 to -47%).
[[nodiscard]] double kernels_per_step_ratio(const Analysis& before, const Analysis& after);
inline constexpr double kKernelChangeRatio = 1.5;
[[nodiscard]] inline bool kernels_changed(double ratio) {
  return ratio > 0 && (ratio > kKernelChangeRatio || ratio < 1 / kKernelChangeRatio);
}

[[nodiscard]] nlohmann::json diff_json(const Analysis& before, const Analysis& after);
[[nodiscard]] std::string diff_markdown(const Analysis& before, const Analysis& after);

// Ranks whose step (or wall) time exceeds the median rank's by more than 20%: one finding per straggler.
[[nodiscard]] std::vector<Finding> rank_stragglers(const std::vector<Analysis>& ranks);

// Load balance across ranks: a row per rank (step P50, GPU compute without NCCL kernels, NCCL time and the part no
// compute hides, verdict) and `rank-uneven-work` when one rank computes over 10% more than another — the others then
// wait for it inside the collectives (their NCCL time grows by the difference).
struct RankBalance {
  Table table;
  std::vector<Finding> findings;
};
[[nodiscard]] RankBalance rank_balance(const std::vector<Analysis>& ranks);

}  // namespace gsq::analyze
