// `gpusqueeze fleet`: which GPUs of a fleet stand apart from their peers, and why. The data comes from where fleets
// already keep it — a Prometheus (or any PromQL endpoint) scraping `gpusqueeze exporter` on every node, or a folder of
// report.json files written per job — and is judged per group of GPUs of one model with robust statistics.
#pragma once

#include "core/finding.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gsq::fleet {

inline constexpr const char* kFleetSchema = "gpusqueeze.fleet/1";

// One GPU as the fleet's data shows it. `config` holds the settings that should be equal across a group (driver,
// power limit, PCIe link, MIG, …) as text; `signals` the measured values that vary (clock under load, throttle time,
// measured bandwidths) and the health counters.
struct Gpu {
  std::string node;   // hostname
  std::string index;  // the GPU's index on its node
  std::string uuid;
  std::string model;   // "NVIDIA H100 80GB HBM3": the group
  std::string origin;  // "prometheus" or the report.json it was read from
  std::map<std::string, std::string, std::less<>> config;
  std::map<std::string, double, std::less<>> signals;
};

// What the fleet's data source said besides the GPUs: queries that failed or returned nothing, files refused.
struct Collection {
  std::vector<Gpu> gpus;
  std::vector<std::string> notes;
  std::string source;  // "http://prom:9090 (window 1h)" or "reports/ (37 report.json files)"
};

// --- sources ------------------------------------------------------------------------------------------------------

// A PromQL duration ("30m", "6h", "2d") in seconds; Error(bad_input) naming --since otherwise.
[[nodiscard]] double duration_seconds(const std::string& duration);

struct PromOptions {
  std::string url;            // "http://prometheus:9090", a path prefix allowed ("http://thanos/query")
  std::string window = "1h";  // PromQL duration: the lookback of every query (`--since`)
  std::string selector;       // extra label matchers for every series ('cluster="a"'), empty for all
  double timeout_s = 30;      // per query
};
// Asks the PromQL endpoint for every GPU's configuration and signals over the window. Throws Error(bad_input) on a
// malformed URL or window; an unreachable endpoint or an error answer is Error(bad_input) naming the query and the
// answer.
[[nodiscard]] Collection collect_prometheus(const PromOptions& o);
// The queries collect_prometheus() sends, in order (for --help, the docs and the tests).
[[nodiscard]] std::vector<std::pair<std::string, std::string>> prometheus_queries(const PromOptions& o);
// The answers of prometheus_queries() (JSON bodies of /api/v1/query, in the same order) folded into GPUs.
[[nodiscard]] Collection gpus_from_prometheus(const std::vector<std::pair<std::string, std::string>>& queries,
                                              const std::vector<std::string>& bodies);

// Every report.json under `dir` (recursively: DIR/HOST/JOB-STAGE/report.json as deploy/slurm writes them), the newest
// per GPU, optionally only those written after `since` (seconds before now). Files that are not a gpusqueeze report
// are skipped with a note; a missing folder or one with no report is Error(bad_input).
[[nodiscard]] Collection collect_reports(const std::filesystem::path& dir, std::optional<double> since_s);
// One report.json's GPUs (its environment snapshot, and the ceilings its bench sections measured on GPU `gpu`).
[[nodiscard]] std::vector<Gpu> gpus_from_report(const nlohmann::json& report, const std::string& origin);

// --- judgement ----------------------------------------------------------------------------------------------------

// How a GPU differs from its group in one field.
struct Difference {
  std::string field;               // "power_limit_w"
  std::string label;               // "power limit"
  std::string kind;                // "config", "health", "signal"
  std::string value;               // this GPU's, with its unit
  std::string group_value;         // the group's (majority or median), with its unit
  std::optional<double> robust_z;  // signals: (value − median) / (1.4826 · MAD), floored
  std::string fix;
};

struct Outlier {
  std::vector<size_t> gpus;  // indices into Collection::gpus: one GPU, or every GPU of a node that differs alike
  std::string group;
  Severity severity = Severity::warn;  // fail: a health counter (XID, uncorrectable ECC, pending remap)
  std::vector<Difference> differences;
};

struct Group {
  std::string model;
  std::vector<size_t> gpus;
  std::map<std::string, std::string, std::less<>> config;  // the majority value of each config field
  std::map<std::string, double, std::less<>> median;       // of each signal
  std::vector<std::string> notes;                          // splits (no majority), too few GPUs to judge
};

struct Options {
  size_t min_group = 3;  // groups smaller than this are listed, not judged
};

struct Result {
  std::string source;
  std::vector<Gpu> gpus;
  std::vector<Group> groups;
  std::vector<Outlier> outliers;   // config drift, a health event, or at least kMinSignals signals agreeing
  std::vector<Outlier> watch;      // a single signal apart: listed, not counted as an outlier
  std::vector<std::string> notes;  // the source's and the judgement's
};

// Rules of the judgement (docs/commands.md, "fleet"), each from the literature named beside it:
//   - a config field differs when the group's majority value holds at least kMajority of the GPUs reporting it;
//   - a signal is apart when its robust z (Iglewicz & Hoaglin's modified z-score) passes kZ in the field's bad
//     direction, the scale floored per field so that identical peers do not make every small difference infinite;
//   - a GPU with signals of one cause apart is watched; kMinSignals causes agreeing make it an outlier (one noisy
//     metric among thousands of GPUs passes 3.5 by chance; two independent ones rarely do). The clock, the time at the
//     power cap and the time slowed for heat are one cause (a capped or slowed sample is a lower clock); so are
//     clocks and temperature where the GPU was not slowed for heat (a heavier job than its peers' runs at the power
//     cap, slower and hotter: the workload, not the GPU);
//   - signals read under load count only with kMinLoadSamples points under load in the window (PromQL: the
//     subquery's points, a 240th of the window each, so a 24th of the window under load: 2.5 minutes of an hour;
//     reports: doctor's load samples, 10 Hz). One or two samples decided false
//     outliers on a synthetic fleet with short jobs (bench/results/2026-12-07-cpu-fleet-scale, "Short jobs").
inline constexpr double kMajority = 2.0 / 3.0;
inline constexpr double kZ = 3.5;
inline constexpr size_t kMinSignals = 2;
inline constexpr double kMinLoadSamples = 10;
// A GPU whose series stopped this long before its node's exporter's last report has gone from the node: two minutes
// is several scrapes at any usual interval (15–60 s).
inline constexpr double kMissingAfterS = 120;

[[nodiscard]] Result judge(Collection c, const Options& o = {});
// GPUs named by the outliers (an outlier line may hold every GPU of a node).
[[nodiscard]] size_t outlier_gpus(const Result& r);

[[nodiscard]] nlohmann::json to_json(const Result& r);
// The findings a report page shows: one per outlier (warn, fail for health) and per watched GPU (info).
[[nodiscard]] std::vector<Finding> findings(const Result& r);
// "node-7 GPU 3" or "node-7 (GPUs 0–7)"
[[nodiscard]] std::string subject(const Result& r, const Outlier& o);

}  // namespace gsq::fleet
