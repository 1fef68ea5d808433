// Kineto import: the recorded traces load; bad input fails with a message naming the problem.
#include "analyze/kineto.hpp"

#include "core/error.hpp"
#include "support/fixtures.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>

namespace gsq::analyze {
namespace {

std::string recorded(const std::string& name) {
  return read_maybe_gzip(test::fixture("torch-" + name + ".json.gz"));
}

std::string error_of(const std::string& text) {
  try {
    (void)parse_kineto(text, "t.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(Kineto, RecordedTraceLoadsWithCopiesClassified) {
  const Trace t = load_kineto(test::fixture("torch-host-slow.json.gz"));
  EXPECT_GT(t.events.size(), 1000u);
  EXPECT_GT(t.base_ns, 0);
  EXPECT_TRUE(std::is_sorted(t.events.begin(), t.events.end(),
                             [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; }));
  size_t pageable_htod = 0;
  for (const auto& e : t.events)
    if (e.kind == Kind::memcpy && e.copy == CopyKind::htod && e.src == MemKind::pageable && e.dst == MemKind::device)
      ++pageable_htod;
  EXPECT_EQ(pageable_htod, 20u);
}

TEST(Kineto, ClassifiesCopyNames) {
  Event e;
  classify_copy("Memcpy DtoH (Device -> Pinned)", e);
  EXPECT_EQ(e.copy, CopyKind::dtoh);
  EXPECT_EQ(e.src, MemKind::device);
  EXPECT_EQ(e.dst, MemKind::pinned);
}

TEST(Kineto, TruncatedJsonIsReported) {
  const std::string text = recorded("matmul");
  EXPECT_NE(error_of(text.substr(0, text.size() / 2)).find("truncated"), std::string::npos);
}

TEST(Kineto, EmptyAndEventlessTracesAreReported) {
  EXPECT_NE(error_of("").find("empty"), std::string::npos);
  EXPECT_NE(error_of("{\"traceEvents\": []}").find("no CPU or GPU events"), std::string::npos);
  // A process that ran only Python (a server's front-end recorded with_stack): said so, with what to profile instead.
  EXPECT_NE(error_of(R"({"traceEvents": [{"ph": "X", "cat": "python_function", "name": "asyncio: run", "pid": 1, )"
                     R"("tid": 1, "ts": 1, "dur": 5}]})")
                .find("only Python function events"),
            std::string::npos);
}

// PyTorch < 1.8's autograd profiler, in its own layout (SYNTHETIC events written here after the public DLRM rank traces
// of aoranwu/dlrm's prof/ folder): no categories, "CPU functions" and "CUDA functions" processes. Refused with what to
// record instead, not as "not a trace".
TEST(Kineto, ALegacyAutogradProfilerTraceIsRefusedWithWhatToRecordInstead) {
  const auto e = error_of(
      R"([{"name": "empty", "ph": "X", "ts": 388.7, "dur": 26.4, "tid": 1, "pid": "CPU functions", "args": {}},)"
      R"({"name": "empty", "ph": "X", "ts": 391.8, "dur": 23.4, "tid": 0, "pid": "CUDA functions", "args": {}}])");
  EXPECT_NE(e.find("legacy autograd-profiler trace"), std::string::npos) << e;
  EXPECT_NE(e.find("ProfilerActivity.CUDA"), std::string::npos) << e;
}

TEST(Kineto, TraceWithoutGpuEventsSaysHowToRecordThem) {
  auto j = nlohmann::json::parse(recorded("matmul"));
  auto& evs = j["traceEvents"];
  evs.erase(std::remove_if(evs.begin(), evs.end(),
                           [](const auto& e) {
                             const std::string cat = e.value("cat", "");
                             return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
                           }),
            evs.end());
  EXPECT_NE(error_of(j.dump()).find("ProfilerActivity.CUDA"), std::string::npos);
  EXPECT_NE(error_of(j.dump()).find("CUDA calls were recorded"), std::string::npos);
  // With the CUDA calls gone too, the ops ran on the CPU: said so.
  evs.erase(std::remove_if(evs.begin(), evs.end(),
                           [](const auto& e) {
                             const std::string cat = e.value("cat", "");
                             return cat == "cuda_runtime" || cat == "cuda_driver";
                           }),
            evs.end());
  EXPECT_NE(error_of(j.dump()).find("ran on the CPU"), std::string::npos);
}

TEST(Kineto, WrongSchemaIsNotATrace) {
  const std::string snapshot = read_maybe_gzip(test::fixture("h200-snapshot.json"));
  EXPECT_NE(error_of(snapshot).find("traceEvents"), std::string::npos);
  EXPECT_NE(error_of("[1, 2, 3]").find("not a Kineto"), std::string::npos);
}

TEST(Kineto, MixedClocksAreRejected) {
  auto j = nlohmann::json::parse(recorded("matmul"));
  for (auto& e : j["traceEvents"])
    if (e.value("cat", "") == "kernel") e["ts"] = e["ts"].get<double>() + 7200e6;  // GPU clock two hours off
  EXPECT_NE(error_of(j.dump()).find("mixed clocks"), std::string::npos);
}

TEST(Kineto, CorruptGzipIsReported) {
  std::ifstream in(test::fixture("torch-matmul.json.gz"), std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto p = std::filesystem::temp_directory_path() / "gsq-cut.json.gz";
  std::ofstream(p, std::ios::binary) << gz.substr(0, gz.size() / 2);
  try {
    (void)load_kineto(p);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gzip"), std::string::npos) << e.what();
  }
  std::filesystem::remove(p);
}

}  // namespace
}  // namespace gsq::analyze

namespace gsq::analyze {
namespace {

TEST(Kineto, WhitespaceAndKeyOrderDoNotMatter) {
  auto j = nlohmann::json::parse(recorded("matmul"));
  const Trace compact = parse_kineto(j.dump(), "compact");
  const Trace pretty = parse_kineto(j.dump(3), "pretty");
  EXPECT_EQ(compact.events.size(), pretty.events.size());
  // A scalar in the array and an event with its keys in another order.
  j["traceEvents"].push_back(7);
  const Trace with_scalar = parse_kineto(j.dump(1), "scalar");
  EXPECT_EQ(with_scalar.events.size(), compact.events.size());
  EXPECT_EQ(with_scalar.skipped_events, compact.skipped_events + 1);
}

}  // namespace
}  // namespace gsq::analyze

namespace gsq::analyze {
namespace {

// SYNTHETIC: the shape PyTorch 1.8/1.9 wrote — capitalised categories, "stream N" thread ids, events as the top level.
TEST(Kineto, LegacyCapitalisedCategoriesAndTheArrayFormatRead) {
  const std::string legacy = R"json([
    {"ph": "X", "cat": "Operator", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
    {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2, "dur": 3,
     "args": {"correlation": 5}},
    {"ph": "X", "cat": "Kernel", "name": "relu_kernel", "pid": 0, "tid": "stream 7", "ts": 6, "dur": 4,
     "args": {"device": 0, "stream": 7, "correlation": 5}},
    {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": "stream 7", "ts": 11,
     "dur": 2, "args": {"device": 0, "stream": 7, "bytes": 4096}}
  ])json";
  const Trace t = parse_kineto(legacy, "legacy.json");
  ASSERT_EQ(t.events.size(), 4u);
  std::map<Kind, int> kinds;
  for (const auto& e : t.events) ++kinds[e.kind];
  EXPECT_EQ(kinds[Kind::cpu_op], 1);
  EXPECT_EQ(kinds[Kind::runtime], 1);
  EXPECT_EQ(kinds[Kind::kernel], 1);
  EXPECT_EQ(kinds[Kind::memcpy], 1);
  for (const auto& e : t.events) {
    if (e.kind == Kind::kernel) {
      EXPECT_EQ(e.stream, 7);
    }
  }
}

TEST(Kineto, PublicLegacyTracesFromKinetosRepositoryRead) {
  const std::filesystem::path dir = test::shared_data("kineto");
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << dir << " not present (shared test data)";
  // PyTorch 1.8 (array format) and 1.9 (capitalised categories) traces of a ResNet-50 run.
  for (const char* name : {"kineto.plugin.samples.resnet50_num_workers_0--worker0.pt.trace.json.gz",
                           "kineto.tb_plugin.samples.resnet50_num_workers_0--worker0.1623143089861.pt.trace.json.gz"}) {
    const Trace t = load_kineto(dir / name);
    size_t kernels = 0, runtime = 0;
    for (const auto& e : t.events) kernels += e.kind == Kind::kernel, runtime += e.kind == Kind::runtime;
    EXPECT_GT(kernels, 8000u) << name;
    EXPECT_GT(runtime, 10000u) << name;
  }
}

}  // namespace
}  // namespace gsq::analyze
