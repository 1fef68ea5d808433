// `report` on a live GPU measures what it can within --budget seconds: the HBM read and copy ceilings and the PCIe
// ceilings, pinned and pageable, at one size each, with the bench harness's protocol (short settings). Each part that
// does not run says why on the page.
#include "cli/report_measure.hpp"

#include "cli/common.hpp"

#include "bench/benchmark.hpp"
#include "bench/runner.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

#include <chrono>
#include <thread>

namespace gsq::cli {

std::vector<bench::Run> measure_live(double budget_s, std::vector<std::string>& notes) {
  struct Part {
    const char* name;
    bench::Suite (*suite)();
    const char* filter;
    std::map<std::string, std::vector<std::string>> overrides;
  };
  const std::vector<Part> parts{
      {"mem",
       bench::mem_suite,
       "^mem\\.(read|copy|memcpy_d2d)$",
       {{"bytes", {"1Gi"}}, {"width", {"16"}}, {"variant", {"flat"}}}},
      {"pcie", bench::pcie_suite, "^pcie\\.(h2d|d2h)$", {{"bytes", {"64Mi"}}, {"memory", {"pinned", "pageable"}}}},
  };
  std::vector<bench::Run> runs;
  const auto start = std::chrono::steady_clock::now();
  for (const auto& p : parts) {
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (spent > budget_s) {
      notes.push_back(fmt::format("probe {} not run: the {:.0f} s budget was spent (--budget)", p.name, budget_s));
      continue;
    }
    bench::RunOptions o;
    o.filter = p.filter;
    o.overrides = p.overrides;
    o.settings.min_seconds = 0.1;
    o.settings.max_seconds = 0.4;
    o.settings.min_samples = 10;
    o.progress = [&](const std::string& line) { note("report: " + line); };
    note(fmt::format("report: measuring probe {} (a short run; `gpusqueeze probe {}` for the full sweep)…", p.name,
                     p.name));
    for (int attempt = 0; attempt < 2; ++attempt) {
      try {
        runs.push_back(bench::run_suite(p.name, p.suite(), o));
        break;
      } catch (const Error& e) {
        // NVML's utilisation lags a process that just ended: wait once before calling the GPU busy.
        if (attempt == 0 && std::string(e.what()).find("busy") != std::string::npos) {
          note("report: the GPU reads busy; waiting 3 s once before deciding");
          std::this_thread::sleep_for(std::chrono::seconds(3));
          continue;
        }
        notes.push_back(fmt::format("probe {} could not run: {}", p.name, e.what()));
        break;
      }
    }
  }
  return runs;
}

}  // namespace gsq::cli
