// The user's program's steps, timed as it runs untraced: from its own step markers (NVTX ranges that the markers-only
// tracer records), from the lines it prints, or as whole-process times; and their statistics (warm-up, P50/P90/P99
// with confidence intervals).
#pragma once

#include "core/stats.hpp"
#include "trace/format.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <regex>
#include <span>
#include <string>
#include <vector>

namespace gsq::program {

// The step markers `report -- CMD` looks for when the user names none, in this order, the first that marks two steps:
// PyTorch's ProfilerStep#N (torch.profiler's step, or an NVTX range of that name), then the ranges gpusqueeze's Python
// shim adds to any PyTorch program (trace/python_shim.hpp): each optimizer step (a training loop's iteration), then
// each DataLoader next() (a loop over a DataLoader, training or inference).
inline constexpr const char* kDefaultStepRanges[] = {R"(ProfilerStep#\d+)", R"(Optimizer\.step#.*)",
                                                     R"(enumerate\(DataLoader\)#.*)"};

enum class StepSource { markers, output, process };
[[nodiscard]] const char* to_string(StepSource s);

struct StepTimes {
  StepSource source = StepSource::process;
  std::string how;         // where the steps come from, for the page
  std::vector<double> ns;  // one per step, in order
};

// Steps from the NVTX ranges whose whole name matches `pattern`, on the one thread (of all the files) that has most of
// them: the time from one range's start to the next one's, so whatever the loop does between two marked ranges
// (fetching the batch, logging) counts as part of the step. Fewer than two ranges: no steps.
[[nodiscard]] StepTimes steps_from_ranges(const std::vector<trace::TraceFile>& files, const std::regex& pattern,
                                          const std::string& pattern_text);
// The first of `patterns` that gives steps (above); where none does, the last answer says so for all of them.
[[nodiscard]] StepTimes steps_from_ranges(const std::vector<trace::TraceFile>& files,
                                          const std::vector<std::string>& patterns);

// Steps from the arrival times (ns, one clock) of the output lines that marked one: line to line.
[[nodiscard]] StepTimes steps_from_lines(std::span<const int64_t> stamps_ns, const std::string& pattern_text);

// A step slower than this many times the median of the second half of the steps, before the first that is not, is a
// warm-up step: eager PyTorch's first iterations (cuDNN's algorithm search, the allocator growing its pool, lazily
// loaded kernels) run 2-100× slower than the steady ones, the steady ones vary by well under 1.5× (the real-model
// corpus, bench/results/2026-12-06-h100-realmodels: 7 interleaved rounds per variant, max/min under 1.2 on 27 of 30).
inline constexpr double kWarmupFactor = 1.5;

struct StepStats {
  size_t steps = 0, warmup = 0;  // steps timed; the leading ones left out as warm-up
  double warmup_ns = 0;          // their total
  stats::Summary steady;         // over the steps after warm-up (ns)
  stats::Interval p50_ci, p90_ci, p99_ci;
  [[nodiscard]] bool ok() const { return steady.n > 0; }
};

// `runs`: the steps of each run, each run's warm-up split off its own start.
[[nodiscard]] StepStats summarize_steps(const std::vector<std::vector<double>>& runs);
[[nodiscard]] nlohmann::json to_json(const StepStats& s);

}  // namespace gsq::program
