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
};

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

struct Report {
  std::string title;
  std::string provenance;  // "live on host X at T" or "replayed from FILE, recorded on ... at ..."
  std::vector<Section> sections;
};

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

// Rows of the findings table, shared by the CLI's doctor printer and the report.
[[nodiscard]] Table findings_table(const std::vector<Finding>& findings);

}  // namespace gsq::report
