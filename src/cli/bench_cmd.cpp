// `gpusqueeze bench SUITE` and the harness's run, shared with `probe` and `kernels` (cli/bench_run.hpp).
#include "cli/bench_run.hpp"
#include "cli/common.hpp"

#include "bench/runner.hpp"
#include "core/error.hpp"
#include "core/json_io.hpp"
#include "core/table.hpp"
#include "probes/host_probes.hpp"
#include "probes/kernel_suites.hpp"
#include "probes/suites.hpp"

#include "cuda/check.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <iostream>
#include <sstream>

namespace gsq::cli {

namespace {

std::map<std::string, std::vector<std::string>> parse_overrides(const std::vector<std::string>& items) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      throw_bad_input(fmt::format("-a {}: expected NAME=VALUE[,VALUE...]", item));
    }
    std::vector<std::string> values;
    std::string rest = item.substr(eq + 1);
    for (size_t pos = 0; pos <= rest.size();) {
      const auto comma = rest.find(',', pos);
      const std::string v = rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      if (v.empty()) throw_bad_input(fmt::format("-a {}: empty value", item));
      values.push_back(v);
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    out[item.substr(0, eq)] = std::move(values);
  }
  return out;
}

}  // namespace

bench::Suite suite_named(const std::string& name) {
  if (name == "core") return bench::core_suite();
  if (name == "mem") return probes::mem_suite();
  if (name == "pcie") return probes::pcie_suite();
  if (name == "l2") return probes::l2_suite();
  if (name == "overlap") return probes::overlap_suite();
  if (name == "kernels") return probes::kernels_suite();
  if (name == "quant") return probes::quant_suite();
  throw_bad_input(fmt::format("unknown suite '{}' (available: core, mem, pcie, l2, overlap, kernels, quant)", name));
}

int run_bench(BenchOptions& o) {
  const bench::Suite suite = suite_named(o.suite);
  if (o.list) {
    for (const auto& b : suite) {
      std::string axes;
      for (const auto& a : b.axes) {
        std::string vals;
        for (const auto& v : a.values) vals += (vals.empty() ? "" : ",") + v;
        axes += fmt::format(" -a {}={}", a.name, vals);
      }
      std::cout << fmt::format("{:<18} {}\n{:<18}{}\n", b.name, b.description, "", axes);
    }
    return 0;
  }
  o.run.settings.cold = o.mode == "cold" || o.mode == "both" || o.mode == "all";
  o.run.settings.batch = o.mode == "batch" || o.mode == "both" || o.mode == "all";
  o.run.settings.host = o.mode == "host" || o.mode == "all";
  o.run.overrides = parse_overrides(o.axis_overrides);
  o.run.progress = [](const std::string& s) { note(s); };
  const bench::Run run = bench::run_suite(o.suite, suite, o.run);
  if (!o.output.empty()) {
    write_json_file(o.output, bench::to_json(run, !o.no_samples));
    note("wrote " + o.output);
  }
  if (o.format == "json")
    std::cout << bench::to_json(run, !o.no_samples).dump(2) << '\n';
  else if (o.format == "csv")
    std::cout << bench::render_csv(run);
  else
    std::cout << bench::render_markdown(run) << '\n' << bench::ceilings_table(run).markdown();
  // What the probe's sweep says, in one line each (stderr when the table went to stdout as data).
  std::ostream& say = o.format == "md" ? std::cout : std::cerr;
  if (const auto t = probes::l2_transition(run)) {
    say << fmt::format(
        "\nL2 → HBM: reads run at up to {:.0f} GB/s while the data fits the L2 (up to {} MiB, above halfway to "
        "HBM's rate), and fall to {:.0f} GB/s ({}); the L2 is {} MiB.\n",
        t->l2_bytes_per_s / 1e9, t->last_l2_size >> 20, t->hbm_bytes_per_s / 1e9,
        t->first_hbm_size ? fmt::format("from {} MiB", t->first_hbm_size >> 20) : std::string("at the largest size"),
        run.l2_cache_bytes >> 20);
  }
  if (o.suite == "kernels")
    say << "\nEach kernel against cudaMemcpy D2D and the naive version, same run (cold mode: L2 flushed):\n"
        << probes::copy_ratio_table(run).markdown();
  if (o.suite == "quant")
    say << "\nWeight-only GEMM against cuBLAS fp16, same run (cold: L2 flushed, weights rotated; × copy = bytes moved "
           "per second / cudaMemcpy D2D):\n"
        << probes::quant_table(run).markdown();
  for (const auto& [memory, speedup] : probes::overlap_speedups(run))
    say << fmt::format(
        "overlap, {} host memory: serial / three streams = {:.2f}×{}\n", memory, speedup,
        memory == "pageable"
            ? " (pageable copies are staged through the driver's pinned buffer and block the host, so they "
              "barely overlap)"
            : "");
  return 0;
}

int run_host_costs(const std::string& group, const BenchOptions& o, int samples, bool json) {
  const auto costs = probes::measure_host_costs(group, o.run.device, samples, [](const std::string& s) { note(s); });
  cudaDeviceProp prop{};
  GSQ_CUDA_CHECK(cudaGetDeviceProperties(&prop, o.run.device));
  const auto j = probes::host_costs_json(costs, prop.name);
  if (!o.output.empty()) {
    write_json_file(o.output, j);
    note("wrote " + o.output);
  }
  if (json)
    std::cout << j.dump(2) << '\n';
  else
    std::cout << probes::host_costs_table(costs).markdown();
  return 0;
}

