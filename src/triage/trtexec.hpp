// TensorRT build and run audit from what users already have, no GPU needed: trtexec logs (each `&&&& RUNNING` run:
// the command, version, device, build options, memory pools, precision, optimization profiles, shapes trtexec chose by
// itself, workspace shortfalls the builder reported, the performance summary and its warnings), `--exportProfile` and
// `--exportLayerInfo` JSON. Findings say what the files show and the fix; claims of folklore are answered in `--help`.
#pragma once

#include "core/finding.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gsq::triage {

inline constexpr const char* kTrtSchema = "gpusqueeze.trt-audit/1";

struct TrtProfileShape {
  int profile = 0;
  std::string input;
  std::vector<std::vector<int64_t>> min_opt_max;  // three shapes
};

struct TrtRun {
  std::string command;  // the trtexec command line as the log's banner prints it
  std::string result;   // "PASSED", "FAILED" or "" when the log ends first
  std::string trt_version, device, precision;
  std::map<std::string, std::string> options;  // "key: value" lines of the === ... Options === blocks
  std::optional<double> workspace_mib;         // Memory Pools: workspace (nullopt: "default")
  std::vector<TrtProfileShape> profiles;
  std::vector<std::pair<std::string, std::string>> auto_shapes;  // input, the shape trtexec chose (no shapes given)
  uint64_t workspace_needed_bytes = 0;  // the largest "Need N" of "Exceeded mem budget" lines (bytes), 0 if none
  uint64_t workspace_shortfalls = 0;
  std::optional<double> throughput_qps, gpu_compute_median_ms, enqueue_median_ms, compute_cov_percent;
  bool enqueue_bound = false;  // trtexec's own "Throughput may be bound by Enqueue Time" warning
  size_t lines = 0, recognized = 0;
  // The lines not read, by why: "verbose" ([V]), "tensorrt" (the library's own [TRT] messages), "per-iteration"
  // (trace details and timing lines), "other" — with the first few of "other" kept, so nothing is skipped unseen.
  std::map<std::string, size_t> skipped;
  std::vector<std::string> other_samples;
  [[nodiscard]] bool has_flag(const std::string& flag) const;  // "--useCudaGraph" or "--fp16" on the command line
  [[nodiscard]] bool builds() const;                           // builds an engine (from ONNX), not only loads one
};

// Splits a log into runs. Throws Error(bad_input) when it holds no trtexec run at all, or — unless `partial` — when
// the last run has no PASSED/FAILED line (the log was cut, or trtexec died).
[[nodiscard]] std::vector<TrtRun> parse_trtexec_log(const std::string& text, const std::string& origin,
                                                    bool partial = false);

struct TrtLayerTime {
  std::string name;
  double median_ms = 0, percentage = 0;
};
// --exportProfile JSON: [{"count": N}, {"name", "timeMs", "averageMs", "medianMs", "percentage"}, ...].
[[nodiscard]] std::vector<TrtLayerTime> parse_trt_profile(const nlohmann::json& j, const std::string& origin);

struct TrtLayerInfo {
  std::string name, type, tactic;
  std::vector<std::string> output_types;  // "Float", "Half", "Int8", ... (detailed verbosity only)
};
// --exportLayerInfo JSON: {"Layers": [names] or [{Name, LayerType, Outputs[{Format/Datatype}], TacticName}], ...}.
[[nodiscard]] std::vector<TrtLayerInfo> parse_trt_layers(const nlohmann::json& j, const std::string& origin);

struct TrtAudit {
  std::vector<TrtRun> runs;
  std::vector<TrtLayerTime> layer_times;  // largest share first
  std::vector<TrtLayerInfo> layers;
  double reformat_share = 0;  // of the profiled time, in reformatting layers
  std::vector<Finding> findings;
};

// `observed` shapes ("x:8x1x28x28") are checked against every build's optimization profiles.
[[nodiscard]] TrtAudit audit_trt(std::vector<TrtRun> runs, std::vector<TrtLayerTime> times,
                                 std::vector<TrtLayerInfo> layers, const std::vector<std::string>& observed);
[[nodiscard]] nlohmann::json to_json(const TrtAudit& a);

}  // namespace gsq::triage
