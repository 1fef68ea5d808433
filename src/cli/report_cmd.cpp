// `gpusqueeze report`: every step for this machine on one page (index.html, report.md, report.json).
#include "cli/common.hpp"
#include "cli/report_measure.hpp"
#include "cli/tune_view.hpp"

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

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

namespace gsq::cli {

namespace {
struct ReportOptions {
  SnapshotOptions snap;
  std::string out_dir = "gsq-report";
  std::string compare_file, tune_file;
  double budget_s = 120;  // what report may spend measuring a live GPU
  std::vector<std::string> bench_files, trace_files, memory_files, jitter_files, trt_files, topo_files, nccl_files;
};

// The method's step a bench run belongs to, by its suite: the probes measure step 3's ceilings, the kernels step 4's.
int step_of_suite(const std::string& suite) {
  if (suite == "mem" || suite == "l2" || suite == "pcie" || suite == "overlap" || suite == "launch" || suite == "alloc")
    return 3;
  if (suite == "kernels" || suite == "quant") return 4;
  if (suite == "p2p" || suite == "nccl") return 5;
  return 1;
}

report::Section bench_section_of(const bench::Run& run, const std::string& origin) {
  const Table t = bench::results_table(run);
  auto sec = report::bench_section(
      fmt::format("{} ({})", run.suite, origin), t.header, t.rows,
      {fmt::format("suite {} on {} at {}, fingerprint {}.", run.suite, run.gpu_name, run.created_at, run.fingerprint)},
      bench::to_json(run, false));
  sec.more = fmt::format("gpusqueeze compare {} NEW.json", origin);
  sec.step = step_of_suite(run.suite);
  if (sec.step != 1) {
    sec.id = "bench-" + run.suite;
    sec.title = fmt::format("Step {} — {}: {} ({})", sec.step, report::step_name(sec.step), run.suite, origin);
  }
  std::vector<report::Bar> bars;
  for (const auto& c : bench::ceilings(run))
    if (c.peak_bytes_per_s > 0) {
      bars.push_back({c.name, c.bytes_per_s, c.peak_bytes_per_s});
      if (sec.headline.empty())
        sec.headline = fmt::format("{} {:.0f} GB/s = {:.1f}% of {}", c.name, c.bytes_per_s / 1e9,
                                   100 * c.bytes_per_s / c.peak_bytes_per_s, c.peak_name);
    }
  if (sec.headline.empty()) sec.headline = fmt::format("{} results, suite {}", run.results.size(), run.suite);
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
  // The summary names the class itself ("sync-bound: 66.5% of the wall time ..."); it is not repeated before it.
  auto sec = report::analysis_section(a.origin, "Verdict: " + a.verdict.summary, analyze::breakdown_table(a),
                                      analyze::kernels_table(a, 8), a.findings, analyze::to_json(a));
  if (const auto& c = a.critical_path; c.is_object() && c.value("ok", false))
    sec.notes.push_back(
        fmt::format("Critical path ({}): host work {:.1f}%, CPU ops {:.1f}%, waiting on kernels {:.1f}%, waiting on "
                    "copies {:.1f}%. "
                    "`gpusqueeze analyze --what-if sync,pinned,fuse,graphs,host {}` predicts what each fix would save.",
                    c.value("model", ""), 100 * c.value("host_share", 0.0), 100 * c.value("cpu_ops_share", 0.0),
                    100 * c.value("wait_kernels_share", 0.0), 100 * c.value("wait_copies_share", 0.0), a.origin));
  if (const auto& c = a.critical_path; c.is_object() && c.value("ok", false))
    sec.figures_svg.push_back(
        report::stacked_svg("Critical path of the launching thread (" + c.value("verdict", std::string()) + ")",
                            {{"host work (Python, input preparation)", c.value("host_share", 0.0)},
                             {"CPU ops (dispatch, launches)", c.value("cpu_ops_share", 0.0)},
                             {"waiting on kernels", c.value("wait_kernels_share", 0.0)},
                             {"waiting on copies", c.value("wait_copies_share", 0.0)}}));
  else if (c.is_object() && c.contains("why"))
    sec.notes.push_back("Critical path not judged: " + c.value("why", std::string()));
  sec.headline =
      fmt::format("{}{}, {:.1f}% of wall", a.verdict.cls,
                  a.verdict.subclass.empty() || a.verdict.subclass == "unknown" ? "" : " (" + a.verdict.subclass + ")",
                  100 * a.verdict.share);
  return sec;
}
std::string mib(uint64_t bytes) {
  return fmt::format("{:.1f}", static_cast<double>(bytes) / (1 << 20));
}

report::Section memory_section_of(const triage::MemoryReport& m) {
  report::Section sec;
  sec.id = "memory";
  sec.title = "Field triage — PyTorch allocator: " + m.origin;
  sec.step = report::kTriageStep;
  sec.more = "gpusqueeze memory " + m.origin;
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
  uint64_t reserved = 0, fragmented = 0;
  for (const auto& d : m.devices) reserved += d.reserved, fragmented += d.fragmented;
  sec.headline = fmt::format("allocator: {} MiB reserved, {:.1f}% fragmented", mib(reserved),
                             reserved ? 100.0 * static_cast<double>(fragmented) / static_cast<double>(reserved) : 0.0);
  return sec;
}

report::Section jitter_section_of(const triage::JitterReport& j, const trace::TraceFile& t) {
  report::Section sec;
  sec.id = "jitter";
  sec.title = "Field triage — clock jitter: " + j.origin;
  sec.step = report::kTriageStep;
  sec.more = "gpusqueeze jitter " + j.origin;
  sec.headline = fmt::format("clocks: {} finding(s) over {} GPU(s)", j.findings.size(), j.gpus.size());
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
  sec.step = report::kTriageStep;
  sec.more = "gpusqueeze trt audit " + origin;
  sec.headline = fmt::format("TensorRT: {} run(s) audited", a.runs.size());
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

// GPU-to-GPU links as a heat map: NVLink (more links greener) above PCIe switch (PIX, PXB), host bridge (PHB), NUMA
// node (NODE) and across sockets (SYS).
std::string topo_heatmap(const topo::TopoMatrix& m) {
  const auto gpus = m.gpus();
  std::vector<std::vector<double>> v(gpus.size(), std::vector<double>(gpus.size(), -1));
  std::vector<std::vector<std::string>> text(gpus.size(), std::vector<std::string>(gpus.size()));
  static const std::map<std::string, double> kRank{{"SYS", 0}, {"NODE", 1}, {"PHB", 2}, {"PXB", 3}, {"PIX", 4}};
  for (size_t i = 0; i < gpus.size(); ++i)
    for (size_t j = 0; j < gpus.size(); ++j) {
      const auto it = m.link.find({gpus[i], gpus[j]});
      const std::string l = it == m.link.end() ? "" : it->second;
      text[i][j] = l;
      if (l.starts_with("NV") && l.size() > 2)
        v[i][j] = 5 + std::atof(l.c_str() + 2) / 18.0;
      else if (const auto r = kRank.find(l); r != kRank.end())
        v[i][j] = r->second;
    }
  return report::heatmap_svg(m.p2p_status ? "GPU-to-GPU peer-to-peer status" : "GPU-to-GPU links", gpus, v, text,
                             "NV# = NVLink (# links); PIX, PXB = through PCIe switches; PHB = the host bridge; "
                             "NODE, SYS = through the CPU (one NUMA node, across sockets)");
}

report::Section p2p_section_of(const topo::P2pResult& p) {
  report::Section sec;
  sec.id = "p2p";
  sec.title = "Step 5 — multi-GPU: P2P copies measured now";
  sec.step = 5;
  sec.more = "gpusqueeze probe p2p";
  sec.notes = p.notes;
  std::vector<std::string> labels;
  for (int i = 0; i < p.gpus; ++i) labels.push_back(fmt::format("GPU{}", i));
  double lo = 1e300;
  for (const auto* m : {&p.uni_gbs, &p.bi_gbs}) {
    std::vector<std::vector<std::string>> text;
    for (size_t i = 0; i < m->size(); ++i) {
      text.emplace_back();
      for (size_t j = 0; j < (*m)[i].size(); ++j) {
        text.back().push_back(fmt::format("{:.0f}", (*m)[i][j]));
        if (i != j && m == &p.uni_gbs) lo = std::min(lo, (*m)[i][j]);
      }
    }
    sec.figures_svg.push_back(
        report::heatmap_svg(m == &p.uni_gbs ? "P2P copy, one way (GB/s)" : "P2P copy, both ways (GB/s)", labels, *m,
                            text, "rows: source, columns: destination; diagonal: a copy within the GPU"));
  }
  sec.data = topo::to_json(p);
  sec.headline = lo < 1e300 ? fmt::format("P2P: slowest pair {:.0f} GB/s one way", lo) : "P2P: one GPU";
  return sec;
}

report::Section topo_section_of(const topo::TopoMatrix& m, const std::string& origin) {
  report::Section sec;
  sec.id = "topo";
  sec.title = "Step 5 — multi-GPU: topology " + origin;
  sec.step = 5;
  sec.more = "gpusqueeze topo --from " + origin;
  sec.findings = topo::topo_findings(m);
  sec.data = topo::to_json(m, sec.findings);
  sec.headline = fmt::format("topology: {} GPU(s), {} NIC(s)", m.gpus().size(), m.nics().size());
  sec.notes.push_back("The matrix as pasted; `gpusqueeze topo --from` prints it with the link legend.");
  sec.figures_svg.push_back(topo_heatmap(m));
  return sec;
}

report::Section nccl_section_of(const topo::NcclLog& log, const std::string& origin) {
  report::Section sec;
  sec.id = "nccl";
  sec.title = "Step 5 — multi-GPU: NCCL " + origin;
  sec.step = 5;
  sec.more = "gpusqueeze nccl analyze " + origin;
  sec.findings = topo::nccl_findings(log);
  sec.data = topo::to_json(log, sec.findings);
  sec.headline = fmt::format("NCCL log: {} finding(s) to read",
                             std::count_if(sec.findings.begin(), sec.findings.end(),
                                           [](const Finding& f) { return f.severity >= Severity::warn; }));
  return sec;
}
report::Section tune_section_of(const TuneView& v) {
  report::Section sec;
  sec.id = "tune";
  sec.title = "Step 6 — tuning: " + v.name + " on this machine";
  sec.step = 6;
  sec.more = "gpusqueeze tune verify " + v.name;
  sec.notes.push_back(v.note);
  Table t{{"setting", "status", "actual", "expected", "detail"}, {}};
  for (const auto& c : v.checks) t.rows.push_back({c.id, tune::status_name(c.status), c.actual, c.expected, c.detail});
  sec.tables.emplace_back("Every setting of the profile (skipped: the knob does not exist here)", std::move(t));
  sec.findings = tune_findings(v);
  sec.data = {{"profile", v.name}, {"checks", tune::to_json(v.checks)}};
  sec.headline = tune_headline(v);
  return sec;
}
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
      "gpusqueeze, labelled as such. Open OUT/index.html in any browser: it has no external resources.");
  add_snapshot_options(*cmd, o->snap, true);
  cmd->add_option("-o,--out", o->out_dir, "Report folder")->capture_default_str();
  cmd->add_option("--budget", o->budget_s,
                  "Seconds report may spend measuring a live GPU (short runs of probe mem and pcie, bench core's "
                  "launch and GEMM, one kernel against cudaMemcpy, clocks sampled throughout); 0 measures nothing")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--bench", o->bench_files, "Add a bench run (gpusqueeze.bench/1) as the baseline section")
      ->check(CLI::ExistingFile);
  cmd->add_option("--trace", o->trace_files, "Add the analysis of a trace (Kineto JSON)")->check(CLI::ExistingFile);
  cmd->add_option("--memory", o->memory_files, "Add a PyTorch allocator snapshot (torch.cuda.memory._dump_snapshot)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--jitter", o->jitter_files, "Add a jitter recording (gpusqueeze jitter -o, .gsqt)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--trt", o->trt_files, "Add a TensorRT audit of a trtexec log")->check(CLI::ExistingFile);
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
  return [o]() {
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
    std::vector<std::string> bench_files = o->bench_files, trace_files = o->trace_files, jitter_files = o->jitter_files;
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
      if (jitter_files.empty() && std::filesystem::exists(dir / "h200-hw-matmul.gsqt"))
        jitter_files.push_back((dir / "h200-hw-matmul.gsqt").string());
    }
    // Every file is named on the page as report::display_name gives it: no absolute path of this machine.
    using report::display_name;
    for (const auto& f : bench_files) r.add(bench_section_of(bench::load_run(f), display_name(f)));
    // A live GPU: the memory and PCIe ceilings measured now, unless the user gave runs or no budget.
    if (r.this_machine && !s.gpus.empty() && o->bench_files.empty() && o->budget_s > 0) {
      std::filesystem::create_directories(o->out_dir);
      const auto live = measure_live(o->budget_s, s.gpus.size(), std::filesystem::path(o->out_dir) / "clocks.gsqt");
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
      r.add(std::move(sec));
    }
    for (const auto& f : o->memory_files) {
      auto m = triage::analyze_memory(triage::read_memory_snapshot(f));
      m.origin = display_name(f);
      r.add(memory_section_of(m));
    }
    for (const auto& f : jitter_files) {
      const auto t = trace::read_trace(f);
      auto j = triage::analyze_jitter(t);
      j.origin = display_name(f);
      r.add(jitter_section_of(j, t));
    }
    for (const auto& f : o->trt_files)
      r.add(trt_section_of(
          triage::audit_trt(triage::parse_trtexec_log(read_text_file(f), display_name(f), true), {}, {}, {}),
          display_name(f)));
    // A live machine with several GPUs: its topology through NVML (step 5), unless the user gave a saved one.
    if (r.this_machine && s.gpus.size() > 1 && o->topo_files.empty()) {
      try {
        const auto nvml = gpu::Nvml::open();
        auto live = topo::read_live_topology(nvml.api());
        auto sysfs = topo::add_sysfs_topology("/", live.bus_ids, topo::in_virtual_machine("/"), live.links);
        auto sec = topo_section_of(live.links, "(NVML and sysfs)");
        sec.more = "gpusqueeze topo";
        for (auto& f : topo::topo_findings(live.p2p)) sec.findings.push_back(std::move(f));
        for (auto& f : sysfs.findings) sec.findings.push_back(std::move(f));
        for (const auto& n : live.notes) sec.notes.push_back(n);
        for (const auto& n : sysfs.notes) sec.notes.push_back(n);
        r.add(std::move(sec));
      } catch (const Error& e) {
        note(std::string("topology not read: ") + e.what());
      }
    }
    for (const auto& f : o->topo_files)
      r.add(topo_section_of(topo::parse_topo_matrix(read_text_file(f), display_name(f)), display_name(f)));
    for (const auto& f : o->nccl_files)
      r.add(nccl_section_of(topo::parse_nccl_log(read_text_file(f), display_name(f)), display_name(f)));
    if (const auto tv = verify_tune_profile(o->tune_file, true)) r.add(tune_section_of(*tv));
    if (!o->compare_file.empty())
      r.add(report::compare_section(read_json_file(o->compare_file, report::kReportSchema), report::render_json(r),
                                    display_name(o->compare_file)));
    // The page follows the method: sections by step (field triage last), in the order given within a step.
    std::stable_sort(r.sections.begin(), r.sections.end(),
                     [](const report::Section& a, const report::Section& b) { return a.step < b.step; });
    report::write_report(r, o->out_dir);
    std::cout << fmt::format("report written to {}/index.html (also report.md, report.json)\n{}\n", o->out_dir,
                             provenance);
    std::cout << fmt::format("doctor: worst finding {}\n", to_string(worst(findings)));
    return 0;
  };
}

}  // namespace gsq::cli
