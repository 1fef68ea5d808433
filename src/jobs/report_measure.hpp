// What `report` measures itself on a live GPU.
#pragma once

#include "bench/runner.hpp"
#include "jobs/progress.hpp"
#include "topo/multigpu_probe.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gsq::jobs {

struct LiveMeasurements {
  std::vector<bench::Run> runs;    // probe mem, probe pcie, bench core (launch, GEMM), kernels at one shape
  std::vector<std::string> notes;  // what did not run, and why
  std::optional<std::filesystem::path> clocks;  // the GPUs' clocks, temperature and power over all of it (.gsqt)
  std::optional<topo::P2pResult> p2p;           // several GPUs: copy bandwidth between every pair (short)
};

// Short runs of the method's measurements within `budget_s` seconds, in order of what the page needs most, with each of
// the `gpus` GPUs (the snapshot's count) sampled throughout into `clocks_file` (what `jitter` reads).
// `idle_at_start`: the snapshot read the GPU's utilisation at most 10% before the report's own load, so what NVML
// reads during the measurements is the report's own work and only other processes refuse a section.
[[nodiscard]] LiveMeasurements measure_live(double budget_s, size_t gpus, const std::filesystem::path& clocks_file,
                                            bool idle_at_start, const Progress& note);

}  // namespace gsq::jobs
