// What `bench`, `probe` and `kernels` share: their options, running a suite on the harness and printing it, the
// host-cost probes.
#pragma once

#include "bench/runner.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace gsq::cli {

struct BenchOptions {
  std::string suite = "core";
  bench::RunOptions run;
  std::vector<std::string> axis_overrides;
  std::string mode = "both", output, format = "md";
  bool list = false, no_samples = false;
};

// The suite of that name (core, mem, l2, pcie, overlap, kernels, quant); Error(bad_input) for another.
[[nodiscard]] bench::Suite suite_named(const std::string& name);
// Runs o.suite as o says (list, filter, axes, modes) and prints or writes it; the exit code.
int run_bench(BenchOptions& o);
// `probe launch|alloc`: the host-side cost probes, printed or as JSON; the exit code.
int run_host_costs(const std::string& group, const BenchOptions& o, int samples, bool json);
// The harness's options (filter, axes, modes, output) on a command.
void add_run_options(CLI::App* cmd, BenchOptions& o);

}  // namespace gsq::cli
