// `gpusqueeze report -- CMD`: the user's program run the ways the page needs, within one time budget.
//   1. baseline  untraced but for NVTX ranges (the markers-only tracer: no GPU activity, no CUDA-call records), `runs`
//                times, the GPU's clocks, power and clock-event reasons sampled throughout: its step times
//                (steps.hpp), P50/P90/P99 with intervals, warm-up split off;
//   2. traced    once under `gpusqueeze trace`, analysed with the predictions calibrated to the baseline: the traced
//                run's steps, timed the same way, give the factor between traced and untraced steps, and the analysis
//                is told the untraced step that factor implies (analyze --untraced-step);
//   3. memory    a PyTorch program once more with the allocator's history recorded by the Python shim
//                (trace/python_shim.hpp: no change to the program), the snapshot written at exit.
// A later run is skipped, and the page says so, when the earlier ones show it would not fit in the budget; a run that
// outlives the budget is stopped (SIGINT, then SIGTERM, then SIGKILL).
#pragma once

#include "analyze/analysis.hpp"
#include "analyze/whatif.hpp"
#include "program/steps.hpp"
#include "trace/launcher.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gsq::program {

struct ProgramOptions {
  std::vector<std::string> command;
  int runs = 1;                      // baseline runs
  bool trace = true, memory = true;  // phases 2 and 3
  std::string step_range;  // NVTX range names that mark a step (a regex over the whole name); "": kDefaultStepRanges
  std::string step_regex;  // output lines that mark a step; set: used instead of ranges
  double budget_s = 180;   // for all runs together
  std::filesystem::path dir = "gsq-report";  // the runs' files go to DIR/program/
  int sample_ms = 100;                       // GPU clock/power sampling period during the baseline; 0 = off
  uint32_t gpu = 0;                          // NVML index sampled
  std::filesystem::path tracer_library;      // empty: found beside gpusqueeze
};

// One run of the program: how the launcher saw it end (exit code or signal, wall time, stopped at the budget, traced,
// files) and the steps it showed.
struct RunOutcome : trace::LaunchResult {
  std::string phase;  // baseline, traced, memory
  StepTimes steps;
  bool python = false;  // a traced process of the run was a Python interpreter (its trace header's command)
  [[nodiscard]] bool failed() const { return exit_code != 0 || term_signal != 0 || !exec_error.empty(); }
  // "stopped at the budget", the exec error, "killed by signal N" or "exit N".
  [[nodiscard]] std::string how_it_ended() const;
};

struct ProgramResult {
  std::string command;  // as one line
  std::vector<RunOutcome> runs;
  StepSource source = StepSource::process;
  std::string how;                              // where the baseline's steps come from
  StepStats steps;                              // the baseline's steps
  std::optional<std::filesystem::path> clocks;  // a baseline file with the sampled counters appended (jitter)
  // Phase 2: the traced run analysed; factor = untraced step P50 / traced step P50 (same markers), 0 = not measured.
  std::optional<std::filesystem::path> trace_file;
  double traced_p50_ns = 0, factor = 0;
  int64_t untraced_step_ns = 0;  // what the analysis was told (0: the recorder's corpus default was used)
  std::optional<analyze::Analysis> analysis;
  std::optional<analyze::WhatIf> what_if;
  std::vector<std::filesystem::path> memory_snapshots;  // phase 3
  std::vector<std::string> notes;                       // what was skipped or could not be read, and why
  double elapsed_s = 0;
  int interrupted_by = 0;  // the user stopped a run (Ctrl-C: SIGINT passed on to the program); nothing more was run
  [[nodiscard]] bool program_failed() const;
};

// Runs the phases; `note` gets a progress line as each run starts and ends. Throws Error(bad_input) for an empty
// command or options out of range, Error(no_gpu) when the tracer cannot load.
[[nodiscard]] ProgramResult run_program(const ProgramOptions& o, const std::function<void(const std::string&)>& note);
[[nodiscard]] nlohmann::json to_json(const ProgramResult& r);

}  // namespace gsq::program
