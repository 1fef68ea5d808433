// What changed between two analyses: verdict, time breakdown, steps, kernels and copies, findings gained and lost.
#pragma once

#include "analyze/analysis.hpp"
#include "core/table.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace gsq::analyze {

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
