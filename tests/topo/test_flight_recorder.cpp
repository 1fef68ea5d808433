// PyTorch's NCCL Flight Recorder dumps: the real ones under tests/data/triage/flight-recorder (16-rank Megatron MoE
// jobs from NVIDIA/nvidia-resiliency-ext with faults injected on known ranks), and SYNTHETIC JSON dumps made here for
// the cases those do not have (a mismatch, a collective every rank issued that never completed).
#include "topo/flight_recorder.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

namespace gsq::topo {
namespace {

namespace fs = std::filesystem;

std::vector<FrDump> load_case(const std::string& name) {
  std::vector<FrDump> dumps;
  const fs::path dir = fs::path(GSQ_SOURCE_DIR) / "tests/data/triage/flight-recorder" / name;
  for (int r = 0; r < 16; ++r) {
    const auto file = dir / ("_dump_" + std::to_string(r));
    dumps.push_back(parse_flight_recorder(read_text_file(file), file.string()));
  }
  return dumps;
}

const Finding* find(const std::vector<Finding>& fs, const std::string& id) {
  const auto it = std::find_if(fs.begin(), fs.end(), [&](const Finding& f) { return f.id == id; });
  return it == fs.end() ? nullptr : &*it;
}

std::string evidence(const Finding& f, const std::string& name) {
  for (const auto& e : f.evidence)
    if (e.name == name) return e.value;
  return "";
}

TEST(FlightRecorder, TheRealDumpsReadWithTheirRanksGroupsAndEntries) {
  const auto dumps = load_case("nvrx_gpu_error_1st");
  ASSERT_EQ(dumps.size(), 16U);
  EXPECT_EQ(dumps[12].rank, 12);
  EXPECT_EQ(dumps[12].version, "2.9");
  EXPECT_EQ(dumps[12].comm_lib_version, "2.27.3");
  EXPECT_EQ(dumps[12].entries.size(), 27U);
  ASSERT_TRUE(dumps[12].groups.contains("74"));
  EXPECT_EQ(dumps[12].groups.at("74").desc, "EXPERT_MODEL_PARALLEL_GROUP");
  EXPECT_EQ(dumps[12].groups.at("74").ranks, (std::vector<int>{12, 13, 14, 15}));
  const auto& e = dumps[12].entries[1];
  EXPECT_EQ(e.group, "74");
  EXPECT_EQ(e.op, "nccl:all_to_all");
  EXPECT_EQ(e.input_sizes, "[[4096, 5120]]");
  EXPECT_EQ(e.input_dtypes, "['BFloat16']");
  EXPECT_EQ(e.state, "scheduled");
  EXPECT_FALSE(e.p2p);
}

// Each job's fault_injection.log names the ranks the fault was injected on. The ranks compared name them: all of them
// where the fault stopped the rank issuing, and never a rank without a fault. (gpu_error_1st: rank 14's GPU error
// did not stop its host from issuing; the repository's own analyzer also names rank 12 alone.)
TEST(FlightRecorder, TheRanksThatNeverJoinedAreTheFaultedOnes) {
  const struct {
    const char* name;
    std::set<std::string> named;
  } cases[] = {{"nvrx_gpu_error_1st", {"12"}},
               {"nvrx_gpu_error_2nd", {"9, 14"}},
               {"nvrx_lock_gil_1st", {"9, 14"}},
               {"nvrx_lock_gil_2nd", {"10, 15"}}};
  for (const auto& c : cases) {
    const auto findings = flight_recorder_findings(load_case(c.name));
    const auto* lag = find(findings, "nccl-lagging-rank");
    ASSERT_NE(lag, nullptr) << c.name;
    EXPECT_EQ(lag->severity, Severity::fail);
    EXPECT_TRUE(c.named.contains(evidence(*lag, "ranks"))) << c.name << ": " << lag->title;
    EXPECT_EQ(find(findings, "nccl-collective-mismatch"), nullptr) << c.name << ": all_to_all sizes differ by design";
    EXPECT_EQ(worst(findings), Severity::fail);
  }
  // The EP group's all_to_all the others wait in, as the repository's reference names it.
  const auto findings = flight_recorder_findings(load_case("nvrx_gpu_error_1st"));
  EXPECT_NE(find(findings, "nccl-lagging-rank")->title.find("EXPERT_MODEL_PARALLEL_GROUP (74): nccl:all_to_all #20537"),
            std::string::npos);
}

TEST(FlightRecorder, OneDumpSaysWhatWasInFlight) {
  auto dumps = load_case("nvrx_gpu_error_1st");
  const auto findings = flight_recorder_findings({dumps[12]});
  ASSERT_EQ(findings.size(), 1U);
  EXPECT_EQ(findings[0].id, "nccl-fr-in-flight");
  EXPECT_EQ(findings[0].severity, Severity::warn);
  EXPECT_EQ(evidence(findings[0], "in_flight"), "27");
}

// SYNTHETIC dumps in the JSON form (`_dump_nccl_trace_json`: keys sorted, pg_status as text, no frames).
std::string json_dump(const std::string& entries) {
  return R"({"comm_lib_version":"2.26.6","entries":[)" + entries +
         R"(],"pg_config":{"0":{"desc":"default_pg","name":"0","ranks":"[0, 1]"}},)"
         R"("pg_status":{"0":{"last_completed_collective":"3","last_enqueued_collective":"5"}},"version":"2.10"})";
}
std::string entry(int seq, const std::string& op, const std::string& sizes, const std::string& state) {
  return R"({"collective_seq_id":)" + std::to_string(seq) + R"(,"input_dtypes":["Float"],"input_sizes":)" + sizes +
         R"(,"is_p2p":false,"op_id":1,"output_sizes":)" + sizes + R"(,"p2p_seq_id":0,"pg_id":0,)" +
         R"("process_group":["0","default_pg"],"profiling_name":")" + op + R"(","record_id":)" + std::to_string(seq) +
         R"(,"retired":false,"state":")" + state + R"(","time_created_ns":)" + std::to_string(1000 + seq) +
         R"(,"timeout_ms":600000})";
}

TEST(FlightRecorder, DifferentCollectivesAtOneNumberAreAMismatch) {
  const std::string r0 = json_dump(entry(4, "nccl:all_reduce", "[[8]]", "completed") + "," +
                                   entry(5, "nccl:all_reduce", "[[1024]]", "started"));
  const std::string r1 = json_dump(entry(4, "nccl:all_reduce", "[[8]]", "completed") + "," +
                                   entry(5, "nccl:broadcast", "[[1024]]", "started"));
  ASSERT_TRUE(looks_like_flight_recorder(r0));
  const auto findings =
      flight_recorder_findings({parse_flight_recorder(r0, "trace_rank_0"), parse_flight_recorder(r1, "trace_rank_1")});
  const auto* m = find(findings, "nccl-collective-mismatch");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(evidence(*m, "seq"), "5");
  EXPECT_EQ(m->severity, Severity::fail);
  // The same op with other sizes is a mismatch too, where the sizes must agree.
  const std::string r1b = json_dump(entry(4, "nccl:all_reduce", "[[8]]", "completed") + "," +
                                    entry(5, "nccl:all_reduce", "[[2048]]", "started"));
  EXPECT_NE(find(flight_recorder_findings(
                     {parse_flight_recorder(r0, "trace_rank_0"), parse_flight_recorder(r1b, "trace_rank_1")}),
                 "nccl-collective-mismatch"),
            nullptr);
}

TEST(FlightRecorder, ACollectiveEveryRankIssuedThatNeverCompletedIsAHangInsideIt) {
  const std::string r = json_dump(entry(4, "nccl:all_reduce", "[[8]]", "completed") + "," +
                                  entry(5, "nccl:all_reduce", "[[1024]]", "started"));
  const auto findings =
      flight_recorder_findings({parse_flight_recorder(r, "trace_rank_0"), parse_flight_recorder(r, "trace_rank_1")});
  EXPECT_EQ(find(findings, "nccl-lagging-rank"), nullptr);
  const auto* f = find(findings, "nccl-fr-in-flight");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::fail);
  EXPECT_NE(f->title.find("nccl:all_reduce #5"), std::string::npos) << f->title;
}

TEST(FlightRecorder, ALongJsonDumpIsKnownByItsFirstKeys) {
  // The JSON form sorts its keys, so "version" comes last: a dump of 2000 entries is known by what comes first.
  std::string entries;
  for (int i = 0; i < 2000; ++i) {
    if (i > 0) entries += ',';
    entries += entry(i, "nccl:all_reduce", "[[1024]]", "completed");
  }
  const std::string dump = json_dump(entries);
  EXPECT_GT(dump.find("\"version\""), 4096U);
  EXPECT_TRUE(looks_like_flight_recorder(dump));
  EXPECT_EQ(parse_flight_recorder(dump, "trace_rank_0").entries.size(), 2000U);
}

TEST(FlightRecorder, WhatIsNotADumpIsRefusedOrNotTakenForOne) {
  EXPECT_FALSE(looks_like_flight_recorder("h:1:1 [0] NCCL INFO Init COMPLETE\n"));
  EXPECT_FALSE(looks_like_flight_recorder(R"({"schema": "gpusqueeze.bench/1", "results": []})"));
  // A pickle that would import and call: refused, never run.
  EXPECT_THROW((void)parse_flight_recorder(std::string("\x80\x02"
                                                       "cos\nsystem\n(S'true'\ntR.",
                                                       22),
                                           "evil_rank_0"),
               Error);
  // A real dump cut short.
  const auto file = fs::path(GSQ_SOURCE_DIR) / "tests/data/triage/flight-recorder/nvrx_gpu_error_1st/_dump_0";
  const std::string whole = read_text_file(file);
  EXPECT_THROW((void)parse_flight_recorder(whole.substr(0, whole.size() / 2), "cut_rank_0"), Error);
  // JSON of another shape, and a dump whose pg_config is not a table: refused, or read as holding nothing.
  EXPECT_THROW((void)parse_flight_recorder(R"({"results": []})", "odd_rank_0"), Error);
  const auto odd = parse_flight_recorder(R"({"version": "2.10", "pg_config": 3, "entries": [1, "x"]})", "odd_rank_0");
  EXPECT_TRUE(odd.groups.empty());
  EXPECT_TRUE(odd.entries.empty());
}

}  // namespace
}  // namespace gsq::topo
