// `gpusqueeze fleet --prometheus URL | --reports DIR`: which GPUs of a fleet stand apart from their peers, and why.
#include "cli/common.hpp"

#include "core/error.hpp"
#include "core/table.hpp"
#include "fleet/fleet.hpp"
#include "report/report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <set>

namespace gsq::cli {

namespace {

struct FleetCliOptions {
  std::string prometheus, reports, since = "1h", selector, output;
  size_t min_group = 3;
  double timeout_s = 30;
  bool json = false, since_given = false;
};

Table outlier_table(const fleet::Result& r, const std::vector<fleet::Outlier>& list) {
  Table t{{"GPU", "model", "what differs", "peers", "fix"}, {}};
  for (const auto& o : list)
    for (size_t d = 0; d < o.differences.size(); ++d) {
      const auto& diff = o.differences[d];
      t.rows.push_back({d == 0 ? fleet::subject(r, o) : "", d == 0 ? o.group : "",
                        fmt::format("{}: {}", diff.label, diff.value), diff.kind == "health" ? "" : diff.group_value,
                        diff.fix});
    }
  return t;
}

Table group_table(const fleet::Result& r) {
  Table t{{"model", "GPUs", "nodes", "driver", "power limit", "PCIe", "notes"}, {}};
  for (const auto& g : r.groups) {
    std::set<std::string> nodes;
    for (size_t i : g.gpus) nodes.insert(r.gpus[i].node);
    auto cfg = [&](const char* k, const char* unit = "") {
      auto it = g.config.find(k);
      return it == g.config.end() ? std::string("–") : it->second + unit;
    };
    t.rows.push_back(
        {g.model, std::to_string(g.gpus.size()), std::to_string(nodes.size()), cfg("driver"),
         cfg("power_limit_w", " W"),
         g.config.contains("pcie_gen_max") ? fmt::format("gen{} x{}", cfg("pcie_gen_max"), cfg("pcie_width")) : "–",
         fmt::format("{}", fmt::join(g.notes, "; "))});
  }
  return t;
}

report::Report fleet_page(const fleet::Result& r, const nlohmann::json& data) {
  report::Report page;
  page.title = "gpusqueeze fleet";
  page.provenance = "From " + r.source;
  page.verdict_title = r.outliers.empty() ? "Verdict on the fleet: no GPU stands apart"
                                          : fmt::format("Verdict on the fleet: {} outlier{}", r.outliers.size(),
                                                        r.outliers.size() == 1 ? "" : "s");
  page.method_steps = false;
  report::Section s;
  s.id = "fleet";
  s.title =
      fmt::format("Fleet — {} GPUs in {} group{}", r.gpus.size(), r.groups.size(), r.groups.size() == 1 ? "" : "s");
  s.step = 7;
  s.more = "gpusqueeze fleet --json";
  s.notes.push_back(
      "GPUs are grouped by model. A setting differs when two thirds of the group share another value; a measured "
      "signal is apart at a robust z of 3.5 (median and MAD of the group); a GPU is an outlier on a setting, a health "
      "event (XID, uncorrectable ECC, pending remap) or signals of two causes apart (clock, power-cap and thermal "
      "time are one), and watched on one.");
  for (const auto& n : r.notes) s.notes.push_back(n);
  s.tables.emplace_back("Groups", group_table(r));
  if (!r.outliers.empty()) s.tables.emplace_back("Outliers", outlier_table(r, r.outliers));
  if (!r.watch.empty()) s.tables.emplace_back("Watched (one signal apart)", outlier_table(r, r.watch));
  s.findings = fleet::findings(r);
  s.headline = page.verdict_title;
  s.data = data;
  page.add(std::move(s));
  return page;
}

int run_fleet(const FleetCliOptions& o) {
  if (o.prometheus.empty() == o.reports.empty())
    throw_bad_input("fleet: give one source, --prometheus URL or --reports DIR (see gpusqueeze fleet --help)");
  fleet::Collection c;
  if (!o.prometheus.empty()) {
    (void)fleet::duration_seconds(o.since);  // refused before anything is asked
    note(fmt::format("asking {} for the exporters' series over the last {}", o.prometheus, o.since));
    c = fleet::collect_prometheus({o.prometheus, o.since, o.selector, o.timeout_s});
  } else {
    if (!o.selector.empty()) throw_bad_input("fleet: --selector filters PromQL series; --reports has none");
    // Reports are per job: without --since every one counts (the newest per GPU), however long the jobs ran.
    const auto since = o.since_given ? std::optional<double>(fleet::duration_seconds(o.since)) : std::nullopt;
    c = fleet::collect_reports(o.reports, since);
  }
  if (c.gpus.empty())
    throw_bad_input(fmt::format("fleet: {} holds no GPU{} ({})", c.source,
                                o.prometheus.empty() ? "" : " series: is `gpusqueeze exporter` scraped by it?",
                                fmt::join(c.notes, "; ")));
  const auto r = fleet::judge(std::move(c), {o.min_group});
  const auto data = fleet::to_json(r);
  if (!o.output.empty()) report::write_report(fleet_page(r, data), o.output);
  if (o.json) {
    std::cout << data.dump(2) << '\n';
  } else {
    const size_t outlier_gpus = fleet::outlier_gpus(r);
    std::cout << fmt::format("# Fleet: {} GPUs, {} group{}, {} outlier{} ({} GPU{})\n\nsource: {}\n\n", r.gpus.size(),
                             r.groups.size(), r.groups.size() == 1 ? "" : "s", r.outliers.size(),
                             r.outliers.size() == 1 ? "" : "s", outlier_gpus, outlier_gpus == 1 ? "" : "s", r.source)
              << group_table(r).markdown();
    if (!r.outliers.empty()) std::cout << "\n## Outliers\n\n" << outlier_table(r, r.outliers).markdown();
    if (!r.watch.empty()) std::cout << "\n## Watched: one signal apart\n\n" << outlier_table(r, r.watch).markdown();
    for (const auto& n : r.notes) std::cout << "\nnote: " << n;
    if (!r.notes.empty()) std::cout << '\n';
    if (!o.output.empty()) std::cout << fmt::format("\npage: {}/index.html\n", o.output);
  }
  return r.outliers.empty() ? 0 : static_cast<int>(ExitCode::findings);
}

}  // namespace

Action register_fleet(CLI::App& app) {
  auto o = std::make_shared<FleetCliOptions>();
  auto* cmd = app.add_subcommand("fleet",
                                 "Which GPUs of a fleet stand apart from their peers, and why (Prometheus or "
                                 "report.json files)");
  cmd->footer(
      "Sources (one):\n"
      "  --prometheus URL  a PromQL endpoint (Prometheus, Thanos Query, VictoriaMetrics) scraping `gpusqueeze "
      "exporter`\n"
      "                    on every node (deploy/kubernetes, deploy/prometheus); one instant query per field over "
      "--since\n"
      "  --reports DIR     report.json files below DIR (deploy/slurm writes DIR/HOST/JOB-STAGE/report.json), the\n"
      "                    newest per GPU (settings and health from its newest report, each signal from the newest\n"
      "                    that measured it), of any age unless --since is given\n"
      "GPUs are grouped by model. Compared within a group:\n"
      "  settings   driver, VBIOS, power limit, clocks, PCIe generation and width, MIG, ECC, persistence, ASPM, CPU\n"
      "             governor: a GPU differs when two thirds of its group share another value\n"
      "  health     XID events (application faults 13/31/43/45 a warning), uncorrectable ECC errors, a pending\n"
      "             row remap, a GPU gone from a node whose exporter still reports: failures; NVLink errors and\n"
      "             PCIe replays far above the group's\n"
      "  signals    SM clock, power-cap and thermal time, temperature (all under load, utilisation > 50%),\n"
      "             and from reports the measured HBM copy, PCIe, launch cost and GEMM: apart at a robust z of 3.5\n"
      "             (median and MAD of the group), those under load only after a 24th of the window under load\n"
      "             (2.5 min of 1h); signals of two causes apart make an outlier (clock, power-cap and thermal time "
      "are\n"
      "             one cause), one cause is watched\n"
      "Exit codes: 0 no outlier, 1 an outlier (a setting, a health event, or two causes), 2 bad input or an\n"
      "unreachable endpoint.\n"
      "Examples:\n"
      "  gpusqueeze fleet --prometheus http://prometheus:9090 --since 6h\n"
      "  gpusqueeze fleet --prometheus http://thanos-query:9090 --selector 'cluster=\"train-a\"' -o fleet-page\n"
      "  gpusqueeze fleet --reports /shared/gsq-fleet --since 2d --json");
  auto* src = cmd->add_option_group("source");
  src->add_option("--prometheus", o->prometheus, "PromQL endpoint, http://HOST:PORT[/PATH]");
  src->add_option("--reports", o->reports, "Folder of report.json files (searched recursively)");
  cmd->add_option("--since", o->since,
                  "Window: the series' lookback (default 1h), or the reports' age (default: any) (30m, 1h30m, 2d)")
      ->capture_default_str();
  cmd->add_option("--selector", o->selector, "Extra PromQL label matchers for every series: 'cluster=\"a\"'");
  cmd->add_option("--min-group", o->min_group, "Smallest group that is judged")
      ->check(CLI::Range(size_t{2}, size_t{1000000}))
      ->capture_default_str();
  cmd->add_option("--timeout", o->timeout_s, "Seconds per PromQL query")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print gpusqueeze.fleet/1 JSON");
  cmd->add_option("-o,--output", o->output, "Write the page: DIR/index.html, report.md, report.json");
  return [o, cmd] {
    o->since_given = cmd->count("--since") > 0;
    return run_fleet(*o);
  };
}

}  // namespace gsq::cli
