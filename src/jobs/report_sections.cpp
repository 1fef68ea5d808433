// The report's sections built from each kind of input: bench runs, trace analyses, allocator snapshots, jitter
// recordings, TensorRT audits, PyTorch comparisons, P2P measurements, topology, NCCL logs, the tune profile.
#include "jobs/report_sections.hpp"

#include "analyze/analysis.hpp"
#include "bench/runner.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/table.hpp"
#include "report/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

namespace gsq::jobs {

namespace {
// A section's identity: its id (the page anchor and report.json key), title, step and the command that shows more.
report::Section section(std::string id, std::string title, int step, std::string more) {
  report::Section s;
  s.id = std::move(id);
  s.title = std::move(title);
  s.step = step;
  s.more = std::move(more);
  return s;
}

// The method's step a bench run belongs to, by its suite: the probes measure step 3's ceilings, the kernels step 4's.
int step_of_suite(const std::string& suite) {
  if (suite == "mem" || suite == "l2" || suite == "pcie" || suite == "overlap" || suite == "launch" || suite == "alloc")
    return 3;
  if (suite == "kernels" || suite == "quant") return 4;
  if (suite == "p2p" || suite == "nccl") return 5;
  return 1;
}

// The kernels suite against its own reference: each kernel's best throughput over cudaMemcpy's in the same run (the
// measure the kernels are built to), the range when there are several; empty without a memcpy row.
std::string kernels_headline(const std::vector<bench::Ceiling>& cs) {
  const auto ref =
      std::find_if(cs.begin(), cs.end(), [](const auto& c) { return c.name.find("memcpy") != std::string::npos; });
  if (ref == cs.end() || ref->bytes_per_s <= 0) return {};
  double lo = 1e300, hi = 0;
  const bench::Ceiling* lowest = nullptr;
  size_t n = 0;
  for (const auto& c : cs) {
    if (&c == &*ref || c.bytes_per_s <= 0) continue;
    const double x = c.bytes_per_s / ref->bytes_per_s;
    if (x < lo) lowest = &c;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    ++n;
  }
  if (n == 0) return {};
  if (n == 1)
    return fmt::format("{} {:.0f} GB/s = {:.3f}× cudaMemcpy in the same run", lowest->name, lowest->bytes_per_s / 1e9,
                       lo);
  return fmt::format("{} kernels at {:.2f}–{:.2f}× cudaMemcpy in the same run (lowest: {})", n, lo, hi, lowest->name);
}
}  // namespace

namespace {
// gpusqueeze's own variables (GSQ_KERNELS_LIBRARY, ...) name files of its install on the machine that recorded the run:
// the page names them by file name only, never by that machine's path (nor relative to this machine's directory, which
// has nothing to do with it).
nlohmann::json without_local_paths(nlohmann::json run) {
  if (run.contains("env_fields") && run["env_fields"].is_object())
    for (auto& [key, value] : run["env_fields"].items())
      if (key.starts_with("host.env.GSQ_") && value.is_string() && value.get<std::string>().starts_with("/"))
        value = std::filesystem::path(value.get<std::string>()).filename().string();
  return run;
}
}  // namespace

report::Section bench_section_of(const bench::Run& run, const std::string& origin) {
  const Table t = bench::results_table(run);
  auto sec = report::bench_section(
      fmt::format("{} ({})", run.suite, origin), t.header, t.rows,
      {fmt::format("suite {} on {} at {}, fingerprint {}.", run.suite, run.gpu_name, run.created_at, run.fingerprint)},
      without_local_paths(bench::to_json(run, false)));
  sec.more = fmt::format("gpusqueeze compare {} NEW.json", origin);
  sec.step = step_of_suite(run.suite);
  if (sec.step != 1) {
    sec.id = "bench-" + run.suite;
    sec.title = fmt::format("Step {} — {}: {} ({})", sec.step, report::step_name(sec.step), run.suite, origin);
  }
  std::vector<report::Bar> bars;
  const auto ceilings = bench::ceilings(run);
  if (run.suite == "kernels") sec.headline = kernels_headline(ceilings);
  for (const auto& c : ceilings)
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
  if (const auto& c = a.critical_path; c.ok) {
    sec.notes.push_back(
        fmt::format("Critical path ({}): host work {:.1f}%, CPU ops {:.1f}%, waiting on kernels {:.1f}%, waiting on "
                    "copies {:.1f}%. "
                    "`gpusqueeze analyze --what-if sync,pinned,fuse,graphs,host {}` predicts what each fix would save.",
                    c.model, 100 * c.host_share, 100 * c.cpu_ops_share, 100 * c.wait_kernels_share,
                    100 * c.wait_copies_share, a.origin));
    sec.figures_svg.push_back(report::stacked_svg("Critical path of the launching thread (" + c.verdict + ")",
                                                  {{"host work (Python, input preparation)", c.host_share},
                                                   {"CPU ops (dispatch, launches)", c.cpu_ops_share},
                                                   {"waiting on kernels", c.wait_kernels_share},
                                                   {"waiting on copies", c.wait_copies_share}}));
  } else if (!c.why.empty()) {
    sec.notes.push_back("Critical path not judged: " + c.why);
  }
  sec.headline =
      fmt::format("{}{}, {:.1f}% of wall", a.verdict.cls,
                  a.verdict.subclass.empty() || a.verdict.subclass == "unknown" ? "" : " (" + a.verdict.subclass + ")",
                  100 * a.verdict.share);
  return sec;
}
namespace {
std::string mib(uint64_t bytes) {
  return fmt::format("{:.1f}", static_cast<double>(bytes) / (1 << 20));
}
}  // namespace

report::Section memory_section_of(const triage::MemoryReport& m) {
  auto sec = section("memory", "Field triage — PyTorch allocator: " + m.origin, report::kTriageStep,
                     "gpusqueeze memory " + m.origin);
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
  // Per GPU: each device is a separate pool of memory, so a sum over them is no GPU's figure.
  std::string per_gpu;
  for (const auto& d : m.devices)
    per_gpu += fmt::format("{}GPU {} {} MiB reserved, {:.1f}% fragmented", per_gpu.empty() ? "" : "; ", d.device,
                           mib(d.reserved), 100 * d.ratio(d.fragmented));
  sec.headline = "allocator: " + (per_gpu.empty() ? std::string("no GPU memory in the snapshot") : per_gpu);
  return sec;
}

report::Section oom_section_of(const triage::OomReport& r) {
  auto sec = section("memory", "Field triage — CUDA out of memory: " + r.origin, report::kTriageStep,
                     "gpusqueeze memory " + r.origin);
  const Table t = triage::oom_table(r, 8);
  if (!t.rows.empty()) sec.tables.emplace_back("Each OOM message's figures (gpusqueeze memory for all of them)", t);
  sec.findings = r.findings;
  sec.data = triage::to_json(r);
  // Per message, per GPU: never summed across the ranks that printed them.
  sec.headline = r.findings.empty()
                     ? std::string("out of memory")
                     : "out of memory: " + r.findings.front().id.substr(4) +
                           (r.messages.size() > 1 ? fmt::format(" ({} messages)", r.messages.size()) : std::string());
  return sec;
}

report::Section jitter_section_of(const triage::JitterReport& j, const trace::TraceFile& t) {
  auto sec = section("jitter", "Field triage — clock jitter: " + j.origin, report::kTriageStep,
                     "gpusqueeze jitter " + j.origin);
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
  auto sec =
      section("trt", "Field triage — TensorRT: " + origin, report::kTriageStep, "gpusqueeze trt audit " + origin);
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

namespace {
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

// `kernels --torch` output (gpusqueeze.torch_compare/1): ours against PyTorch eager and torch.compile, with
// cudaMemcpy as the ceiling, per operator and width. Fields of the wrong type throw nlohmann's exceptions.
report::Section torch_section(const nlohmann::json& j, const std::string& origin) {
  auto sec = section("torch", "Step 4 — compute: our kernels against PyTorch (" + origin + ")", 4,
                     "gpusqueeze kernels --torch");
  if (!j.contains("rows") || !j["rows"].is_array())
    throw_bad_input(fmt::format("{}: no rows (not gpusqueeze.torch_compare/1)", origin));
  Table t{{"operator", "width / shape", "ours GB/s", "torch.compile", "eager", "cudaMemcpy", "ours / compile"}, {}};
  std::vector<std::pair<std::string, std::vector<double>>> groups;
  int ahead = 0, rows = 0;
  for (const auto& r : j["rows"]) {
    const std::string op = r.value("op", "?");
    const std::string where = r.contains("cols") && r["cols"].is_number()
                                  ? std::to_string(r["cols"].get<int64_t>())
                                  : (r.contains("shape") ? r["shape"].dump() : "");
    const double ours = r.value("ours_gbps", 0.0), compile = r.value("compile_gbps", 0.0);
    t.rows.push_back({op, where, fmt::format("{:.0f}", ours), fmt::format("{:.0f}", compile),
                      fmt::format("{:.0f}", r.value("eager_gbps", 0.0)),
                      fmt::format("{:.0f}", r.value("copy_gbps", 0.0)),
                      compile > 0 ? fmt::format("{:.3f}", ours / compile) : "-"});
    ++rows;
    ahead += compile > 0 && ours >= compile;
    // The chart: each operator at width 4096, and the first layout shape.
    const bool layout_first = !r.contains("cols") && std::none_of(groups.begin(), groups.end(), [&](const auto& g) {
      return g.first.starts_with(op);
    });
    if (where == "4096" || layout_first)
      groups.push_back({op + (where == "4096" ? " 4096" : ""),
                        {r.value("copy_gbps", 0.0), ours, compile, r.value("eager_gbps", 0.0)}});
  }
  sec.tables.emplace_back("bf16, GB/s of bytes read + written, median of shuffled rounds", t);
  sec.figures_svg.push_back(report::grouped_bars_svg(
      "Ours against PyTorch", {"cudaMemcpy", "ours", "torch.compile", "eager"}, groups, "GB/s (bytes read + written)"));
  sec.notes.push_back(fmt::format("Recorded on {} with PyTorch {}.", j.value("gpu", "a GPU"), j.value("torch", "?")));
  sec.headline = fmt::format("ours ≥ torch.compile in {} of {} configurations", ahead, rows);
  sec.data = {{"gpu", j.value("gpu", "")}, {"torch", j.value("torch", "")}, {"rows", j["rows"]}};
  for (auto& r : sec.data["rows"]) r.erase("library");  // a path of the machine that measured
  return sec;
}
}  // namespace

report::Section torch_section_of(const nlohmann::json& j, const std::string& origin) {
  try {
    return torch_section(j, origin);
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type
    throw_bad_input(fmt::format("{}: not a gpusqueeze.torch_compare/1 document: {}", origin, e.what()));
  }
}

report::Section p2p_section_of(const topo::P2pResult& p, const std::string& origin) {
  auto sec = section("p2p", "Step 5 — multi-GPU: P2P copies " + origin, 5, "gpusqueeze probe p2p");
  sec.notes = p.notes;
  std::vector<std::string> labels;
  for (int i = 0; i < p.gpus; ++i) labels.push_back(fmt::format("GPU{}", i));
  double lo = 1e300;
  const struct {
    const std::vector<std::vector<double>>* m;
    const char *title, *spec;
  } maps[] = {{&p.uni_gbs, "P2P copy engine, one way (GB/s)", "{:.0f}"},
              {&p.bi_gbs, "P2P copy engine, both ways (GB/s)", "{:.0f}"},
              {&p.sm_uni_gbs, "P2P SM copy kernel, one way (GB/s)", "{:.0f}"},
              {&p.sm_latency_us, "P2P store latency, SM ping-pong, one way (µs)", "{:.2f}"}};
  for (const auto& [m, title, spec] : maps) {
    if (m->empty()) continue;
    std::vector<std::vector<std::string>> text;
    for (size_t i = 0; i < m->size(); ++i) {
      text.emplace_back();
      for (size_t j = 0; j < (*m)[i].size(); ++j) {
        text.back().push_back((*m)[i][j] > 0 ? fmt::format(fmt::runtime(spec), (*m)[i][j]) : "-");
        if (i != j && m == &p.uni_gbs) lo = std::min(lo, (*m)[i][j]);
      }
    }
    sec.figures_svg.push_back(report::heatmap_svg(
        title, labels, *m, text,
        "rows: source, columns: destination; diagonal: within the GPU (for latency: two SMs through L2)"));
  }
  sec.data = topo::to_json(p);
  sec.headline = lo < 1e300 ? fmt::format("P2P: slowest pair {:.0f} GB/s one way", lo) : "P2P: one GPU";
  return sec;
}

report::Section topo_section_of(const topo::TopoMatrix& m, const std::string& origin) {
  auto sec = section("topo", "Step 5 — multi-GPU: topology " + origin, 5, "gpusqueeze topo --from " + origin);
  sec.findings = topo::topo_findings(m);
  sec.data = topo::to_json(m, sec.findings);
  sec.headline = fmt::format("topology: {} GPU(s), {} NIC(s)", m.gpus().size(), m.nics().size());
  sec.notes.push_back("The matrix as pasted; `gpusqueeze topo --from` prints it with the link legend.");
  sec.figures_svg.push_back(topo_heatmap(m));
  return sec;
}

report::Section nccl_section_of(const topo::NcclLog& log, const std::string& origin) {
  auto sec = section("nccl", "Step 5 — multi-GPU: NCCL " + origin, 5, "gpusqueeze nccl analyze " + origin);
  sec.findings = topo::nccl_findings(log);
  sec.data = topo::to_json(log, sec.findings);
  if (log.rows.size() >= 2) {  // nccl-tests' table: bus bandwidth over the sweep, out-of-place and in-place
    std::vector<double> bytes, out, in;
    for (const auto& r : log.rows) {
      bytes.push_back(static_cast<double>(r.bytes));
      out.push_back(r.busbw[0]);
      in.push_back(r.busbw[1]);
    }
    sec.figures_svg.push_back(
        report::sweep_svg(fmt::format("{} busbw over the sweep", log.test.empty() ? "nccl-tests" : log.test), bytes,
                          {{"out-of-place", out}, {"in-place", in}}, "GB/s (nccl-tests' bus bandwidth)"));
  }
  sec.headline = fmt::format("NCCL log: {} finding(s) to read",
                             std::count_if(sec.findings.begin(), sec.findings.end(),
                                           [](const Finding& f) { return f.severity >= Severity::warn; }));
  return sec;
}
report::Section tune_section_of(const TuneView& v) {
  auto sec = section("tune", "Step 6 — tuning: " + v.name + " on this machine", 6, "gpusqueeze tune verify " + v.name);
  sec.notes.push_back(v.note);
  Table t{{"setting", "status", "actual", "expected", "detail"}, {}};
  for (const auto& c : v.checks) t.rows.push_back({c.id, tune::status_name(c.status), c.actual, c.expected, c.detail});
  sec.tables.emplace_back("Every setting of the profile (skipped: the knob does not exist here)", std::move(t));
  sec.findings = tune_findings(v);
  sec.data = {{"profile", v.name}, {"checks", tune::to_json(v.checks)}};
  sec.headline = tune_headline(v);
  return sec;
}

report::Section label_recorded_on(report::Section sec, const std::string& gpu, const gpu::Snapshot& s) {
  if (gpu.empty() ||
      std::any_of(s.gpus.begin(), s.gpus.end(), [&](const auto& g) { return g.name.ok() && *g.name == gpu; }))
    return sec;
  sec.recorded_on = gpu;
  sec.title += " (recorded on " + gpu + ")";
  return sec;
}

}  // namespace gsq::jobs

namespace gsq::jobs {

namespace {
std::string ms(double ns) {
  return fmt::format("{:.3f} ms", ns / 1e6);
}
std::string ms_ci(const stats::Interval& ci) {
  return fmt::format("{:.3f}–{:.3f}", ci.lo / 1e6, ci.hi / 1e6);
}
}  // namespace

report::Section program_baseline_section_of(const program::ProgramResult& r) {
  auto sec = section("program-baseline", "Step 1 — baseline of the program: " + r.command, 1,
                     "gpusqueeze report --runs N -- " + r.command);
  const auto& s = r.steps;
  Table runs{{"run", "how it ended", "wall", "steps", "step P50"}, {}};
  for (const auto& x : r.runs) {
    const auto st = program::summarize_steps({x.steps.ns});
    runs.rows.push_back({x.phase + (x.phase == "baseline" ? " (NVTX ranges only)"
                                    : x.phase == "traced" ? " (gpusqueeze trace)"
                                                          : " (allocator history)"),
                         x.how_it_ended(), fmt::format("{:.2f} s", x.wall_s), std::to_string(x.steps.ns.size()),
                         st.ok() ? ms(st.steady.p50) : "-"});
  }
  if (s.ok()) {
    Table t{{"", "P50", "P90", "P99", "mean", "min", "max"}, {}};
    t.rows.push_back({fmt::format("steady ({} steps)", s.steady.n), ms(s.steady.p50), ms(s.steady.p90),
                      ms(s.steady.p99), ms(s.steady.mean), ms(s.steady.min), ms(s.steady.max)});
    t.rows.push_back({"95% interval", ms_ci(s.p50_ci), ms_ci(s.p90_ci), ms_ci(s.p99_ci), "", "", ""});
    sec.tables.emplace_back("Step times of the untraced program (" + std::string(program::to_string(r.source)) + ")",
                            t);
    sec.headline =
        fmt::format("step P50 {} (95% {} ms), P99 {} over {} steady steps{}", ms(s.steady.p50), ms_ci(s.p50_ci),
                    ms(s.steady.p99), s.steady.n, s.warmup ? fmt::format(", {} warm-up", s.warmup) : "");
  } else {
    sec.headline = "no step timed";
  }
  sec.tables.emplace_back("Runs", runs);
  sec.notes.push_back("Steps: " + r.how + ".");
  if (s.warmup)
    sec.notes.push_back(fmt::format(
        "Warm-up: the first {} step(s) ({} in all) ran over {:.1f}× the steady median and are left out of the "
        "percentiles (cuDNN's algorithm search, the allocator's first growth, lazily loaded kernels).",
        s.warmup, ms(s.warmup_ns), program::kWarmupFactor));
  if (s.ok() && s.steady.n < 30)
    sec.notes.push_back(fmt::format(
        "Only {} steady steps: P99 is the slowest of them; run more steps or --runs N for a tail you can trust.",
        s.steady.n));
  for (const auto& n : r.notes) sec.notes.push_back(n);
  if (r.program_failed()) {
    const auto& last = *std::find_if(r.runs.begin(), r.runs.end(),
                                     [](const program::RunOutcome& x) { return x.failed() && !x.timed_out; });
    sec.findings.push_back(make_finding(
        "program-failed", Severity::fail,
        fmt::format("the program failed in its {} run ({})", last.phase, last.how_it_ended()), {{"command", r.command}},
        "run the program alone and fix what it prints; report measures a program that works",
        "the program's exit status", 1, "program"));
  }
  sec.data = program::to_json(r);
  sec.data.erase("analysis");
  sec.data.erase("what_if");
  return sec;
}

std::optional<report::Section> program_analysis_section_of(const program::ProgramResult& r) {
  if (!r.analysis) return std::nullopt;
  auto a = *r.analysis;
  const double untraced = r.steps.ok() && r.source != program::StepSource::process ? r.steps.steady.p50 : 0.0;
  // Each predicted saving as the untraced step it leaves: what the user will see after the fix.
  if (untraced > 0)
    for (auto& f : a.findings)
      if (f.saving_ratio && *f.saving_ratio > 0 && (f.severity == Severity::warn || f.severity == Severity::fail)) {
        // A replayed fix is a prediction; a finding's own estimate is what the fix could save at most.
        const bool predicted = std::any_of(f.evidence.begin(), f.evidence.end(), [](const Evidence& e) {
          return e.name == "saving_kind" && e.value == "predicted";
        });
        f.title += fmt::format(" — untraced step {} → {} {}", ms(untraced), ms(untraced * (1 - *f.saving_ratio)),
                               predicted ? "predicted" : "at best");
        // A fix the replay leaves host- or launch-bound: a recording cannot tell how much of the host's time the
        // recorder added, so the step after it lies down to the GPU's floor; say so where the two differ by 10%.
        const auto fix =
            std::find_if(f.evidence.begin(), f.evidence.end(), [](const Evidence& e) { return e.name == "what_if"; });
        if (!predicted || fix == f.evidence.end() || !r.what_if || r.what_if->baseline.step_p50_ns <= 0) continue;
        const auto& rows = r.what_if->rows;
        const auto row = std::find_if(rows.begin(), rows.end(), [&](const auto& w) { return w.fixes == fix->value; });
        if (row != rows.end() && row->critical != "gpu-bound" && row->floor_p50_ns > 0 &&
            static_cast<double>(row->floor_p50_ns) < 0.9 * static_cast<double>(row->step_p50_ns))
          f.title += fmt::format(" ({} where the GPU sets the step after it)",
                                 ms(untraced * static_cast<double>(row->floor_p50_ns) /
                                    static_cast<double>(r.what_if->baseline.step_p50_ns)));
      }
  auto sec = analysis_section_of(a);
  sec.id = "program-analysis";
  sec.title = "Step 2 — where the program's time goes: " + r.command;
  sec.more = "gpusqueeze analyze --what-if sync,pinned,fuse,graphs,host,layout,prefetch " +
             (r.trace_file ? report::display_name(*r.trace_file) : std::string("TRACE"));
  if (r.untraced_step_ns > 0)
    sec.notes.insert(
        sec.notes.begin(),
        fmt::format("Calibrated to the untraced run: the traced steps took {} at P50, the untraced {}; the "
                    "analysis takes the recorder's cost out so that its step is {} (analyze "
                    "--untraced-step {:.3f}).",
                    ms(r.traced_p50_ns), ms(r.steps.steady.p50), ms(static_cast<double>(r.untraced_step_ns)),
                    static_cast<double>(r.untraced_step_ns) / 1e6));
  if (r.what_if && r.what_if->baseline.ok) {
    const auto& w = *r.what_if;
    const double base = static_cast<double>(w.baseline.step_p50_ns);
    Table t{{"fix", "predicted step P50", "saving", "then bound by"}, {}};
    t.rows.push_back({"as it runs (replayed)", ms(base), "", analyze::critical_verdict(w.baseline.path)});
    for (const auto& row : w.rows)
      t.rows.push_back({row.fixes, ms(static_cast<double>(row.step_p50_ns)),
                        fmt::format("{:.1f}%", 100 * row.saving_ratio), row.critical});
    sec.tables.insert(sec.tables.begin(),
                      {"Predicted step after each fix (the replay of the traced run, recorder's cost taken out)", t});
  }
  return sec;
}

}  // namespace gsq::jobs
