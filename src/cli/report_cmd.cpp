// `gpusqueeze report`: every step for this machine on one page (index.html, report.md, report.json).
#include "cli/common.hpp"

#include "trace/format.hpp"
#include "triage/jitter.hpp"
#include "triage/memory.hpp"
#include "triage/trtexec.hpp"

#include "analyze/analysis.hpp"
#include "analyze/gsqt.hpp"
#include "bench/runner.hpp"
#include "core/error.hpp"
#include "core/json_io.hpp"
#include "doctor/checks.hpp"
#include "env/fingerprint.hpp"
#include "report/report.hpp"

#include <fmt/format.h>

#include <iostream>

namespace gsq::cli {

namespace {
struct ReportOptions {
  SnapshotOptions snap;
  std::string out_dir = "gsq-report";
  std::vector<std::string> bench_files, trace_files, memory_files, jitter_files, trt_files;
};

report::Section bench_section_of(const bench::Run& run, const std::string& origin) {
  const Table t = bench::results_table(run);
  auto sec = report::bench_section(
      fmt::format("{} ({})", run.suite, origin), t.header, t.rows,
      {fmt::format("suite {} on {} at {}, fingerprint {}.", run.suite, run.gpu_name, run.created_at, run.fingerprint)},
      bench::to_json(run, false));
  std::vector<report::Bar> bars;
  for (const auto& c : bench::ceilings(run))
    if (c.peak_bytes_per_s > 0) bars.push_back({c.name, c.bytes_per_s, c.peak_bytes_per_s});
  if (!bars.empty())
    sec.figures_svg.push_back(report::bars_svg("Measured ceilings against the theoretical ones", bars));
  for (const auto& r : run.results)
    for (const auto& m : r.measurements)
      if (sec.figures_svg.size() < 24 && m.samples_ns.size() >= 20) {
        sec.figures_svg.push_back(report::cdf_svg(bench::config_label(r) + " " + m.mode, m.kept()));
      }
  return sec;
}

report::Section analysis_section_of(const analyze::Analysis& a) {
  return report::analysis_section(a.origin, fmt::format("Verdict: {} — {}", a.verdict.cls, a.verdict.summary),
                                  analyze::breakdown_table(a), analyze::kernels_table(a, 8), a.findings,
                                  analyze::to_json(a));
}
std::string mib(uint64_t bytes) {
  return fmt::format("{:.1f}", static_cast<double>(bytes) / (1 << 20));
}

report::Section memory_section_of(const triage::MemoryReport& m) {
  report::Section sec;
  sec.id = "memory";
  sec.title = "Field triage — PyTorch allocator: " + std::filesystem::path(m.origin).filename().string();
  sec.notes.push_back(
      "Cached memory is the cache at work (empty_cache() returns it); fragmented memory is free but "
      "stuck between live blocks. 1 − allocated/reserved counts both.");
  Table t{{"GPU", "reserved MiB", "live MiB", "cached", "fragmented", "1 − allocated/reserved", "OOMs"}, {}};
  for (const auto& d : m.devices) {
    std::string ooms;
    for (const auto& o : d.ooms)
      ooms += (ooms.empty() ? "" : ", ") + std::string(o.fragmentation ? "fragmentation" : "capacity");
    t.rows.push_back(
        {std::to_string(d.device), mib(d.reserved), mib(d.allocated), fmt::format("{:.1f}%", 100 * d.ratio(d.cached)),
         fmt::format("{:.1f}%", 100 * d.ratio(d.fragmented)),
         fmt::format("{:.3f}", d.reserved ? 1 - d.ratio(d.allocated) : 0.0), ooms.empty() ? "none" : ooms});
  }
  sec.tables.emplace_back("Where the reserved memory is (gpusqueeze memory for sites and maps)", t);
  sec.findings = m.findings;
  sec.data = triage::to_json(m);
  return sec;
}

report::Section jitter_section_of(const triage::JitterReport& j, const trace::TraceFile& t) {
  report::Section sec;
  sec.id = "jitter";
  sec.title = "Field triage — clock jitter: " + std::filesystem::path(j.origin).filename().string();
  Table table{{"GPU", "seconds", "busy SM clock P5 / P50 MHz", "max temperature °C", "held by (share of time)"}, {}};
  for (const auto& g : j.gpus) {
    std::string held;
    for (const auto& r : g.reasons)
      if (r.reason != "gpu_idle")
        held += (held.empty() ? "" : ", ") + fmt::format("{} {:.1f}%", r.reason, 100 * r.fraction);
    table.rows.push_back(
        {std::to_string(g.device), fmt::format("{:.1f}", g.duration_s),
         g.sm_clock_p5_mhz ? fmt::format("{:.0f} / {:.0f}", *g.sm_clock_p5_mhz, *g.sm_clock_p50_mhz) : "n/a",
         g.temperature_max_c ? fmt::format("{:.0f}", *g.temperature_max_c) : "n/a", held.empty() ? "nothing" : held});
  }
  sec.tables.emplace_back("What held the clock down (gpusqueeze jitter for the readings)", table);
  // Clock, temperature and power over time, per GPU.
  const std::pair<const char*, std::pair<const char*, double>> plotted[] = {
      {"sm_clock", {"MHz", 1e-6}}, {"temperature", {"°C", 1}}, {"power", {"W", 1}}};
  for (const auto& c : t.counters)
    for (const auto& [name, unit] : plotted)
      if (c.name == name) {
        std::vector<double> v;
        for (double x : c.values) v.push_back(x * unit.second);
        sec.figures_svg.push_back(report::series_svg(fmt::format("GPU {} {}", c.device, name), c.t_ns, v, unit.first));
      }
  sec.findings = j.findings;
  sec.data = triage::to_json(j);
  return sec;
}
report::Section trt_section_of(const triage::TrtAudit& a, const std::string& origin) {
  report::Section sec;
  sec.id = "trt";
  sec.title = "Field triage — TensorRT: " + origin;
  Table t{{"run", "TensorRT", "precision", "workspace", "throughput", "GPU compute P50"}, {}};
  for (size_t i = 0; i < a.runs.size(); ++i) {
    const auto& r = a.runs[i];
    t.rows.push_back({std::to_string(i + 1), r.trt_version, r.precision,
                      r.workspace_mib ? fmt::format("{:.6g} MiB", *r.workspace_mib) : "default",
                      r.throughput_qps ? fmt::format("{:.0f} qps", *r.throughput_qps) : "-",
                      r.gpu_compute_median_ms ? fmt::format("{:.4f} ms", *r.gpu_compute_median_ms) : "-"});
  }
  sec.tables.emplace_back("trtexec runs (gpusqueeze trt audit for the layers and every line)", t);
  sec.findings = a.findings;
  sec.data = triage::to_json(a);
  return sec;
}
}  // namespace

Action register_report(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  auto* cmd = app.add_subcommand("report", "Write the one-page report of this machine (HTML + markdown + JSON)");
  cmd->footer(
      "Sections: environment and fingerprint, doctor findings, bench runs (--bench), trace analyses (--trace),\n"
      "allocator snapshots (--memory), jitter recordings (--jitter), trtexec logs (--trt).\n"
      "Without an NVIDIA GPU the report says so and is built from the snapshot recorded on an H200 that ships with\n"
      "gpusqueeze, labelled as such. Open OUT/index.html in any browser: it has no external resources.");
  add_snapshot_options(*cmd, o->snap, true);
  cmd->add_option("-o,--out", o->out_dir, "Report folder")->capture_default_str();
  cmd->add_option("--bench", o->bench_files, "Add a bench run (gpusqueeze.bench/1) as the baseline section")
      ->check(CLI::ExistingFile);
  cmd->add_option("--trace", o->trace_files, "Add the analysis of a trace (Kineto JSON)")->check(CLI::ExistingFile);
  cmd->add_option("--memory", o->memory_files, "Add a PyTorch allocator snapshot (torch.cuda.memory._dump_snapshot)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--jitter", o->jitter_files, "Add a jitter recording (gpusqueeze jitter -o, .gsqt)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--trt", o->trt_files, "Add a TensorRT audit of a trtexec log")->check(CLI::ExistingFile);
  return [o]() {
    gpu::Snapshot s;
    std::string provenance;
    std::optional<std::filesystem::path> bundled_dir;  // set when showing the H200 files instead of this machine
    try {
      s = acquire_snapshot(o->snap, true);
      provenance =
          o->snap.snapshot_file.empty()
              ? fmt::format("Live on {} at {}.", s.host.hostname.ok() ? *s.host.hostname : "this host", s.captured_at)
              : fmt::format("Replayed from {} (recorded at {} on {}).", o->snap.snapshot_file, s.captured_at,
                            s.host.hostname.ok() ? *s.host.hostname : "an unnamed host");
    } catch (const Error& e) {
      if (e.code() != ExitCode::no_gpu) throw;
      const auto bundled = bundled_snapshot();
      if (!bundled) throw;
      note(std::string(e.what()));
      note(fmt::format(
          "this machine has no usable NVIDIA GPU; the report shows the bundled snapshot recorded on an H200 "
          "({}) instead",
          bundled->string()));
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
    r.sections.push_back(report::environment_section(s, env::fingerprint(env::locked_fields(s))));
    r.sections.push_back(report::doctor_section(findings));
    std::vector<std::string> bench_files = o->bench_files, trace_files = o->trace_files;
    if (bundled_dir) {
      // Show what the later steps produce, from files recorded on the H200 that ship with gpusqueeze.
      const auto& dir = *bundled_dir;
      if (bench_files.empty() && std::filesystem::exists(dir / "h200-bench-d2d.json"))
        bench_files.push_back((dir / "h200-bench-d2d.json").string());
      if (trace_files.empty() && std::filesystem::exists(dir / "torch-host-slow.json.gz"))
        trace_files.push_back((dir / "torch-host-slow.json.gz").string());
    }
    for (const auto& f : bench_files) r.sections.push_back(bench_section_of(bench::load_run(f), f));
    for (const auto& f : trace_files)
      r.sections.push_back(analysis_section_of(analyze::analyze(analyze::load_trace(f))));
    for (const auto& f : o->memory_files)
      r.sections.push_back(memory_section_of(triage::analyze_memory(triage::read_memory_snapshot(f))));
    for (const auto& f : o->jitter_files) {
      const auto t = trace::read_trace(f);
      r.sections.push_back(jitter_section_of(triage::analyze_jitter(t), t));
    }
    for (const auto& f : o->trt_files)
      r.sections.push_back(
          trt_section_of(triage::audit_trt(triage::parse_trtexec_log(read_text_file(f), f, true), {}, {}, {}),
                         std::filesystem::path(f).filename().string()));
    report::write_report(r, o->out_dir);
    std::cout << fmt::format("report written to {}/index.html (also report.md, report.json)\n{}\n", o->out_dir,
                             provenance);
    std::cout << fmt::format("doctor: worst finding {}\n", to_string(worst(findings)));
    return 0;
  };
}

}  // namespace gsq::cli
