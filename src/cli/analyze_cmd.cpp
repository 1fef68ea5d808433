// `gpusqueeze analyze TRACE...` and `gpusqueeze diff BEFORE AFTER`.
#include "cli/common.hpp"

#include "analyze/diff.hpp"
#include "analyze/gsqt.hpp"
#include "report/report.hpp"

#include <fmt/format.h>

#include <iostream>

namespace gsq::cli {

namespace {
struct AnalyzeOptions {
  std::vector<std::string> files;
  bool json = false, md = false;
};

analyze::Analysis analyze_file(const std::string& f) {
  return analyze::analyze(analyze::load_trace(f));
}
}  // namespace

Action register_analyze(CLI::App& app) {
  auto o = std::make_shared<AnalyzeOptions>();
  auto* cmd = app.add_subcommand(
      "analyze", "Name the bottleneck in a trace: verdict, ranked findings with evidence, saving and fix");
  cmd->footer(
      "Reads gpusqueeze traces (.gsqt from `gpusqueeze trace`) and PyTorch-profiler / Kineto JSON (trace.json or\n"
      "trace.json.gz; prof.export_chrome_trace(...)). Several "
      "files\n"
      "are ranks of one job: each is analysed, then ranks are compared for stragglers.\n"
      "Verdict classes: host-bound, launch-bound, sync-bound, transfer-bound, gpu-bound (subclass unknown without\n"
      "hardware counters), communication-bound. --json prints gpusqueeze.analysis/1 (README: \"Analysis JSON\").\n"
      "Examples:\n"
      "  gpusqueeze analyze trace.json.gz\n"
      "  gpusqueeze analyze --json rank0.json rank1.json > analysis.json");
  cmd->add_option("traces", o->files, "Trace files (one per rank)")->required()->check(CLI::ExistingFile);
  auto* json_flag = cmd->add_flag("--json", o->json, "Print gpusqueeze.analysis/1 JSON");
  cmd->add_flag("--md", o->md, "Print markdown (the default)")->excludes(json_flag);
  return [o]() {
    std::vector<analyze::Analysis> all;
    for (const auto& f : o->files) {
      if (o->files.size() > 1) note("analysing " + f);
      all.push_back(analyze_file(f));
    }
    const auto stragglers = analyze::rank_stragglers(all);
    if (o->json) {
      if (all.size() == 1) {
        std::cout << analyze::to_json(all[0]).dump(2) << '\n';
      } else {
        nlohmann::json ranks = nlohmann::json::array();
        for (const auto& a : all) ranks.push_back(analyze::to_json(a));
        std::cout << nlohmann::json{{"schema", "gpusqueeze.analysis-ranks/1"},
                                    {"ranks", ranks},
                                    {"rank_findings", stragglers}}
                         .dump(2)
                  << '\n';
      }
      return 0;
    }
    for (size_t i = 0; i < all.size(); ++i) {
      std::cout << fmt::format("## {}{}\n\n{}\n", o->files[i],
                               all[i].rank >= 0 ? fmt::format(" (rank {})", all[i].rank) : "",
                               analyze::render_markdown(all[i]));
    }
    if (!stragglers.empty()) std::cout << report::findings_table(stragglers).markdown();
    return 0;
  };
}

namespace {
struct DiffOptions {
  std::string before, after;
  bool json = false;
};
}  // namespace

Action register_diff(CLI::App& app) {
  auto o = std::make_shared<DiffOptions>();
  auto* cmd = app.add_subcommand(
      "diff", "Show what changed between two traces: step time, idle causes, copies, syncs, findings");
  cmd->footer("Example: gpusqueeze diff before.json.gz after.json.gz   (prove a fix worked)");
  cmd->add_option("before", o->before, "Trace before the change")->required()->check(CLI::ExistingFile);
  cmd->add_option("after", o->after, "Trace after the change")->required()->check(CLI::ExistingFile);
  cmd->add_flag("--json", o->json, "Print gpusqueeze.diff/1 JSON");
  return [o]() {
    const auto a = analyze_file(o->before), b = analyze_file(o->after);
    if (o->json)
      std::cout << analyze::diff_json(a, b).dump(2) << '\n';
    else
      std::cout << fmt::format("{} → {}\n\n{}", o->before, o->after, analyze::diff_markdown(a, b));
    return 0;
  };
}

}  // namespace gsq::cli
