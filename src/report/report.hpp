// The one-page report: environment, doctor findings, and the sections later steps add; as HTML, markdown and JSON.
#pragma once

#include "core/finding.hpp"
#include "core/table.hpp"
#include "gpu/snapshot.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace gsq::report {

inline constexpr const char* kReportSchema = "gpusqueeze.report/1";

// A section is data (tables, findings, notes); the renderers turn it into markdown and HTML.
struct Section {
  std::string id;     // "environment"
  std::string title;  // "Step 0 — machine: environment"
  std::vector<std::string> notes;
  std::vector<std::pair<std::string, Table>> tables;  // caption, table
  std::vector<Finding> findings;
  std::vector<std::string> figures_svg;  // inline SVG charts (HTML only)
  nlohmann::json data;                   // machine-readable copy for report.json
  int step = 0;          // the method's step this section belongs to (kTriageStep for the field-failure tools)
  std::string headline;  // one line for the step's card: "sync-bound, 66.5% of wall"
  std::string more;      // the command that shows more: "gpusqueeze analyze trace.json"
  // The GPU a file was recorded on when the page's machine has none of that model ("NVIDIA A100-SXM4-80GB"): said in
  // the title and with each of its findings in the verdict, which is otherwise read as the page's machine's.
  std::string recorded_on;
};

// Steps 0-7 of the method, and the field-failure tools as one more card.
inline constexpr int kTriageStep = 8;
[[nodiscard]] std::string_view step_name(int step) noexcept;
// What to run (or pass to `report`) to measure a step the page has nothing for.
[[nodiscard]] std::string_view step_hint(int step) noexcept;

// How a step's card reads: no section (not measured), or the worst finding of its sections.
enum class StepStatus { not_measured, ok, look, fix };
[[nodiscard]] std::string_view to_string(StepStatus s) noexcept;

// A latency CDF as inline SVG: x in µs from min to P99.9, with P50 and P99 marked. Samples need not be sorted.
[[nodiscard]] std::string cdf_svg(const std::string& title, std::vector<double> samples_ns);

// Measured against theoretical, one bar pair per ceiling, as inline SVG (GB/s; percent printed on each bar).
struct Bar {
  std::string label;
  double measured = 0, theoretical = 0;
};
[[nodiscard]] std::string bars_svg(const std::string& title, const std::vector<Bar>& bars);

// A reading over time as inline SVG: x in seconds from the first sample, y from the series' min to max with `unit`.
[[nodiscard]] std::string series_svg(const std::string& title, const std::vector<int64_t>& t_ns,
                                     const std::vector<double>& values, const std::string& unit);

// Several series side by side per group (ours, torch.compile, eager, cudaMemcpy per operator): one bar each, a legend,
// the value at each bar's end, `unit` below.
[[nodiscard]] std::string grouped_bars_svg(const std::string& title, const std::vector<std::string>& series,
                                           const std::vector<std::pair<std::string, std::vector<double>>>& groups,
                                           const std::string& unit);

// Figures over a size sweep (nccl-tests' busbw against message size): x log2 of `bytes`, one line per series with a
// legend, y from 0 to the largest value in `unit`.
[[nodiscard]] std::string sweep_svg(const std::string& title, const std::vector<double>& bytes,
                                    const std::vector<std::pair<std::string, std::vector<double>>>& series,
                                    const std::string& unit);

// One horizontal bar split into labelled parts (a critical path's classes), each with its share, and a legend.
[[nodiscard]] std::string stacked_svg(const std::string& title,
                                      const std::vector<std::pair<std::string, double>>& parts);

// An N×N matrix as coloured cells (P2P bandwidth between GPUs, link types): `values` colour the cells (light = low,
// green = high; negative: no reading), `text` is printed in them, `unit` below ("a; b": one line each).
[[nodiscard]] std::string heatmap_svg(const std::string& title, const std::vector<std::string>& labels,
                                      const std::vector<std::vector<double>>& values,
                                      const std::vector<std::vector<std::string>>& text, const std::string& unit);

