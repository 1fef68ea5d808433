// The one shape of a finding, used by doctor, the analyzer and the rules: id, severity, evidence, fix, seed step.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gsq {

enum class Severity { pass, info, warn, fail };

[[nodiscard]] std::string_view to_string(Severity s) noexcept;
[[nodiscard]] Severity severity_from_string(std::string_view s);  // throws bad_input

struct Evidence {
  std::string name;   // "pcie_width_current"
  std::string value;  // "8"  (formatted with its unit where it has one)
};

struct Finding {
  std::string id;  // stable, kebab-case: "pcie-link-width"
  Severity severity = Severity::pass;
  std::string title;  // one line a person reads first
  std::vector<Evidence> evidence;
  std::optional<double> saving_ratio;  // upper bound of what fixing it would save, where one exists
  std::string fix;                     // what to do; empty for pass
  std::string source;                  // where the threshold comes from
  int step = 0;                        // seed step of the method (0 machine, 1 baseline, ...)
  std::string subject;                 // what it is about: "GPU 0 (NVIDIA H200)", "host"
};

// A finding with every field given: what the checkers of each tool build (they pass their own source and step).
[[nodiscard]] Finding make_finding(std::string id, Severity severity, std::string title, std::vector<Evidence> evidence,
                                   std::string fix, std::string source, int step, std::string subject);

void to_json(nlohmann::json& j, const Finding& f);
void from_json(const nlohmann::json& j, Finding& f);

[[nodiscard]] Severity worst(const std::vector<Finding>& findings) noexcept;

// The order one tool's findings are read in: severity, then the saving each predicts — except that a finding naming a
// cause that is part of a broader one (an unfused optimizer and per-step syncs are launch and sync overhead that
// "launch-bound" counts too) comes just before the broader one when it holds at least a third of its saving: its fix
// is a line of code, the broader one's (CUDA graphs, torch.compile) a project, and it is what users fix first. The
// third is from the real-model corpus (bench/results/2026-12-06-h100-realmodels: fused AdamW on BERT; and the
// held-out 2026-12-06-h200-realmodels-heldout: fused AdamW on GPT-2, loss.item() on MobileNetV2), where the measured
// fix was the specific one at 0.48–0.96 of the broader finding's saving.
// rank_keys() gives each finding its key (larger first, within a severity); rank_findings() sorts by it, stably.
[[nodiscard]] std::vector<double> rank_keys(const std::vector<Finding>& findings);
void rank_findings(std::vector<Finding>& findings);

}  // namespace gsq
