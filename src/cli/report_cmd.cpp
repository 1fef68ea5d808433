// `gpusqueeze report`: every step for this machine on one page (index.html, report.md, report.json).
#include "cli/common.hpp"
#include "jobs/report_measure.hpp"
#include "jobs/report_sections.hpp"
#include "jobs/tune_view.hpp"

#include "program/run.hpp"

#include "topo/live.hpp"
#include "topo/multigpu_probe.hpp"
#include "topo/nccl_logs.hpp"
#include "topo/sysfs.hpp"
#include "topo/topo_matrix.hpp"
#include "trace/format.hpp"
#include "triage/jitter.hpp"
#include "triage/memory.hpp"
#include "triage/trtexec.hpp"

#include "analyze/analysis.hpp"
#include "analyze/gsqt.hpp"
#include "analyze/roofline.hpp"
#include "bench/runner.hpp"
#include "core/error.hpp"
#include "core/json_io.hpp"
#include "doctor/checks.hpp"
#include "env/fingerprint.hpp"
#include "report/report.hpp"
#include "tune/profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

namespace gsq::cli {

using namespace jobs;

namespace {
struct ReportOptions {
  SnapshotOptions snap;
  std::string out_dir = "gsq-report";
  std::string compare_file, tune_file;
  double budget_s = -1;  // what report may spend measuring: 180 s with a program to run, else 120 s
  program::ProgramOptions program;
  bool no_trace = false, no_memory = false;
  std::vector<std::string> bench_files, trace_files, memory_files, jitter_files, trt_files, topo_files, nccl_files,
      torch_files, p2p_files;
};

}  // namespace

Action register_report(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  auto* cmd = app.add_subcommand("report", "Write the one-page report of this machine (HTML + markdown + JSON)");
  cmd->footer(
      "Sections: environment and fingerprint, doctor findings, bench runs (--bench), trace analyses (--trace),\n"
      "allocator snapshots (--memory), jitter recordings (--jitter), trtexec logs (--trt), topology (--topo) and NCCL\n"
      "logs (--nccl). The page opens with the verdict (at most five findings, worst and costliest first) and one card\n"
      "per step of the method. Files are named relative to the working directory, never by absolute path.\n"
      "Without an NVIDIA GPU the report says so and is built from the snapshot recorded on an H200 that ships with\n"
      "gpusqueeze, labelled as such. Open OUT/index.html in any browser: it has no external resources.\n"
      "A file recorded on a GPU this machine does not have is labelled with that GPU in its title and verdict lines.\n"
      "Every file is read and checked before anything is measured, and refused as its own command refuses it.\n"
      "With a program after --, report runs it on this machine first and puts it at the top of the page:\n"
      "  1. --runs N untraced runs (only its NVTX ranges recorded): the steps' P50/P90/P99 with 95% intervals,\n"
      "     warm-up split off, the GPU's clocks and power sampled throughout. Steps are the NVTX ranges named like\n"
      "     --step-range (default: PyTorch's ProfilerStep#N, else each optimizer step, else each DataLoader next(),\n"
      "     which the Python shim marks), or output lines matching --step-regex, else whole runs;\n"
      "  2. one run under `gpusqueeze trace`, analysed with the recorder's cost taken out so that its step is the\n"
      "     untraced one: the verdict, and the predicted untraced step after each fix (--no-trace skips it);\n"
      "  3. a Python program once more with the PyTorch allocator's history recorded (a sitecustomize shim on\n"
      "     PYTHONPATH, no change to the program), judged as `gpusqueeze memory` judges it (--no-memory skips it).\n"
      "  The runs' files stay in OUT/program/. A run that would not fit in --budget is skipped, one that outlives\n"
      "  it is stopped (SIGINT, SIGTERM, SIGKILL); the machine's own measurements get what the program leaves.\n"
      "  gpusqueeze report -- python3 train.py --epochs 1\n"
      "  gpusqueeze report --runs 3 --step-regex 'step [0-9]+' -- ./serve_bench --requests 500\n"
      "  A program that fails is a fail-level finding (exit 1); one that is not there is bad usage (exit 2); Ctrl-C\n"
      "  while it runs stops report too, with no page (exit 128 + the signal: 130).\n"
      "Exit codes: 0 the page is written and holds no fail-level finding; 1 it is written and holds one (CI can gate "
      "on\n"
      "it); 2 bad usage or a file refused (nothing measured, no page written); 3 no GPU and no bundled snapshot;\n"
      "70 an unexpected CUDA/NVML failure.");
  add_snapshot_options(*cmd, o->snap, true);
  cmd->add_option("-o,--out,--output", o->out_dir, "Report folder")->capture_default_str();
  cmd->add_option("--budget", o->budget_s,
                  "Seconds report may spend measuring (default 120, or 180 with a program after --): the program's "
                  "runs first, then short runs of probe mem and pcie, bench core's launch and GEMM, one kernel "
                  "against cudaMemcpy, clocks sampled throughout; 0 measures nothing on the machine")
      ->check(CLI::Range(0.0, 3600.0));
  auto& prog = o->program;
  cmd->add_option("--runs", prog.runs, "Untraced runs of the program for its baseline (-- CMD)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_flag("--no-trace", o->no_trace, "Time the program's steps only: no traced run, no analysis (-- CMD)");
  cmd->add_flag("--no-memory", o->no_memory,
                "No run with the PyTorch allocator's history recorded (-- CMD; a Python program only)");
  cmd->add_option("--step-range", prog.step_range,
                  "NVTX ranges that mark one step each, a regular expression over the whole name (-- CMD; default: "
                  "ProfilerStep#N, else each optimizer step, else each DataLoader next(), the first found)");
  cmd->add_option("--step-regex", prog.step_regex,
                  "Time steps from the program's output instead: each line matching this regular expression ends "
                  "one (-- CMD; e.g. 'step [0-9]+'); the output is passed on unchanged, Python's unbuffered");
  cmd->add_option("command", prog.command,
                  "A program to run and judge: its untraced steps (step 1), a traced run analysed with the predicted "
                  "untraced step after each fix (step 2), its allocator history (PyTorch); after --");
  cmd->add_option("--bench", o->bench_files, "Add a bench run (gpusqueeze.bench/1) as the baseline section")
      ->check(CLI::ExistingFile);
  cmd->add_option("--trace", o->trace_files, "Add the analysis of a trace (Kineto JSON)")->check(CLI::ExistingFile);
  cmd->add_option(
         "--memory", o->memory_files,
         "Add a PyTorch allocator snapshot (torch.cuda.memory._dump_snapshot), or a text file holding a CUDA OOM "
         "error")
      ->check(CLI::ExistingFile);
  cmd->add_option("--jitter", o->jitter_files, "Add a jitter recording (gpusqueeze jitter -o, .gsqt)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--trt", o->trt_files, "Add a TensorRT audit of a trtexec log")->check(CLI::ExistingFile);
  cmd->add_option("--torch", o->torch_files,
                  "Add our kernels against PyTorch (gpusqueeze kernels --torch --torch-out FILE)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--compare", o->compare_file,
                  "Mark what changed since an earlier report of this machine (its report.json): fingerprint, steps, "
                  "findings gained and lost")
      ->check(CLI::ExistingFile);
  cmd->add_option("--topo", o->topo_files, "Add a pasted `nvidia-smi topo -m` (step 5)")->check(CLI::ExistingFile);
  cmd->add_option(
         "--tune", o->tune_file,
         "Verify this tune profile (step 6; default: /etc/gpusqueeze/tune.toml, else the shipped base profile)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--nccl", o->nccl_files, "Add an NCCL_DEBUG=INFO log or nccl-tests output (step 5)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--p2p", o->p2p_files,
                  "Add a saved `gpusqueeze probe p2p --json` (step 5): its bandwidth and latency matrices as heat maps")
      ->check(CLI::ExistingFile);
  return [o]() {
    const bool with_program = !o->program.command.empty();
    const double budget = o->budget_s >= 0 ? o->budget_s : with_program ? 180.0 : 120.0;
    if (with_program && budget <= 0) throw_bad_input("report -- CMD: --budget 0 leaves no time to run the program");
    if (with_program && !o->snap.snapshot_file.empty())
      throw_bad_input(
          "report -- CMD runs the program on this machine; --snapshot makes a page of another machine: "
          "give one or the other");
    gpu::Snapshot s;
    std::string provenance;
    std::optional<std::filesystem::path> bundled_dir;  // set when showing the H200 files instead of this machine
    try {
      s = acquire_snapshot(o->snap, true);
      provenance =
          o->snap.snapshot_file.empty()
              ? fmt::format("Live on {} at {}.", s.host.hostname.ok() ? *s.host.hostname : "this host", s.captured_at)
              : fmt::format("Replayed from {} (recorded at {} on {}).", report::display_name(o->snap.snapshot_file),
                            s.captured_at, s.host.hostname.ok() ? *s.host.hostname : "an unnamed host");
    } catch (const Error& e) {
      if (e.code() != ExitCode::no_gpu) throw;
      if (with_program)  // the bundled H200 page is no place for this program (--snapshot was refused above)
        throw_no_gpu(std::string(e.what()) + "; report -- CMD runs the program on this machine's GPU");
      const auto bundled = bundled_snapshot();
      if (!bundled) throw;
      note(std::string(e.what()));
      note(fmt::format(
          "this machine has no usable NVIDIA GPU; the report shows the bundled snapshot recorded on an H200 "
          "({}) instead",
          report::display_name(*bundled)));
      s = gpu::load_snapshot(*bundled);
      bundled_dir = bundled->parent_path();
      provenance = fmt::format(
          "NOT THIS MACHINE ({}). Shown from files recorded on {} at {} that ship with gpusqueeze.", e.what(),
          s.gpus.empty() || !s.gpus[0].name.ok() ? "a GPU server" : *s.gpus[0].name, s.captured_at);
    }
    const auto findings = doctor::run_checks(s);
    report::Report r;
    r.title =
        fmt::format("gpusqueeze report — {}", s.gpus.empty() || !s.gpus[0].name.ok() ? "machine" : *s.gpus[0].name);
    r.provenance = provenance;
    r.this_machine = !bundled_dir && o->snap.snapshot_file.empty();
    r.add(report::environment_section(s, env::fingerprint(env::locked_fields(s))));
    r.add(report::doctor_section(findings));
    std::vector<std::string> bench_files = o->bench_files, trace_files = o->trace_files, jitter_files = o->jitter_files,
                             torch_files = o->torch_files;
    if (bundled_dir) {
      // Show what the later steps produce, from files recorded on the H200 that ship with gpusqueeze.
      const auto& dir = *bundled_dir;
      if (bench_files.empty() && std::filesystem::exists(dir / "h200-bench-d2d.json"))
        bench_files.push_back((dir / "h200-bench-d2d.json").string());
      for (const char* name : {"h200-probe-copy-4g.json", "h200-kernels-4096.json.gz"})  // steps 3 and 4
        if (o->bench_files.empty() && std::filesystem::exists(dir / name)) bench_files.push_back((dir / name).string());
      if (trace_files.empty())  // a PyTorch loop (the critical path) and a GEMM recorded with GPU metrics (roofline)
        for (const char* name : {"torch-host-slow.json.gz", "h200-hw-matmul.gsqt"})
          if (std::filesystem::exists(dir / name)) trace_files.push_back((dir / name).string());
      if (torch_files.empty() && std::filesystem::exists(dir / "h200-torch-compare.json"))
        torch_files.push_back((dir / "h200-torch-compare.json").string());
      if (jitter_files.empty() && std::filesystem::exists(dir / "h200-hw-matmul.gsqt"))
        jitter_files.push_back((dir / "h200-hw-matmul.gsqt").string());
    }
    // Every file is named on the page as report::display_name gives it: no absolute path of this machine.
    using report::display_name;
    // Every file is read and judged before any live measurement: a file that is refused costs no measuring time, and
    // is refused as the command that owns it refuses it (a truncated trtexec log as `trt audit` without --partial).
    const auto labelled = [&s](report::Section sec, const std::string& recorded_on) {
      return label_recorded_on(std::move(sec), recorded_on, s);
    };
    std::vector<report::Section> bench_sections, file_sections;
    for (const auto& f : bench_files) {
      const auto run = bench::load_run(f);
      bench_sections.push_back(labelled(bench_section_of(run, display_name(f)), run.gpu_name));
    }
    for (const auto& f : trace_files) {
      const auto trace = analyze::load_trace(f);
      auto a = analyze::analyze(trace);
      a.origin = display_name(f);
      auto sec = analysis_section_of(a);
      const auto roof = analyze::roofline(trace, a);
      std::vector<report::SolPoint> points;
      for (const auto& p : roof.points)
        if (p.memory >= 0 && p.compute >= 0) points.push_back({p.kernel, p.memory, p.compute, p.share});
      if (!points.empty())
        sec.figures_svg.push_back(
            report::sol_svg(fmt::format("Top kernels against the roofs ({})", roof.device), points));
      file_sections.push_back(labelled(std::move(sec), roof.device));
    }
    for (const auto& f : torch_files) {
      const auto j = read_json_file(f, "gpusqueeze.torch_compare/1");
      file_sections.push_back(
          labelled(torch_section_of(j, display_name(f)), j.contains("gpu") && j["gpu"].is_string() ? j["gpu"] : ""));
    }
    for (const auto& f : o->memory_files) {
      const std::string bytes = read_text_file(f);
      if (triage::looks_like_oom_text(bytes)) {
        file_sections.push_back(oom_section_of(triage::read_oom_text(bytes, display_name(f))));
        continue;
      }
      auto m = triage::analyze_memory(triage::parse_memory_snapshot(bytes, f));
      m.origin = display_name(f);
      file_sections.push_back(memory_section_of(m));  // an allocator snapshot does not name its GPU model
    }
    for (const auto& f : jitter_files) {
      const auto t = trace::read_trace(f);
      auto j = triage::analyze_jitter(t);
      j.origin = display_name(f);
      file_sections.push_back(
          labelled(jitter_section_of(j, t), t.counters.empty() ? std::string() : t.counters.front().device_name));
    }
    for (const auto& f : o->trt_files) {
      const auto a = triage::audit_trt(triage::parse_trtexec_log(read_text_file(f), display_name(f)), {}, {}, {});
      file_sections.push_back(
          labelled(trt_section_of(a, display_name(f)), a.runs.empty() ? "" : a.runs.front().device));
    }
    std::vector<report::Section> step5_sections;
    for (const auto& f : o->topo_files)
      step5_sections.push_back(
          topo_section_of(topo::parse_topo_matrix(read_text_file(f), display_name(f)), display_name(f)));
    for (const auto& f : o->nccl_files)
      step5_sections.push_back(
          nccl_section_of(topo::parse_nccl_log(read_text_file(f), display_name(f)), display_name(f)));
    for (const auto& f : o->p2p_files)
      step5_sections.push_back(p2p_section_of(
          topo::p2p_from_json(read_json_file(f, "gpusqueeze.p2p/1"), display_name(f)), "(" + display_name(f) + ")"));
    // The profile is verified against the machine running report: on a page of another machine (a replayed
    // snapshot, the bundled H200) its results would be read as that machine's, so they are left off.
    std::optional<TuneView> tune_view;
    if (r.this_machine)
      tune_view = verify_tune_profile(o->tune_file, data_file("gpu-server-base.toml"));
    else if (!o->tune_file.empty()) {
      (void)tune::read_profile(o->tune_file);  // a profile that does not read is refused all the same
      note("--tune: not verified, the page is not of this machine (`gpusqueeze tune verify` checks this one)");
    }
    const auto earlier =
        o->compare_file.empty() ? nlohmann::json() : read_json_file(o->compare_file, report::kReportSchema);
    if (!o->compare_file.empty())  // judged against an empty page now, so that a foreign document is refused here
      (void)report::compare_section(earlier, report::render_json(report::Report{}), display_name(o->compare_file));

    for (auto& sec : bench_sections) r.add(std::move(sec));
    // The user's program, after every file was accepted and before the machine's own measurements: it gets the
    // budget first, the live measurements what it leaves.
    double live_budget = budget;
    if (with_program) {  // r.this_machine: neither --snapshot (refused above) nor the bundled page (no GPU: refused)
      auto po = o->program;
      po.trace = !o->no_trace;
      po.memory = !o->no_memory;
      po.budget_s = budget;
      po.dir = o->out_dir;
      const auto pr = program::run_program(po, note);
      if (pr.interrupted_by) {  // the user stopped the program: no page of a half-run, the signal's exit status
        note(fmt::format("report: stopped by signal {} while the program ran; no page written", pr.interrupted_by));
        return 128 + pr.interrupted_by;
      }
      live_budget = std::max(0.0, budget - pr.elapsed_s);
      r.add(program_baseline_section_of(pr));
      if (auto sec = program_analysis_section_of(pr)) r.add(std::move(*sec));
      if (pr.clocks) {
        const auto t = trace::read_trace(*pr.clocks);
        if (!t.counters.empty()) {
          auto j = triage::analyze_jitter(t);
          j.origin = "the program's untraced runs";
          auto sec = jitter_section_of(j, t);
          sec.id = "program-clocks";
          sec.more = "gpusqueeze jitter " + display_name(*pr.clocks);
          r.add(std::move(sec));
        }
      }
      for (const auto& f : pr.memory_snapshots) {
        try {
          auto m = triage::analyze_memory(triage::read_memory_snapshot(f));
          m.origin = display_name(f);
          r.add(memory_section_of(m));
        } catch (const Error& e) {
          note(fmt::format("{}: not read: {}", display_name(f), e.what()));
        }
      }
      if (live_budget < 10 && budget > 0)
        note(
            fmt::format("the program used {:.0f} s of the {:.0f} s budget: the machine's own ceilings are not "
                        "measured (raise --budget)",
                        pr.elapsed_s, budget));
    }
    // A live GPU: the memory and PCIe ceilings measured now, unless the user gave runs or no budget.
    if (r.this_machine && !s.gpus.empty() && o->bench_files.empty() && live_budget >= (with_program ? 10 : 0) &&
        live_budget > 0) {
      std::filesystem::create_directories(o->out_dir);
      const auto& u = s.gpus.front().utilization_gpu_pct;  // read before the report loaded the GPU
      const auto live = measure_live(live_budget, s.gpus.size(), std::filesystem::path(o->out_dir) / "clocks.gsqt",
                                     u.ok() && *u <= 10, note);
      if (live.p2p) r.add(p2p_section_of(*live.p2p));
      for (const auto& run : live.runs) {
        auto sec = bench_section_of(run, "measured now");
        sec.more = run.suite == "core"      ? "gpusqueeze bench core"
                   : run.suite == "kernels" ? "gpusqueeze kernels"
                                            : "gpusqueeze probe " + run.suite;
        r.add(std::move(sec));
      }
      if (live.clocks) {  // the clocks over everything report just ran
        const auto t = trace::read_trace(*live.clocks);
        auto j = triage::analyze_jitter(t);
        j.origin = "report's own measurements";
        auto sec = jitter_section_of(j, t);
        sec.more = "gpusqueeze jitter " + display_name(*live.clocks);
        r.add(std::move(sec));
      }
      if (!live.notes.empty()) {  // said on the page
        report::Section sec;
        sec.id = "measured-now";
        sec.title = "What report could not measure now";
        sec.step = 3;
        sec.notes = live.notes;
        sec.headline = live.notes.front();
        sec.more = "gpusqueeze probe mem; gpusqueeze bench core; gpusqueeze kernels";
        r.add(std::move(sec));
      }
      for (const auto& n : live.notes) note(n);
    }
    for (auto& sec : file_sections) r.add(std::move(sec));
    // A live machine with several GPUs: its topology through NVML (step 5), unless the user gave a saved one.
    if (r.this_machine && s.gpus.size() > 1 && o->topo_files.empty()) {
      try {
        const auto nvml = gpu::Nvml::open();
        auto machine = topo::read_machine_topology(nvml.api());
        auto sec = topo_section_of(machine.links, "(NVML and sysfs)");
        sec.more = "gpusqueeze topo";
        sec.findings = std::move(machine.findings);  // the matrices' checks, ACS and IOMMU
        for (const auto& n : machine.notes) sec.notes.push_back(n);
        r.add(std::move(sec));
      } catch (const Error& e) {
        note(std::string("topology not read: ") + e.what());
      }
    }
    for (auto& sec : step5_sections) r.add(std::move(sec));
    if (tune_view) r.add(tune_section_of(*tune_view));
    if (!o->compare_file.empty())
      r.add(report::compare_section(earlier, report::render_json(r), display_name(o->compare_file)));
    // The page follows the method: sections by step (field triage last), in the order given within a step.
    std::stable_sort(r.sections.begin(), r.sections.end(),
                     [](const report::Section& a, const report::Section& b) { return a.step < b.step; });
    report::write_report(r, o->out_dir);
    std::cout << fmt::format("report written to {}/index.html (also report.md, report.json)\n{}\n", o->out_dir,
                             provenance);
    std::cout << fmt::format("doctor: worst finding {}\n", to_string(worst(findings)));
    // A fail-level finding anywhere on the page fails the run, so CI can gate on the report.
    size_t failing = 0;
    for (const auto& sec : r.sections)
      failing += std::count_if(sec.findings.begin(), sec.findings.end(),
                               [](const Finding& f) { return f.severity == Severity::fail; });
    if (failing == 0) return 0;
    std::cout << fmt::format("report: {} fail-level finding(s) on the page (exit 1)\n", failing);
    return 1;
  };
}

}  // namespace gsq::cli