void add_run_options(CLI::App* cmd, BenchOptions& o) {
  cmd->add_option("-b,--benchmark", o.run.filter, "Only benchmarks whose name matches this regex");
  cmd->add_option("-a,--axis", o.axis_overrides, "Override an axis: NAME=V1[,V2...] (sizes take Ki/Mi/Gi)");
  cmd->add_option("--max-seconds", o.run.settings.max_seconds, "Time limit per mode and configuration")
      ->check(CLI::Range(0.01, 3600.0))
      ->capture_default_str();
  cmd->add_option("--device", o.run.device, "CUDA device ordinal")->capture_default_str();
  cmd->add_flag("--interleave", o.run.settings.interleave,
                "Configurations take turns sample by sample instead of running one after the other (all are set up "
                "at once): drift in clocks or temperature then reaches each alike, for ratios between them");
  cmd->add_flag("--allow-busy", o.run.allow_busy,
                "Run even if other processes use the GPU (the result says so on stderr)");
  cmd->add_option("-o,--output", o.output, "Write the gpusqueeze.bench/1 JSON (raw samples included) to FILE");
  auto* format = cmd->add_option("--format", o.format, "What to print: md, csv or json")
                     ->check(CLI::IsMember({"md", "csv", "json"}))
                     ->capture_default_str();
  // Every other command says --json: the same word here.
  cmd->add_flag_callback(
         "--json", [&o] { o.format = "json"; }, "Print JSON (the same as --format json)")
      ->excludes(format);
}

Action register_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  auto* cmd =
      app.add_subcommand("bench", "Time a benchmark suite with CUDA events: P50/P90/P99 with confidence intervals");
  cmd->footer(
      "Timing protocol: warmup (10 launches and 50 ms) kept out of the results; then two modes per configuration:\n"
      "  cold   L2 flushed before each sample (by reading twice its size, which leaves no dirty lines to write back\n"
      "         during the timed call) and the launch queued behind a blocking kernel, so neither cached data nor CPU\n"
      "         launch cost is timed: the latency of one call;\n"
      "  batch  up to 256 launches queued behind the blocking kernel, then released (each sample about 2 ms): what\n"
      "         back-to-back calls cost the GPU, free of host jitter;\n"
      "  host   launches back to back as fast as this thread issues them: includes the CPU launch cost, so it moves\n"
      "         with the host (launch.empty always adds it; --mode host|all for the others).\n"
      "Each mode stops when the 95% CI of the median is within ±0.5% (--target-ci) after at least --min-seconds, or "
      "at\n"
      "--max-seconds. The launching thread is pinned to one CPU near the GPU (--no-pin to keep it free). The SM clock "
      "is\n"
      "read from NVML with every sample while the GPU is busy (cold: during the blocking kernel; batch: during the\n"
      "batch); samples with a slowdown reason or a clock below 95% of the run's highest are\n"
      "flagged and left out unless --keep-throttled (or unless more than half are flagged).\n"
      "Sample sets: default; stress (>= 1000 samples, for P99); boundary (each axis's smallest and largest value);\n"
      "warmup (the first 10 calls, no warmup: module loading and first-touch costs).\n"
      "Examples:\n"
      "  gpusqueeze bench core -o base.json\n"
      "  gpusqueeze bench core -b copy -a bytes=256Mi,2Gi --set stress\n"
      "  gpusqueeze compare base.json new.json");
  cmd->add_option("suite", o->suite, "Suite to run: core, mem, pcie, l2, overlap, kernels")->capture_default_str();
  add_run_options(cmd, *o);
  cmd->add_option("--suite", o->suite, "kernels (norms, softmax, layout) or quant (W4A16/W8A16 vs cuBLAS fp16)")
      ->check(CLI::IsMember({"kernels", "quant"}))
      ->capture_default_str();
  cmd->add_flag("--list", o->list, "List the suite's benchmarks and axes, then exit");
  cmd->add_option("--set", o->run.set, "Sample set: default, stress, boundary, warmup")
      ->check(CLI::IsMember({"default", "stress", "boundary", "warmup"}))
      ->capture_default_str();
  cmd->add_option("--mode", o->mode, "Timing modes: cold, batch, host, both (cold+batch) or all")
      ->check(CLI::IsMember({"cold", "batch", "host", "both", "all"}))
      ->capture_default_str();
  cmd->add_option("--min-samples", o->run.settings.min_samples, "Samples before the stopping rule may stop")
      ->check(CLI::Range(5u, 10000000u))
      ->capture_default_str();
  cmd->add_option("--max-samples", o->run.settings.max_samples, "Hard cap on samples per mode")
      ->check(CLI::Range(5u, 10000000u))
      ->capture_default_str();
  cmd->add_option("--min-seconds", o->run.settings.min_seconds, "Measure each mode at least this long")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--target-ci", o->run.settings.target_rel_ci, "Relative half-width of the median's 95% CI to stop at")
      ->check(CLI::Range(0.0001, 0.5))
      ->capture_default_str();
  cmd->add_option("--warmup", o->run.settings.warmup_launches, "Warmup launches (at least 50 ms of warmup also runs)")
      ->capture_default_str();
  cmd->add_flag("!--no-pin", o->run.settings.pin_cpu, "Do not pin the launching thread to a CPU near the GPU");
  cmd->add_flag("--keep-throttled", o->run.settings.keep_throttled, "Keep throttle-flagged samples in the statistics");
  cmd->add_flag("--no-samples", o->no_samples, "Leave raw samples out of the JSON (compare needs them)");
  return [o]() { return run_bench(*o); };
}

}  // namespace gsq::cli
