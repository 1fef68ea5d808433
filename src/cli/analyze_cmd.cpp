// `gpusqueeze analyze TRACE...` and `gpusqueeze diff BEFORE AFTER`.
#include "cli/common.hpp"

#include "analyze/diff.hpp"
#include "analyze/gsqt.hpp"
#include "analyze/roofline.hpp"
#include "analyze/whatif.hpp"
#include "report/report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <optional>

namespace gsq::cli {

namespace {
struct AnalyzeOptions {
  std::vector<std::string> files;
  bool json = false, md = false, roofline = false;
  double roofline_fill = 0.8;
  std::string what_if;
  double untraced_step_ms = 0, recorder_cost_ns = -1;
};

struct Analysed {
  analyze::Analysis analysis;
  std::optional<analyze::Roofline> roofline;
  std::optional<analyze::WhatIf> what_if;
};

Analysed analyze_file(const std::string& f, const AnalyzeOptions& o) {
  const auto trace = analyze::load_trace(f);
  analyze::Thresholds th;
  th.untraced_step_ns = static_cast<int64_t>(o.untraced_step_ms * 1e6);
  th.recorder_record_ns = o.recorder_cost_ns;
  Analysed a{analyze::analyze(trace, th), std::nullopt, std::nullopt};
  if (o.roofline) a.roofline = analyze::roofline(trace, a.analysis, o.roofline_fill);
  if (!o.what_if.empty()) a.what_if = analyze::what_if(trace, analyze::parse_fixes(o.what_if), a.analysis.replay_graph);
  return a;
}

nlohmann::json analysed_json(const Analysed& a) {
  nlohmann::json j = analyze::to_json(a.analysis);
  if (a.roofline) j["roofline"] = analyze::to_json(*a.roofline);
  if (a.what_if) j["what_if"] = analyze::to_json(*a.what_if);
  return j;
}

std::string roofline_markdown(const analyze::Roofline& r) {
  if (!r.note.empty()) return "### Roofline\n\n" + r.note + "\n";
  return fmt::format(
      "### Roofline ({}{})\n\nEach kernel's position against the two roofs from NVML GPM: DRAM bandwidth as a "
      "fraction of peak, and the busiest pipe's activity as a fraction of its peak, over the counter intervals the "
      "kernel filled (≥ {:.0f}%). Below 60% of both roofs a kernel is latency-limited (occupancy, dependencies, "
      "launch shape).\n\n{}",
      r.device.empty() ? "GPU" : r.device,
      r.dram_peak_bytes_per_s > 0 ? fmt::format(", DRAM peak {:.0f} GB/s", r.dram_peak_bytes_per_s / 1e9) : "",
      r.min_fill * 100, analyze::roofline_table(r).markdown());
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
      "hardware counters: trace --gpu-metrics 100), communication-bound. --roofline adds each top kernel's DRAM and\n"
      "compute fractions of peak. --json prints gpusqueeze.analysis/1 (docs/format-analysis-json.md).\n"
      "Examples:\n"
      "  gpusqueeze analyze trace.json.gz\n"
      "  gpusqueeze analyze --what-if sync,pinned,fuse trace.json.gz   (predicted step time of each fix)\n"
      "  gpusqueeze analyze --untraced-step 7.95 --what-if layout trace.json.gz   (predictions of the untraced run)\n"
      "  gpusqueeze analyze --json rank0.json rank1.json > analysis.json");
  cmd->add_option("traces", o->files, "Trace files (one per rank)")->required()->check(CLI::ExistingFile);
  auto* json_flag = cmd->add_flag("--json", o->json, "Print gpusqueeze.analysis/1 JSON");
  cmd->add_flag("--md", o->md, "Print markdown (the default)")->excludes(json_flag);
  cmd->add_flag("--roofline", o->roofline,
                "Place each top kernel against the DRAM and compute roofs from the trace's GPM counters (record "
                "with `trace --gpu-metrics 100`); JSON gets a \"roofline\" object");
  cmd->add_option(
      "--what-if", o->what_if,
      "Replay the trace with fixes and predict the step time: sync (drop per-step syncs), pinned (pinned "
      "async copies), fuse (one kernel per elementwise chain), graphs (CUDA graphs for launch-only ops), "
      "host (input work on a worker thread), layout (channels_last at load: no NCHW<->NHWC conversions, "
      "PyTorch's NCHW batch norms at their channels_last kernels' cost), prefetch (input copies one step "
      "ahead on a side stream), tf32 (fp32 GEMMs on TF32 tensor cores), bf16 (autocast to bf16: GEMMs and fp32 "
      "attention in bf16, their casts on the GPU and the host), optimizer (a fused optimizer for a single-tensor "
      "one: each Optimizer.step# range one op and one kernel that moves the tensors once), attention (fused "
      "attention for attention by hand: each matmul-softmax-matmul run one op and one kernel costing its GEMMs), "
      "workers:N (the "
      "DataLoader's next() on N "
      "prefetching workers, from its "
      "enumerate(DataLoader) ranges, else the host's time before each step's input copy), kernel:NAME=N "
      "(kernels named NAME N× "
      "faster); comma-separated: each alone, then all together, each with its GPU floor (the host's own "
      "time at zero)");
  cmd->add_option("--untraced-step", o->untraced_step_ms,
                  "The program's step time in ms measured without a profiler (NVTX/ProfilerStep markers only, or "
                  "wall time / steps): the recorder's cost is taken out of the host time so that the replay gives "
                  "it (where the GPU sets the step and the untraced one is longer, the GPU's ops are slowed instead), "
                  "and the verdict and every prediction are of the untraced program")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--recorder-cost", o->recorder_cost_ns,
                  "Host ns the recorder costs per record (CPU op, CUDA call), taken out before the verdict and "
                  "predictions when no --untraced-step is given (default: the recorder's share of the host time "
                  "measured on the real-model corpus, 26% for torch.profiler and 10% for `gpusqueeze trace`; 0 = "
                  "judge the host as recorded)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--roofline-fill", o->roofline_fill,
                  "Share of a counter interval one kernel must fill for the interval to count as that kernel's")
      ->check(CLI::Range(0.5, 1.0))
      ->capture_default_str();
  return [o]() {
    std::vector<Analysed> done;
    std::vector<analyze::Analysis> all;
    for (const auto& f : o->files) {
      if (o->files.size() > 1) note("analysing " + f);
      done.push_back(analyze_file(f, *o));
      all.push_back(done.back().analysis);
    }
    auto stragglers = analyze::rank_stragglers(all);
    const auto balance = analyze::rank_balance(all);
    stragglers.insert(stragglers.end(), balance.findings.begin(), balance.findings.end());
    if (o->json) {
      if (all.size() == 1) {
        std::cout << analysed_json(done[0]).dump(2) << '\n';
      } else {
        nlohmann::json ranks = nlohmann::json::array();
        for (const auto& a : done) ranks.push_back(analysed_json(a));
        std::cout << nlohmann::json{{"schema", "gpusqueeze.analysis-ranks/1"},
                                    {"ranks", ranks},
                                    {"rank_balance", balance.table.rows},
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
      if (done[i].roofline) std::cout << roofline_markdown(*done[i].roofline) << '\n';
      if (done[i].what_if) std::cout << analyze::render_markdown(*done[i].what_if) << '\n';
    }
    if (all.size() > 1) std::cout << "## Load balance across ranks\n\n" << balance.table.markdown() << '\n';
    if (!stragglers.empty()) std::cout << report::findings_table(stragglers).markdown();
    return 0;
  };
}

namespace {
struct DiffOptions {
  std::string before, after, fixes;
  bool json = false;
};
}  // namespace

Action register_diff(CLI::App& app) {
  auto o = std::make_shared<DiffOptions>();
  auto* cmd = app.add_subcommand(
      "diff", "Show what changed between two traces: step time, idle causes, copies, syncs, findings");
  cmd->footer(
      "Example: gpusqueeze diff before.json.gz after.json.gz   (prove a fix worked)\n"
      "         gpusqueeze diff --fixes sync,pinned,fuse before.json.gz after.json.gz   (was the prediction right?)");
  cmd->add_option("before", o->before, "Trace before the change")->required()->check(CLI::ExistingFile);
  cmd->add_option("after", o->after, "Trace after the change")->required()->check(CLI::ExistingFile);
  cmd->add_flag("--json", o->json, "Print gpusqueeze.diff/1 JSON");
  cmd->add_option("--fixes", o->fixes,
                  "The fixes the change applied (as for analyze --what-if): the step time the replay of BEFORE "
                  "predicts with them, against the step time AFTER measured (where the host ran at another speed per "
                  "CUDA call in the two recordings, BEFORE's host is replayed at AFTER's)");
  return [o]() {
    // Each trace is read once: the analyses, and the prediction from the before trace.
    const auto before = analyze::load_trace(o->before);
    const auto a = analyze::analyze(before), b = analyze::analyze(analyze::load_trace(o->after));
    nlohmann::json check;
    if (!o->fixes.empty()) {
      // Traced against traced: the recorder's cost stays in (both recordings carry it). Where the host ran at another
      // speed per CUDA call in the two recordings (diff.hpp kHostSpeedSpread), BEFORE's host time is replayed at
      // AFTER's speed: the prediction is then of the after recording, not of a host that changed between them.
      const auto fixes = analyze::parse_fixes(o->fixes);
      const auto rates = analyze::rates_for(before);
      const double speed = analyze::host_speed_ratio(a, b);
      const bool rescale = !analyze::hosts_comparable(speed);
      const auto graph = analyze::build_graph(
          before, {.host_scale = rescale ? 1 / speed : 1.0, .host_scale_why = "the after recording's host speed"});
      const auto r = analyze::replay(before, *graph, fixes, rates);
      // The after trace's recorded step time, as its analysis's replay read it.
      const int64_t measured = b.critical_path.recorded_step_p50_ns;
      if (r.ok && measured > 0)
        check = {{"fixes", o->fixes},
                 {"predicted_step_p50_ns", r.step_p50_ns},
                 {"measured_step_p50_ns", measured},
                 {"error", static_cast<double>(r.step_p50_ns) / static_cast<double>(measured) - 1},
                 {"before_host_scale", rescale ? 1 / speed : 1.0}};
      // Beyond 10% the replay failed on this program: a dependency or a cost it does not model — or, where the fixes
      // leave the kernels alone but AFTER runs others, a change that did more than the fixes.
      if (!check.is_null()) {
        check["model_failure"] = std::abs(check["error"].get<double>()) > 0.10;
        const double kernels = analyze::kernels_per_step_ratio(a, b);
        if (!analyze::changes_kernels(fixes) && analyze::kernels_changed(kernels))
          check["kernels_per_step_ratio"] = kernels;
      }
    }
    if (o->json) {
      auto j = analyze::diff_json(a, b);
      if (!check.is_null()) j["prediction"] = check;
      std::cout << j.dump(2) << '\n';
    } else {
      std::cout << fmt::format("{} → {}\n\n{}", o->before, o->after, analyze::diff_markdown(a, b));
      if (!check.is_null())
        std::cout << fmt::format("predicted with {}: step P50 {:.3f} ms; measured after: {:.3f} ms ({:+.1f}%){}\n",
                                 o->fixes, check["predicted_step_p50_ns"].get<double>() / 1e6,
                                 check["measured_step_p50_ns"].get<double>() / 1e6, 100 * check["error"].get<double>(),
                                 check["before_host_scale"].get<double>() != 1.0
                                     ? fmt::format(" (the before recording's host time × {:.2f}: the after "
                                                   "recording's speed per CUDA call)",
                                                   check["before_host_scale"].get<double>())
                                     : "");
      if (!check.is_null() && check.contains("kernels_per_step_ratio"))
        std::cout << fmt::format(
            "AFTER runs {:.2f}× the kernels a step of BEFORE, where {} leave the kernels alone: the change did more "
            "than these fixes (another code path: e.g. a captured graph taking another attention kernel), which no "
            "replay of BEFORE can see; compare the two kernel tables\n",
            check["kernels_per_step_ratio"].get<double>(), o->fixes);
      if (!check.is_null() && check["model_failure"].get<bool>())
        std::cout << "the replay missed by more than 10%: a model failure on this program (a dependency or a cost it "
                     "does not model), not a measurement; its predictions for these fixes are not to be trusted here\n";
    }
    return 0;
  };
}

}  // namespace gsq::cli
