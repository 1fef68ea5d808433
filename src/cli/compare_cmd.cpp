// `gpusqueeze compare BASE NEW`: two bench runs, benchmark by benchmark, with the ratio's interval.
#include "cli/common.hpp"

#include "bench/compare.hpp"
#include "bench/runner.hpp"
#include "core/error.hpp"
#include "core/table.hpp"

#include <fmt/format.h>

#include <iostream>

namespace gsq::cli {

namespace {
struct CompareCliOptions {
  std::string base, next;
  bench::CompareOptions cmp;
  std::vector<std::string> ignore_axes;
  bool json = false, require_same_env = false;
};
}  // namespace

Action register_compare(CLI::App& app) {
  auto o = std::make_shared<CompareCliOptions>();
  auto* cmd = app.add_subcommand(
      "compare", "Compare two bench runs: FASTER / SLOWER / SAME / UNCERTAIN per benchmark; exit 1 on regression");
  cmd->footer(
      "Pairs benchmarks by name, axes and mode. The ratio is median(new)/median(base) of the time per launch (> 1 is\n"
      "slower), with a 95% bootstrap CI over the raw samples (2000 resamples), widened by two timer steps (the "
      "smallest\n"
      "gap between sample values: 32 ns for CUDA events on an H200) relative to the base median. Verdict: SLOWER if "
      "the whole CI is above\n"
      "1 + threshold, FASTER if below 1 - threshold, SAME if inside the band, else UNCERTAIN (take more samples).\n"
      "The Mann-Whitney U p-value is printed for reference. Locked environment fields that differ are listed loudly;\n"
      "--require-same-env refuses (exit 2). Exit codes: 0 no regression, 1 a SLOWER, 2 bad input.\n"
      "Examples:\n"
      "  gpusqueeze compare base.json new.json --threshold 0.05\n"
      "  gpusqueeze compare a.json b.json --ignore-axis grid_fraction    A/B of one parameter");
  cmd->add_option("base", o->base, "Baseline run (gpusqueeze.bench/1)")->required()->check(CLI::ExistingFile);
  cmd->add_option("new", o->next, "New run")->required()->check(CLI::ExistingFile);
  cmd->add_option("--threshold", o->cmp.min_effect, "Smallest relative change that counts (fraction)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--ignore-axis", o->ignore_axes, "Pair configurations that differ only in this axis");
  cmd->add_flag("--require-same-env", o->require_same_env, "Refuse when locked environment fields differ");
  cmd->add_flag("--json", o->json, "Print gpusqueeze.compare/1 JSON");
  return [o]() {
    o->cmp.ignore_axes = {o->ignore_axes.begin(), o->ignore_axes.end()};
    const bench::Run base = bench::load_run(o->base), next = bench::load_run(o->next);
    const auto rep = bench::compare_runs(base, next, o->cmp);
    if (!rep.env_drift.empty()) {
      std::string fields;
      for (const auto& d : rep.env_drift)
        fields += fmt::format("\n  {}: {} → {}", d.field, abbreviate(d.before, 40), abbreviate(d.after, 40));
      const std::string msg =
          fmt::format("WARNING: the runs come from different environments ({} locked field(s) differ):{}",
                      rep.env_drift.size(), fields);
      if (o->require_same_env) throw_bad_input(msg);
      note(msg);
    }
    if (rep.rows.empty()) throw_bad_input("no benchmark appears in both runs");
    if (o->json) {
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& c : rep.rows) {
        rows.push_back({{"benchmark", c.label},
                        {"mode", c.mode},
                        {"base_p50_ns", c.base_p50_ns},
                        {"new_p50_ns", c.new_p50_ns},
                        {"ratio", c.ratio},
                        {"ci95", {c.ci.lo, c.ci.hi}},
                        {"p_value", c.p_value},
                        {"verdict", bench::to_string(c.verdict)},
                        {"base_n", c.base_n},
                        {"new_n", c.new_n}});
      }
      nlohmann::json drift = nlohmann::json::array();
      for (const auto& d : rep.env_drift) drift.push_back({{"field", d.field}, {"base", d.before}, {"new", d.after}});
      std::cout << nlohmann::json{{"schema", "gpusqueeze.compare/1"},
                                  {"base", o->base},
                                  {"new", o->next},
                                  {"threshold", o->cmp.min_effect},
                                  {"rows", rows},
                                  {"env_drift", drift},
                                  {"only_in_base", rep.only_in_base},
                                  {"only_in_new", rep.only_in_new},
                                  {"regression", rep.regression()}}
                       .dump(2)
                << '\n';
    } else {
      Table t{{"benchmark", "mode", "base P50", "new P50", "ratio", "95% CI", "p (M-W U)", "verdict"}, {}};
      for (const auto& c : rep.rows) {
        t.rows.push_back({c.label, c.mode, fmt::format("{:.0f} ns", c.base_p50_ns),
                          fmt::format("{:.0f} ns", c.new_p50_ns), fmt::format("{:.4f}", c.ratio),
                          fmt::format("{:.4f}–{:.4f}", c.ci.lo, c.ci.hi), fmt::format("{:.3g}", c.p_value),
                          std::string(bench::to_string(c.verdict))});
      }
      std::cout << fmt::format("{} vs {} (threshold ±{:.1f}%)\n\n{}", o->next, o->base, 100 * o->cmp.min_effect,
                               t.markdown());
      for (const auto& s : rep.only_in_base) std::cout << "only in base: " << s << '\n';
      for (const auto& s : rep.only_in_new) std::cout << "only in new: " << s << '\n';
      std::cout << (rep.regression() ? "REGRESSION: at least one benchmark is SLOWER\n" : "no regression\n");
    }
    return rep.regression() ? 1 : 0;
  };
}

}  // namespace gsq::cli
