// What changed between two analyses: verdict, time breakdown, steps, kernels and copies, findings gained and lost.
#pragma once

#include "analyze/analysis.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace gsq::analyze {

[[nodiscard]] nlohmann::json diff_json(const Analysis& before, const Analysis& after);
[[nodiscard]] std::string diff_markdown(const Analysis& before, const Analysis& after);

// Ranks whose step (or wall) time exceeds the median rank's by more than 20%: one finding per straggler.
[[nodiscard]] std::vector<Finding> rank_stragglers(const std::vector<Analysis>& ranks);

}  // namespace gsq::analyze
