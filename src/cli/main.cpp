// gpusqueeze entry point: parses the command line once and maps every error to the documented exit code.
#include "cli/common.hpp"

#include "core/error.hpp"
#include "cuda/check.hpp"
#include "gpu/cost.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <vector>

int main(int argc, char** argv) {
  CLI::App app{"gpusqueeze — measure, diagnose and tune NVIDIA data-center GPUs (H100/H200 first)"};
  app.set_version_flag("--version", GSQ_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Steps: env/doctor (0 machine) · bench/compare (1 baseline) · trace/analyze/diff (2 locate) · probe (3, 5 "
      "ceilings) · "
      "kernels/occupancy (3, 4) · topo/nccl (5 multi-GPU) · tune (6 persist) · memory/jitter/trt/coldstart (field "
      "triage) · "
      "report (all steps on "
      "one page).\n"
      "Exit codes: 0 ok · 1 findings at fail level or regression · 2 bad usage or input · 3 no NVIDIA driver/GPU · 70 "
      "internal or CUDA error.\n"
      "Run `gpusqueeze COMMAND --help` for each command's options and examples.");
  const std::vector<std::pair<const char*, gsq::cli::Action>> actions{
      {"env", gsq::cli::register_env(app)},
      {"doctor", gsq::cli::register_doctor(app)},
      {"bench", gsq::cli::register_bench(app)},
      {"compare", gsq::cli::register_compare(app)},
      {"probe", gsq::cli::register_probe(app)},
      {"analyze", gsq::cli::register_analyze(app)},
      {"diff", gsq::cli::register_diff(app)},
      {"report", gsq::cli::register_report(app)},
      {"trace", gsq::cli::register_trace(app)},
      {"exporter", gsq::cli::register_exporter(app)},
      {"rules", gsq::cli::register_rules(app)},
      {"capture", gsq::cli::register_capture(app)},
      {"kernels", gsq::cli::register_kernels(app)},
      {"occupancy", gsq::cli::register_occupancy(app)},
      {"memory", gsq::cli::register_memory(app)},
      {"jitter", gsq::cli::register_jitter(app)},
      {"trt", gsq::cli::register_trt(app)},
      {"nccl", gsq::cli::register_nccl(app)},
      {"topo", gsq::cli::register_topo(app)},
      {"tune", gsq::cli::register_tune(app)},
      {"coldstart", gsq::cli::register_coldstart(app)},
      {"fleet", gsq::cli::register_fleet(app)},
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return static_cast<int>(gsq::ExitCode::bad_input);
  }
  int rc = static_cast<int>(gsq::ExitCode::bad_input);
  try {
    for (const auto& [name, action] : actions)
      if (app.got_subcommand(name)) rc = action();
  } catch (const gsq::Error& e) {
    std::fprintf(stderr, "gpusqueeze: %s\n", e.what());
    rc = static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpusqueeze: internal error: %s\n", e.what());
    rc = static_cast<int>(gsq::ExitCode::internal);
  }
  // Errors that destructors could not throw (freeing a buffer after a failed launch, say) are said, not lost.
  if (const auto swallowed = gsq::cuda::swallowed_errors(); swallowed.count > 0)
    std::fprintf(stderr, "gpusqueeze: %llu CUDA error(s) while releasing resources; the first: %s\n",
                 static_cast<unsigned long long>(swallowed.count), swallowed.first.c_str());
  if (const auto costs = gsq::gpu::collection_costs(); !costs.empty()) {
    std::fprintf(stderr, "NVML collection cost (GSQ_NVML_PROFILE):\n%-28s %8s %12s %12s\n", "section", "calls",
                 "wall ms/call", "cpu ms/call");
    for (const auto& r : costs)
      std::fprintf(stderr, "%-28s %8llu %12.3f %12.3f\n", r.section.c_str(), static_cast<unsigned long long>(r.calls),
                   static_cast<double>(r.wall_ns) / 1e6 / static_cast<double>(r.calls),
                   static_cast<double>(r.cpu_ns) / 1e6 / static_cast<double>(r.calls));
  }
  return rc;
}
