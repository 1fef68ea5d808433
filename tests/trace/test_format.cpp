// Trace file: writer/reader round trip, reading a cut-off or damaged file up to its last intact chunk, and the
// Chrome export against the trace-event format's required fields.
#include "analyze/analysis.hpp"
#include "analyze/gsqt.hpp"
#include "core/error.hpp"
#include "core/json_io.hpp"
#include "trace/capture.hpp"
#include "trace/format.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

namespace gsq::trace {
namespace {

namespace fs = std::filesystem;

fs::path temp_file(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("gsq-trace-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

nlohmann::json header() {
  return {{"schema", kSchema}, {"pid", 4242}, {"rank", 1}, {"status", "tracing"}};
}

// A launch call on a CPU thread and the kernel it launched; a pageable HtoD copy and its call.
std::vector<Record> sample(Writer& w, int64_t t0, uint64_t corr) {
  Record call;
  call.kind = static_cast<uint8_t>(RecordKind::api);
  call.name = w.intern("cudaLaunchKernel");
  call.tid = 77;
  call.start_ns = t0, call.end_ns = t0 + 3000;
  call.correlation = corr;
  Record k;
  k.kind = static_cast<uint8_t>(RecordKind::kernel);
  k.name = w.intern("void gemm<float>(float*, int)");
  k.start_ns = t0 + 5000, k.end_ns = t0 + 25000;
  k.correlation = corr;
  k.stream = 7;
  k.grid[0] = 132, k.grid[1] = k.grid[2] = 1;
  k.block[0] = 256, k.block[1] = k.block[2] = 1;
  k.registers = 64, k.static_smem = 1024, k.dynamic_smem = 4096;
  Record copy_call = call;
  copy_call.name = w.intern("cudaMemcpy");
  copy_call.start_ns = t0 + 30000, copy_call.end_ns = t0 + 60000;
  copy_call.correlation = corr + 1;
  Record copy;
  copy.kind = static_cast<uint8_t>(RecordKind::memcpy);
  copy.copy_kind = 1, copy.src_kind = 1, copy.dst_kind = 3;
  copy.bytes = 1 << 20;
  copy.start_ns = t0 + 31000, copy.end_ns = t0 + 59000;
  copy.correlation = corr + 1;
  copy.stream = 7;
  return {call, k, copy_call, copy};
}

fs::path write_sample(const std::string& name, int batches, bool end) {
  const fs::path p = temp_file(name);
  Writer w(p, header());
  for (int b = 0; b < batches; ++b) {
    const auto recs = sample(w, 1'000'000 + b * 100'000, 10 + 2 * static_cast<uint64_t>(b));
    w.write_records(recs);
    w.write_stats({{"cupti_dropped_records", 0}, {"batch", b}});
  }
  if (end) w.write_end({{"cupti_dropped_records", 3}, {"cpu_dropped_records", 0}});
  return p;
}

// A counters chunk as the launcher appends it after the process ended, timestamps on CLOCK_MONOTONIC.
nlohmann::json counters_payload(int64_t mono0) {
  return {{"source", "nvml-gpm"},
          {"device", 0},
          {"interval_ms", 100},
          {"clock", "monotonic"},
          {"tracks",
           {{{"name", "sm_active"}, {"unit", "ratio"}, {"t_ns", {mono0, mono0 + 100'000'000}}, {"values", {0.5, 0.9}}},
            {{"name", "power"}, {"unit", "watts"}, {"t_ns", {mono0}}, {"values", {312.5}}}}}};
}

TEST(TraceFormat, CounterTracksAppendedAfterTheEndReadOnTheTraceClock) {
  const fs::path p = temp_file("counters.gsqt");
  {
    nlohmann::json h = header();
    h["start"] = {{"cupti_ns", 1'000'000}, {"monotonic_ns", 50'000'000}};  // CUPTI = monotonic - 49 ms
    Writer w(p, h);
    w.write_records(sample(w, 1'000'000, 10));
    w.write_end({{"cupti_dropped_records", 0}});
  }
  append_counters(p, counters_payload(50'000'000));
  const TraceFile t = read_trace(p);
  EXPECT_TRUE(t.complete);
  EXPECT_TRUE(t.truncation.empty()) << t.truncation;
  EXPECT_EQ(t.records.size(), 4u);
  ASSERT_EQ(t.counters.size(), 2u);
  EXPECT_EQ(t.counters[0].name, "sm_active");
  EXPECT_EQ(t.counters[0].source, "nvml-gpm");
  EXPECT_EQ(t.counters[0].t_ns, (std::vector<int64_t>{1'000'000, 101'000'000}));
  EXPECT_EQ(t.counters[0].values, (std::vector<double>{0.5, 0.9}));
  EXPECT_EQ(t.counters[1].unit, "watts");
  EXPECT_EQ(summary_json(t)["counter_tracks"].size(), 2u);
  // Perfetto: counter events of the GPU process, one per sample, named with the unit.
  std::ostringstream os;
  write_chrome(t, os);
  const auto j = nlohmann::json::parse(os.str());
  std::vector<double> sm;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "C") continue;
    EXPECT_TRUE(e.contains("ts"));
    EXPECT_EQ(e["pid"], 0);
    if (e["name"] == "sm_active (ratio)") sm.push_back(e["args"]["value"].get<double>());
  }
  EXPECT_EQ(sm, (std::vector<double>{0.5, 0.9}));
  // A counters chunk cut short (process killed while appending) leaves everything before it readable.
  const std::string bytes = read_text_file(p);
  const TraceFile cut = parse_trace(std::string_view(bytes).substr(0, bytes.size() - 10), p);
  EXPECT_TRUE(cut.complete);
  EXPECT_EQ(cut.records.size(), 4u);
  EXPECT_TRUE(cut.counters.empty());
  EXPECT_FALSE(cut.truncation.empty());
  // A well-formed chunk of the wrong shape is reported, not half-read.
  append_counters(p, {{"clock", "monotonic"}, {"tracks", {{{"name", "x"}, {"t_ns", {1, 2}}, {"values", {1}}}}}});
  const TraceFile bad = read_trace(p);
  EXPECT_EQ(bad.counters.size(), 2u);
  EXPECT_NE(bad.truncation.find("malformed"), std::string::npos);
  EXPECT_THROW(append_counters(temp_file("missing/dir/x.gsqt"), counters_payload(0)), Error);
  // The device alone (no sampling: the launcher's description of the GPU) is kept without any track.
  const fs::path d = write_sample("device-only.gsqt", 1, true);
  append_counters(d, {{"source", "nvml"},
                      {"device", 0},
                      {"device_info", {{"name", "NVIDIA H200"}}},
                      {"tracks", nlohmann::json::array()}});
  const TraceFile only = read_trace(d);
  EXPECT_TRUE(only.counters.empty());
  ASSERT_EQ(only.devices.size(), 1u);
  EXPECT_EQ(only.devices[0]["name"], "NVIDIA H200");
  EXPECT_TRUE(only.truncation.empty()) << only.truncation;
}

TEST(TraceFormat, RoundTripKeepsEveryRecordAndString) {
  const fs::path p = write_sample("round.gsqt", 3, true);
  const TraceFile t = read_trace(p);
  EXPECT_TRUE(t.complete);
  EXPECT_TRUE(t.truncation.empty()) << t.truncation;
  EXPECT_EQ(t.header.value("pid", 0), 4242);
  ASSERT_EQ(t.records.size(), 12u);
  EXPECT_EQ(t.name(t.records[1]), "void gemm<float>(float*, int)");
  EXPECT_EQ(t.records[1].grid[0], 132);
  EXPECT_EQ(t.records[1].dynamic_smem, 4096u);
  EXPECT_EQ(t.records[3].bytes, 1u << 20);
  EXPECT_EQ(t.stats.value("cupti_dropped_records", 0), 3);
  const Summary s = summarize(t);
  EXPECT_EQ(s.kernels, 3u);
  EXPECT_EQ(s.memcpys, 3u);
  EXPECT_EQ(s.pageable_copies, 3u);
  EXPECT_EQ(s.api_calls, 6u);
  EXPECT_TRUE(looks_like_trace(p));
}

TEST(TraceFormat, EveryTruncationReadsUpToTheLastIntactChunk) {
  const std::string full = read_text_file(write_sample("cut.gsqt", 4, true));
  const TraceFile whole = parse_trace(full, "whole");
  size_t header_end = 0;  // the first offset at which the header chunk is complete
  for (size_t cut = 16; cut < full.size(); ++cut) {
    const std::string_view part(full.data(), cut);
    try {
      const TraceFile t = parse_trace(part, "cut");
      if (!header_end) header_end = cut;
      EXPECT_FALSE(t.complete) << cut;
      EXPECT_LE(t.records.size(), whole.records.size());
      EXPECT_EQ(t.records.size() % 4, 0u) << "a records chunk is all or nothing, cut at " << cut;
      if (cut != full.size()) {
        EXPECT_TRUE(!t.truncation.empty() || t.chunks < whole.chunks) << cut;
      }
      for (const Record& r : t.records) EXPECT_NE(t.name(r), "(unnamed)") << "strings precede their records";
    } catch (const Error& e) {
      EXPECT_EQ(header_end, 0u) << "only a file without an intact header may fail, cut at " << cut << ": " << e.what();
    }
  }
  EXPECT_GT(header_end, 16u);
}

TEST(TraceFormat, DamagedChunkStopsReadingAndSaysWhere) {
  std::string bytes = read_text_file(write_sample("flip.gsqt", 3, true));
  const TraceFile whole = parse_trace(bytes, "whole");
  bytes[bytes.size() / 2] ^= 0x5a;
  const TraceFile t = parse_trace(bytes, "flipped");
  EXPECT_LT(t.records.size(), whole.records.size());
  EXPECT_NE(t.truncation.find("checksum"), std::string::npos) << t.truncation;
  EXPECT_FALSE(t.complete);
}

TEST(TraceFormat, RejectsOtherFilesAndVersionsClearly) {
  EXPECT_THROW((void)parse_trace("{\"traceEvents\": []}", "kineto.json"), Error);
  std::string bytes = read_text_file(write_sample("v2.gsqt", 1, true));
  bytes[11] = 2;
  try {
    (void)parse_trace(bytes, "v2.gsqt");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("version 2"), std::string::npos) << e.what();
    EXPECT_EQ(e.code(), ExitCode::bad_input);
  }
  EXPECT_THROW((void)read_trace(temp_file("missing.gsqt")), Error);
}

TEST(TraceFormat, ChromeExportHasTheTraceEventFields) {
  const TraceFile t = read_trace(write_sample("chrome.gsqt", 2, true));
  std::stringstream out;
  write_chrome(t, out);
  const auto j = nlohmann::json::parse(out.str());
  ASSERT_TRUE(j.contains("traceEvents"));
  size_t complete = 0, flow_start = 0, flow_end = 0, meta = 0;
  for (const auto& e : j["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e["ph"].is_string()) << e;
    ASSERT_TRUE(e.contains("name") && e["name"].is_string()) << e;
    ASSERT_TRUE(e.contains("pid") && e["pid"].is_number_integer()) << e;
    ASSERT_TRUE(e.contains("tid") && e["tid"].is_number_integer()) << e;
    const std::string ph = e["ph"];
    if (ph == "M") {
      ++meta;
      EXPECT_TRUE(e["args"].contains("name")) << e;
      continue;
    }
    ASSERT_TRUE(e.contains("ts") && e["ts"].is_number()) << e;
    EXPECT_GE(e["ts"].get<double>(), 0.0);
    if (ph == "X") {
      ++complete;
      ASSERT_TRUE(e.contains("dur") && e["dur"].is_number()) << e;
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      EXPECT_TRUE(e.contains("cat")) << e;
    } else if (ph == "s" || ph == "f") {
      (ph == "s" ? flow_start : flow_end)++;
      EXPECT_TRUE(e.contains("id") && e.contains("cat")) << e;
      if (ph == "f") {
        EXPECT_EQ(e.value("bp", ""), "e");
      }
    } else {
      ADD_FAILURE() << "unexpected phase " << ph;
    }
  }
  EXPECT_EQ(complete, t.records.size());
  EXPECT_EQ(flow_start, 4u);  // every call that launched GPU work has an arrow to it
  EXPECT_EQ(flow_end, flow_start);
  EXPECT_GE(meta, 4u);  // CPU process, its thread, GPU 0, stream 7
  EXPECT_NE(out.str().find("Memcpy HtoD (Pageable -> Device)"), std::string::npos);
}

TEST(TraceFormat, AnalyzerReadsItsOwnTraces) {
  const fs::path p = write_sample("analyze.gsqt", 5, true);
  const auto t = analyze::load_trace(p);
  EXPECT_EQ(t.source, "gpusqueeze");
  EXPECT_EQ(t.rank, 1);
  size_t kernels = 0, copies = 0, runtime = 0;
  for (const auto& e : t.events) {
    kernels += e.kind == analyze::Kind::kernel;
    copies += e.kind == analyze::Kind::memcpy && e.src == analyze::MemKind::pageable;
    runtime += e.kind == analyze::Kind::runtime;
  }
  EXPECT_EQ(kernels, 5u);
  EXPECT_EQ(copies, 5u);
  EXPECT_EQ(runtime, 10u);
  const auto a = analyze::analyze(t);
  EXPECT_EQ(a.copies.count, 5u);
  EXPECT_EQ(a.copies.pageable, 5u);
}

TEST(TraceFormat, UntracedRunIsReportedWithItsReason) {
  const fs::path p = temp_file("untraced.gsqt");
  {
    Writer w(p, {{"schema", kSchema},
                 {"pid", 1},
                 {"status", "not-traced"},
                 {"reason", "another CUPTI tool is already attached: Nsight Systems"}});
  }
  try {
    (void)analyze::load_trace(p);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Nsight Systems"), std::string::npos) << e.what();
  }
}

TEST(TraceFormat, RecordsWithoutAStartTimeAreLeftOffTheTimeline) {
  // An API exit whose entry the tracer never saw (on-demand window opened mid-call) once produced start 0: it must
  // not drag t = 0 back to the clock's epoch.
  const fs::path p = temp_file("timeless.gsqt");
  {
    Writer w(p, header());
    auto r = sample(w, 5'000'000'000, 1);
    Record timeless = r[0];
    timeless.start_ns = 0;
    r.push_back(timeless);
    w.write_records(r);
    w.write_end({});
  }
  const TraceFile f = read_trace(p);
  const auto t = analyze::from_gsqt(f);
  EXPECT_EQ(t.base_ns, 5'000'000'000);
  EXPECT_EQ(t.events.size(), f.records.size() - 1);
  EXPECT_GE(t.skipped_events, 1u);
  EXPECT_LT(analyze::analyze(t).breakdown.wall_ns, 1'000'000);
  const TraceFile w = window_of(f, 5'000'000'000, 6'000'000'000);
  EXPECT_EQ(w.records.size(), f.records.size() - 1);
}

}  // namespace
}  // namespace gsq::trace

// ---- traces recorded on the H200 with `gpusqueeze trace` (bench/device/trace.sh) ----
namespace gsq::trace {
namespace {

TEST(RecordedTrace, TargetProgramHoldsExactlyItsWork) {
  // trace_target 20 3 4 5: 20 kernels + 1 graph kernel, 3 pageable and 4 pinned 1 MiB HtoD copies, 5 stream syncs.
  const TraceFile t = read_trace(GSQ_FIXTURE_DIR "/h200-trace-target.gsqt");
  EXPECT_TRUE(t.complete);
  EXPECT_EQ(t.header.value("status", ""), "tracing");
  const Summary s = summarize(t);
  EXPECT_EQ(s.kernels, 21u);
  EXPECT_EQ(s.graph_kernels, 1u);
  EXPECT_EQ(s.pageable_copies, 3u);
  EXPECT_EQ(s.pinned_copies, 4u);
  EXPECT_EQ(s.copy_bytes, 7u << 20);
  EXPECT_EQ(s.syncs, 5u);
  EXPECT_EQ(s.ranges, 1u);
  std::stringstream out;
  write_chrome(t, out);
  EXPECT_FALSE(nlohmann::json::parse(out.str()).empty());
}

TEST(RecordedTrace, TorchInferenceLoopIsHostBound) {
  // bench/trace/workloads.py host: per request CPU preprocessing, a pageable HtoD copy and .item().
  const TraceFile f = read_trace(GSQ_FIXTURE_DIR "/h200-torch-host.gsqt");
  EXPECT_EQ(summarize(f).ranges, 1u) << "torch.cuda.nvtx.range_push(\"gsq-region\") reached the tracer";
  const auto a = analyze::analyze(analyze::from_gsqt(f));
  EXPECT_EQ(a.verdict.cls, "host-bound");  // the CPU preprocessing; the syncs cost only the overlap they prevent
  EXPECT_GT(a.copies.pageable, 400u);
  bool sync_finding = false;
  for (const auto& finding : a.findings) sync_finding = sync_finding || finding.id == "sync-point";
  EXPECT_TRUE(sync_finding);
}

TEST(RecordedTrace, GpmCountersOfAGemmRunReadWholeAndExportAsCounterTracks) {
  // bench/device/hwlayer.sh: hw_target matmul 2000 under `trace --gpu-metrics 100`. Two DRAM samples of this run
  // were NaN (written as null by that build): they are skipped, the rest of the chunk is kept.
  const TraceFile f = read_trace(GSQ_FIXTURE_DIR "/h200-hw-matmul.gsqt");
  EXPECT_TRUE(f.truncation.empty()) << f.truncation;
  ASSERT_EQ(f.counters.size(), 15u);
  size_t sm = 0, dram = 0;
  for (const auto& c : f.counters) {
    EXPECT_EQ(c.device_name, "NVIDIA H200");
    if (c.name == "sm_active") sm = c.values.size();
    if (c.name == "dram_bandwidth_utilization") dram = c.values.size();
  }
  EXPECT_EQ(dram + 2, sm);
  std::stringstream out;
  write_chrome(f, out);
  const auto j = nlohmann::json::parse(out.str());
  std::set<std::string> tracks;
  size_t events = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "C") continue;
    ++events;
    EXPECT_TRUE(e["ts"].is_number());
    EXPECT_TRUE(e["name"].is_string());
    ASSERT_TRUE(e["args"].is_object());
    for (const auto& [k, v] : e["args"].items()) EXPECT_TRUE(v.is_number()) << k;
    tracks.insert(e["name"].get<std::string>());
  }
  EXPECT_EQ(tracks.size(), 15u);
  EXPECT_GT(events, 15u * 30);
}

}  // namespace
}  // namespace gsq::trace