// Speed of light of the top kernels (the analyzer's roofline from GPU metrics): x the DRAM bandwidth and y the busiest
// pipe, each a share of its peak, dot size the kernel's share of GPU time; dashed at the 60% roof thresholds.
struct SolPoint {
  std::string label;
  double memory = 0, compute = 0, share = 0;
};
[[nodiscard]] std::string sol_svg(const std::string& title, const std::vector<SolPoint>& points);

struct Report {
  std::string title;
  std::string provenance;    // "live on host X at T" or "replayed from FILE, recorded on ... at ..."
  bool this_machine = true;  // false when the page shows files recorded elsewhere (no GPU here)
  std::vector<Section> sections;
  // Pages that are not about one machine (`fleet`): their own verdict heading, and no cards of the method's steps.
  std::string verdict_title;
  bool method_steps = true;

  // Appends a section, renaming its id ("locate" → "locate-2") when one already has it: ids are the page's anchors
  // and report.json's keys, so two traces must not share one.
  void add(Section s);
};

// The verdict that opens the page: the worst findings of every section, at most `max`, ranked by severity, then by
// the saving they predict (largest first), then in page order. Passing checks never appear; findings of one check in
// one section (the same NIC finding for NIC3 and NIC4) take one line that counts the others.
struct TopFinding {
  Finding finding;
  std::string section_id;
  std::string more;         // the section's command
  int alike = 0;            // further findings of the same check in the same section
  std::string recorded_on;  // the section's: the finding is of a file recorded on that GPU
};
[[nodiscard]] std::vector<TopFinding> top_findings(const Report& r, size_t max = 5);

struct StepCard {
  int step = 0;
  StepStatus status = StepStatus::not_measured;
  std::vector<std::string> headlines;  // one per section of the step
  std::vector<std::string> section_ids;
};
[[nodiscard]] std::vector<StepCard> step_cards(const Report& r);

// How a file the user passed is named on the page: relative to `cwd` when it lies below it, else its file name —
// never an absolute path of the machine that made the report.
[[nodiscard]] std::string display_name(const std::filesystem::path& file,
                                       const std::filesystem::path& cwd = std::filesystem::current_path());

[[nodiscard]] Section environment_section(const gpu::Snapshot& s, const std::string& fingerprint);
[[nodiscard]] Section doctor_section(const std::vector<Finding>& findings);

// Sections of later steps; each takes data already computed (a bench run, an analysis) and only lays it out.
[[nodiscard]] Section bench_section(const std::string& title_suffix, const std::vector<std::string>& header,
                                    const std::vector<std::vector<std::string>>& rows,
                                    const std::vector<std::string>& notes, nlohmann::json data);
[[nodiscard]] Section analysis_section(const std::string& origin, const std::string& verdict_line,
                                       const Table& breakdown, const Table& kernels,
                                       const std::vector<Finding>& findings, nlohmann::json data);

[[nodiscard]] std::string render_markdown(const Report& r);
[[nodiscard]] std::string render_html(const Report& r);  // self-contained: inline CSS, no scripts, no external URLs
[[nodiscard]] nlohmann::json render_json(const Report& r);

// Writes index.html, report.md and report.json into `dir` (created if missing).
void write_report(const Report& r, const std::filesystem::path& dir);

// What changed since an earlier report of this machine (its report.json, `old`) in the report about to be written
// (`now`, render_json's output): fingerprint drift, steps whose status or headline moved, findings gained and lost
// (matched by section kind, check and subject). Throws bad_input when `old` is not a gpusqueeze.report/1 document.
[[nodiscard]] Section compare_section(const nlohmann::json& old, const nlohmann::json& now, const std::string& origin);

// Rows of the findings table, shared by the CLI's doctor printer and the report.
[[nodiscard]] Table findings_table(const std::vector<Finding>& findings);

}  // namespace gsq::report
