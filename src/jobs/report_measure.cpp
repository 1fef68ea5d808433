// `report` on a live GPU measures what it can within --budget seconds, with the bench harness's protocol (short
// settings): the HBM read and copy ceilings and the PCIe ceilings, pinned and pageable, at one size each (step 3); the
// launch cost with and without CUDA graphs and a 4096³ bf16 cuBLAS GEMM (bench core, step 1); one tuned kernel at one
// shape against cudaMemcpy (step 4); with several GPUs, P2P copies between every pair (step 5) — while every GPU's
// clock, temperature and power are sampled for the jitter section. Each part that does not run says why on the page.
#include "jobs/report_measure.hpp"

#include "bench/benchmark.hpp"
#include "bench/runner.hpp"
#include "core/error.hpp"
#include "gpu/counters.hpp"
#include "probes/kernel_suites.hpp"
#include "probes/suites.hpp"
#include "triage/jitter.hpp"

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <thread>

namespace gsq::jobs {

namespace {

struct Part {
  const char* name;     // the suite
  const char* command;  // what to run for the full measurement
  bench::Suite (*suite)();
  const char* filter;
  std::map<std::string, std::vector<std::string>> overrides;
};

std::vector<Part> parts() {
  return {
      {"mem",
       "gpusqueeze probe mem",
       probes::mem_suite,
       "^mem\\.(read|copy|memcpy_d2d)$",
       {{"bytes", {"1Gi"}}, {"width", {"16"}}, {"variant", {"flat"}}}},
      {"pcie",
       "gpusqueeze probe pcie",
       probes::pcie_suite,
       "^pcie\\.(h2d|d2h)$",
       {{"bytes", {"64Mi"}}, {"memory", {"pinned", "pageable"}}}},
      {"core", "gpusqueeze bench core", bench::core_suite, "^(launch\\.empty|gemm\\.cublas)$", {{"mnk", {"4096"}}}},
      {"kernels",
       "gpusqueeze kernels",
       probes::kernels_suite,
       "^kernels\\.(rms_norm|memcpy_d2d)$",
       {{"cols", {"4096"}}, {"impl", {"ours"}}}},
  };
}

}  // namespace

LiveMeasurements measure_live(double budget_s, size_t gpus, const std::filesystem::path& clocks_file,
                              bool idle_at_start, const Progress& note) {
  LiveMeasurements out;
  std::vector<std::unique_ptr<gpu::CounterSampler>> samplers;
  try {  // the GPUs the caller's snapshot counted; each sampler opens NVML itself
    for (size_t i = 0; i < gpus; ++i)
      samplers.push_back(std::make_unique<gpu::CounterSampler>(static_cast<uint32_t>(i), 100));
  } catch (const Error& e) {
    out.notes.push_back(fmt::format("clocks not sampled over the run: {}", e.what()));
  }
  const int64_t start_mono = gpu::monotonic_ns();
  const auto start_real = std::chrono::system_clock::now().time_since_epoch();
  const auto start = std::chrono::steady_clock::now();
  for (const auto& p : parts()) {
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (spent > budget_s) {
      out.notes.push_back(fmt::format("{} not run: the {:.0f} s budget was spent (--budget)", p.command, budget_s));
      continue;
    }
    bench::RunOptions o;
    o.filter = p.filter;
    o.overrides = p.overrides;
    o.settings.min_seconds = 0.1;
    o.settings.max_seconds = 0.4;
    o.settings.min_samples = 10;
    o.progress = [&](const std::string& line) { note("report: " + line); };
    o.own_utilization = idle_at_start || !out.runs.empty();  // the utilisation NVML reads is then ours
    note(fmt::format("report: measuring {} (a short run; `{}` for the full sweep)…", p.name, p.command));
    for (int attempt = 0; attempt < 2; ++attempt) {
      try {
        out.runs.push_back(bench::run_suite(p.name, p.suite(), o));
        break;
      } catch (const Error& e) {
        // NVML's utilisation lags a process that just ended: wait once before calling the GPU busy.
        if (attempt == 0 && std::string(e.what()).find("busy") != std::string::npos) {
          note("report: the GPU reads busy; waiting 3 s once before deciding");
          std::this_thread::sleep_for(std::chrono::seconds(3));
          continue;
        }
        out.notes.push_back(fmt::format("{} could not run: {}", p.command, e.what()));
        break;
      }
    }
  }
  if (gpus > 1) {  // step 5: every pair of GPUs, short (64 MiB, 3 trials)
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (spent > budget_s) {
      out.notes.push_back(fmt::format("gpusqueeze probe p2p not run: the {:.0f} s budget was spent", budget_s));
    } else {
      note(
          fmt::format("report: measuring P2P copies between {} GPUs (`gpusqueeze probe p2p` for the full run)…", gpus));
      try {
        topo::P2pOptions po;
        po.bytes = 64ull << 20;
        po.reps = 4;
        po.trials = 3;
        out.p2p = topo::probe_p2p(po);
      } catch (const Error& e) {
        out.notes.push_back(fmt::format("gpusqueeze probe p2p could not run: {}", e.what()));
      }
    }
  }
  if (!samplers.empty()) {
    std::vector<nlohmann::json> payloads;
    for (auto& s : samplers) payloads.push_back(s->finish());
    try {
      triage::write_jitter_trace(clocks_file, "gpusqueeze report (its own measurements)", start_mono,
                                 std::chrono::duration_cast<std::chrono::nanoseconds>(start_real).count(), 0, payloads);
      out.clocks = clocks_file;
    } catch (const Error& e) {
      out.notes.push_back(fmt::format("clocks over the run not kept: {}", e.what()));
    }
  }
  return out;
}

}  // namespace gsq::jobs
