// Compile cold start: what each phase of a PyTorch program cost in a fresh process (eager, cold compile, warm with
// the local caches, warm from a portable Mega-Cache artifact), read from the phase files the in-process harness
// (python/gpusqueeze/coldstart.py) writes, turned into the saving each cache buys and findings; and the checks around
// the caches: a bundle's manifest against this machine, cache folders on NFS or shared between users.
#pragma once

#include "core/finding.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gsq::triage {

inline constexpr const char* kColdstartSchema = "gpusqueeze.coldstart/1";
inline constexpr const char* kColdstartPhaseSchema = "gpusqueeze.coldstart-phase/1";
inline constexpr const char* kColdstartBundleSchema = "gpusqueeze.coldstart-bundle/1";

struct Phase {
  std::string name;           // eager, cold, warm-local, warm-portable
  double process_s = 0;       // spawn to exit, measured by the CLI
  double first_result_s = 0;  // harness start to the program's first result (import torch included)
  double import_torch_s = 0;
  std::optional<double> compile_s;            // Dynamo's compile time (absent for eager)
  std::map<std::string, long long> counters;  // "inductor.fxgraph_cache_hit", "aot_autograd.autograd_cache_miss", ...
  std::map<std::string, std::string> environment;  // torch, triton, cuda, device, compute_capability, python
  long long artifact_saved_bytes = 0, artifact_loaded_bytes = 0;
  int exit_code = 0;
};

// One phase file of the harness. Throws Error(bad_input) naming the file and the field.
[[nodiscard]] Phase read_phase(const nlohmann::json& j, const std::string& origin);

struct ColdstartReport {
  std::string program;  // what ran: "--module (built-in model)" or the script
  std::vector<Phase> phases;
  std::vector<std::string> notes;  // cache folders, bundle used
  std::vector<Finding> findings;
};

// Savings and findings from the phases that ran (any subset; the order eager, cold, warm-local, warm-portable).
[[nodiscard]] ColdstartReport analyze_coldstart(std::string program, std::vector<Phase> phases);
[[nodiscard]] nlohmann::json to_json(const ColdstartReport& r);

// Why a bundle made on one machine cannot serve this one (PyTorch, Triton or CUDA version, GPU, compute capability):
// one line per difference, empty when it fits. `bundle` is the bundle file's JSON, `here` the harness's probe.
[[nodiscard]] std::vector<std::string> bundle_mismatches(const nlohmann::json& bundle,
                                                         const std::map<std::string, std::string>& here);

// Warnings about a cache folder: on NFS (concurrent compiles corrupt or lose entries there), writable by other users.
[[nodiscard]] std::vector<Finding> cache_folder_findings(const std::filesystem::path& dir);

}  // namespace gsq::triage
