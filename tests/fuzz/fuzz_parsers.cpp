// libFuzzer targets for every parser of outside input: Kineto traces, gpusqueeze traces, snapshots, bench runs,
// PyTorch allocator snapshots (pickles) and pasted CUDA OOM errors, trtexec logs and their JSON exports, NCCL logs,
// nccl-tests output, PyTorch's Flight Recorder dumps (pickle or JSON), cuobjdump's resource usage (`occupancy`),
// topology matrices, tune profiles, coldstart's phase files and bundles, and the fleet's report.json files and PromQL
// answers. Any input must end in a result or gsq::Error (exit 2 in the CLI), never a crash, hang or sanitizer report.
// Build: cmake -DGSQ_FUZZ=ON with clang (see CONTRIBUTING.md); the CPU test suite replays the corpus without libFuzzer.
#include "analyze/analysis.hpp"
#include "analyze/gsqt.hpp"
#include "analyze/kineto.hpp"
#include "bench/runner.hpp"
#include "core/error.hpp"
#include "core/json_io.hpp"
#include "fleet/fleet.hpp"
#include "gpu/snapshot.hpp"
#include "probes/occupancy.hpp"
#include "report/report.hpp"
#include "topo/flight_recorder.hpp"
#include "topo/nccl_capture.hpp"
#include "topo/nccl_logs.hpp"
#include "topo/topo_matrix.hpp"
#include "trace/format.hpp"
#include "triage/coldstart.hpp"
#include "triage/memory.hpp"
#include "triage/oom.hpp"
#include "triage/trt_inputs.hpp"
#include "triage/trtexec.hpp"
#include "tune/profile.hpp"

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

namespace {

template <class Fn>
void guarded(Fn&& fn) {
  try {
    fn();
  } catch (const gsq::Error&) {
  }
}

}  // namespace

