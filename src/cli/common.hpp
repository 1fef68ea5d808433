// What the subcommands share: where a snapshot comes from, how results and diagnostics are printed.
#pragma once

#include "gpu/snapshot.hpp"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace gsq::cli {

// Each subcommand registers itself and returns the action to run after parsing; the action returns the exit code.
using Action = std::function<int()>;
Action register_env(CLI::App& app);
Action register_doctor(CLI::App& app);
Action register_report(CLI::App& app);
Action register_bench(CLI::App& app);
Action register_compare(CLI::App& app);
Action register_probe(CLI::App& app);
Action register_analyze(CLI::App& app);
Action register_diff(CLI::App& app);
Action register_trace(CLI::App& app);
Action register_capture(CLI::App& app);
Action register_exporter(CLI::App& app);
Action register_rules(CLI::App& app);
Action register_kernels(CLI::App& app);
Action register_occupancy(CLI::App& app);
Action register_memory(CLI::App& app);
Action register_jitter(CLI::App& app);
Action register_trt(CLI::App& app);
Action register_nccl(CLI::App& app);
Action register_topo(CLI::App& app);
Action register_tune(CLI::App& app);
Action register_coldstart(CLI::App& app);
Action register_fleet(CLI::App& app);

struct SnapshotOptions {
  std::string snapshot_file;  // replay instead of reading the live machine
  bool no_load = false;
  double load_seconds = 2.0;
};
void add_snapshot_options(CLI::App& cmd, SnapshotOptions& o, bool with_load);

// The live machine (NVML, plus the load phase when asked) or the replayed file. Throws Error(no_gpu) /
// Error(bad_input).
[[nodiscard]] gpu::Snapshot acquire_snapshot(const SnapshotOptions& o, bool with_load);

// The snapshot recorded on an H200 that ships with gpusqueeze, for machines without a GPU; nullopt if not installed.
[[nodiscard]] std::optional<std::filesystem::path> bundled_snapshot();
// A data file shipped with the binary (share/gpusqueeze beside it in a build tree, ../share/gpusqueeze installed).
[[nodiscard]] std::optional<std::filesystem::path> data_file(const std::string& name);
// The kernels library shipped with the binary (lib/ beside it in a build tree, ../lib installed).
[[nodiscard]] std::optional<std::filesystem::path> kernels_library();

void note(const std::string& text);  // a diagnostic line on stderr, "gpusqueeze: ..."

}  // namespace gsq::cli