extern "C" int gsq_fuzz_one(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  guarded([&] {
    auto t = gsq::analyze::parse_kineto(text, "fuzz");
    (void)gsq::analyze::to_json(gsq::analyze::analyze(t));
    // As `analyze` reads a file: the steady-state window, and the recorder's correction from an untraced step.
    gsq::analyze::keep_steady_state(t);
    gsq::analyze::Thresholds th;
    th.untraced_step_ns = 1'000'000;
    (void)gsq::analyze::to_json(gsq::analyze::analyze(t, th));
  });
  guarded([&] {
    const auto file = gsq::trace::parse_trace(text, "fuzz.gsqt");
    std::ostringstream chrome;
    gsq::trace::write_chrome(file, chrome);
    auto t = gsq::analyze::from_gsqt(file);
    gsq::analyze::keep_steady_state(t);
    (void)gsq::analyze::to_json(gsq::analyze::analyze(t));
  });
  guarded([&] {
    (void)gsq::gpu::snapshot_from_json(gsq::parse_json_text(text, "fuzz", gsq::gpu::kSnapshotSchema), "fuzz");
  });
  guarded(
      [&] { (void)gsq::bench::run_from_json(gsq::parse_json_text(text, "fuzz", gsq::bench::kBenchSchema), "fuzz"); });
  guarded([&] {
    const auto snap = gsq::triage::memory_snapshot_from(gsq::parse_pickle(text, "fuzz.pickle"), "fuzz.pickle");
    (void)gsq::triage::to_json(gsq::triage::analyze_memory(snap));
  });
  guarded([&] {  // a pasted CUDA out-of-memory error
    if (gsq::triage::looks_like_oom_text(text))
      (void)gsq::triage::to_json(gsq::triage::read_oom_text(text, "fuzz.txt"));
  });
  guarded([&] {  // a Flight Recorder dump alone, then as two ranks' dumps compared
    if (!gsq::topo::looks_like_flight_recorder(text)) return;
    const auto d = gsq::topo::parse_flight_recorder(text, "fuzz_rank_0");
    (void)gsq::topo::to_json(d, gsq::topo::flight_recorder_findings({d}));
    auto other = d;
    other.rank = 1;
    for (auto& e : other.entries) e.seq += 1;
    (void)gsq::topo::flight_recorder_findings({d, other});
  });
  guarded([&] {  // `occupancy FILE`: cuobjdump --dump-resource-usage output, each kernel's occupancy on its arch
    for (const auto& k : gsq::probes::parse_resource_usage(text))
      if (const auto arch = gsq::probes::arch_limits(k.arch > 0 ? k.arch : 90))
        for (int threads : {32, 256, 1024}) (void)gsq::probes::theoretical_occupancy(*arch, threads, k.regs, k.shared);
  });
  guarded([&] {
    const auto m = gsq::topo::parse_topo_matrix(text, "fuzz.txt");
    (void)gsq::topo::to_json(m, gsq::topo::topo_findings(m));
  });
  guarded([&] {
    const auto log = gsq::topo::parse_nccl_log(text, "fuzz.log");
    (void)gsq::topo::to_json(log, gsq::topo::nccl_findings(log));
    gsq::topo::NcclRun run;  // NCCL's TUNING lines onto a run's rows
    run.ranks = 8;
    for (const auto& entry : log.tuning) run.rows.push_back({"all_gather", entry.first.second, 1, 1, 1, 0, {}, {}, 0});
    gsq::topo::annotate(run, log);
    (void)gsq::topo::collectives_off_ring(run);
  });
  try {  // a probe nccl child's JSON document (--procs, --sweep-env, the Ring run)
    auto run = gsq::topo::nccl_run_from_json(nlohmann::json::parse(text));
    (void)gsq::topo::collectives_off_ring(run);
  } catch (const nlohmann::json::exception&) {
  }
  guarded([&] {  // a saved probe p2p document (report --p2p)
    (void)gsq::topo::to_json(gsq::topo::p2p_from_json(gsq::parse_json_text(text, "fuzz", "gpusqueeze.p2p/1"), "fuzz"));
  });
  guarded([&] {
    auto runs = gsq::triage::parse_trtexec_log(text, "fuzz.log", true);
    (void)gsq::triage::to_json(gsq::triage::audit_trt(std::move(runs), {}, {}, {"x:8x1x28x28"}));
  });
  guarded([&] {  // an ONNX model's inputs, judged against a build and shown
    const auto m = gsq::triage::read_onnx(text, "fuzz.onnx");
    gsq::triage::TrtRun r;
    r.command = "trtexec --onnx=fuzz.onnx";
    r.profiles.push_back({0, m.inputs.empty() ? "x" : m.inputs[0].name, {{1, 1}, {2, 2}, {4, 4}}});
    std::vector<gsq::Finding> out;
    gsq::triage::onnx_findings(m, {r}, gsq::triage::builds_of(m, "fuzz.onnx", {r}), out);
    (void)gsq::triage::to_json(m);
    (void)gsq::triage::shape_templates({r}, &m);
  });
  guarded([&] {  // shapes read from a trace with record_shapes, and opt against them
    const auto seen = gsq::triage::shapes_from_trace(text, "fuzz.json", {{"x", {std::nullopt, 3}}, {"y", {2}}});
    gsq::triage::TrtRun r;
    r.profiles.push_back({0, "x", {{1, 3}, {8, 3}, {64, 3}}});
    std::vector<gsq::Finding> out;
    gsq::triage::opt_findings(seen, {r}, out);
    (void)gsq::triage::to_json(seen);
  });
  guarded([&] {  // a profile that reads must write back to text that reads to the same settings
    const auto p = gsq::tune::parse_profile(text, "fuzz.toml");
    const auto again = gsq::tune::parse_profile(gsq::tune::write_profile(p, "fuzz"), "again.toml");
    if (again.settings.size() != p.settings.size() || again.unsupported != p.unsupported) __builtin_trap();
    for (size_t i = 0; i < p.settings.size(); ++i)
      if (again.find(p.settings[i].id) == nullptr || again.find(p.settings[i].id)->value != p.settings[i].value)
        __builtin_trap();
  });
  guarded([&] {  // a PromQL endpoint's answer, as `fleet --prometheus` reads it
    static const auto queries = gsq::fleet::prometheus_queries({"http://p:9090", "1h", "", 1});
    (void)gsq::fleet::judge(gsq::fleet::gpus_from_prometheus(queries, std::vector<std::string>(queries.size(), text)));
  });
  guarded([&] {
    const auto j = gsq::parse_any_json(text, "fuzz.json");
    guarded([&] { (void)gsq::triage::audit_trt({}, gsq::triage::parse_trt_profile(j, "fuzz.json"), {}, {}); });
    guarded([&] { (void)gsq::triage::audit_trt({}, {}, gsq::triage::parse_trt_layers(j, "fuzz.json"), {}); });
    // An earlier report.json handed to `report --compare`.
    static const auto now = gsq::report::render_json(gsq::report::Report{});
    guarded([&] { (void)gsq::report::compare_section(j, now, "fuzz.json"); });
    guarded([&] { (void)gsq::triage::read_phase(j, "fuzz.json"); });       // coldstart's phase files
    guarded([&] { (void)gsq::fleet::gpus_from_report(j, "fuzz.json"); });  // `fleet --reports`
    guarded([&] { (void)gsq::triage::bundle_mismatches(j, {{"torch", "2.11.0"}}); });
  });
  return 0;
}

#ifdef GSQ_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return gsq_fuzz_one(data, size);
}
#endif
