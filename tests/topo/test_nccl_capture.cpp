// NCCL's INFO lines around a probe: the capture's settings and clean-up, and the rows annotated from SYNTHETIC
// TUNING lines in the shape NCCL's src/enqueue.cc prints (no GPU or NCCL run here); the probes' JSON read back.
#include "topo/nccl_capture.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "support/fixtures.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

namespace gsq::topo {
namespace {

namespace fs = std::filesystem;

TEST(NcclCapture, SetsNcclsDebugSettingsReadsItsFilesAndRemovesThem) {
  ::unsetenv("NCCL_DEBUG");
  fs::path dir;
  {
    NcclInfoCapture c;
    ASSERT_TRUE(c.active());
    EXPECT_STREQ(std::getenv("NCCL_DEBUG"), "INFO");
    EXPECT_STREQ(std::getenv("NCCL_DEBUG_SUBSYS"), "INIT,ENV");  // nothing per call inside the timed loop
    const auto tuning = c.tuning_env();  // the untimed pass's child: TUNING lines into the same folder
    ASSERT_EQ(tuning.size(), 4U);
    EXPECT_EQ(tuning[0], "env");
    EXPECT_EQ(tuning[2], "NCCL_DEBUG_SUBSYS=TUNING");
    EXPECT_NE(tuning[3].find(fs::path(std::getenv("NCCL_DEBUG_FILE")).parent_path().string()), std::string::npos);
    const std::string file = std::getenv("NCCL_DEBUG_FILE");
    EXPECT_NE(file.find("%h.%p"), std::string::npos);  // one file per host and process
    dir = fs::path(file).parent_path();
    EXPECT_FALSE(c.read().has_value());  // NCCL wrote nothing yet
    std::ofstream(dir / "nccl.host.42") << "NCCL version 2.27.3+cuda13.0\n"
                                        << "host:42:43 [0] NCCL INFO AllReduce: 64 Bytes -> Algo RING proto LL "
                                           "channel{Lo..Hi}={0..1}\n";
    const auto log = c.read();
    ASSERT_TRUE(log.has_value());
    EXPECT_EQ(log->nccl_version, "2.27.3+cuda13.0");
    EXPECT_EQ(log->tuning.size(), 1U);
  }
  EXPECT_FALSE(fs::exists(dir));
  // The user's NCCL_DEBUG stands: nothing is set or captured.
  ::setenv("NCCL_DEBUG", "WARN", 1);
  ::unsetenv("NCCL_DEBUG_FILE");
  {
    NcclInfoCapture c;
    EXPECT_FALSE(c.active());
    EXPECT_STREQ(std::getenv("NCCL_DEBUG"), "WARN");
    EXPECT_EQ(std::getenv("NCCL_DEBUG_FILE"), nullptr);
    EXPECT_FALSE(c.read().has_value());
  }
  for (const char* v : {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"}) ::unsetenv(v);
}

TEST(NcclCapture, RowsGetNcclsChoiceWithPerRankBytesForGatherAndScatter) {
  NcclRun run;
  run.ranks = 8;
  run.rows = {{"all_reduce", 1 << 20, 10, 1, 1, 0, {}, {}, 0},
              {"all_reduce", 1 << 30, 10, 1, 1, 0, {}, {}, 0},
              {"all_gather", 1 << 20, 10, 1, 1, 0, {}, {}, 0},  // NCCL prints 131072 (per rank)
              {"sendrecv", 1 << 20, 10, 1, 1, 0, {}, {}, 0},
              {"broadcast", 64, 10, 1, 1, 0, {}, {}, 0}};  // no TUNING line for it
  const auto log = parse_nccl_log(
      "NCCL version 2.27.3+cuda13.0\n"
      "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
      "h:1:2 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={0..15}\n"
      "h:1:2 [0] NCCL INFO AllReduce: 1073741824 Bytes -> Algo NVLS proto SIMPLE channel{Lo..Hi}={0..23}\n"
      "h:1:2 [0] NCCL INFO AllGather: 131072 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..7}\n",
      "synthetic");
  annotate(run, log);
  EXPECT_EQ(run.rows[0].algo, "RING");
  EXPECT_EQ(run.rows[0].proto, "LL128");
  EXPECT_EQ(run.rows[0].channels, 16);
  EXPECT_EQ(run.rows[1].algo, "NVLS");
  EXPECT_EQ(run.rows[2].algo, "RING");
  EXPECT_EQ(run.rows[2].channels, 8);
  EXPECT_TRUE(run.rows[3].algo.empty());
  EXPECT_TRUE(run.rows[4].algo.empty());
  std::string notes;
  for (const auto& n : run.notes) notes += n + "\n";
  EXPECT_NE(notes.find("P2P/CUMEM"), std::string::npos) << notes;
  EXPECT_NE(notes.find("NVLS (NVLink SHARP) in use"), std::string::npos) << notes;
  EXPECT_NE(notes.find("all_reduce on NVLS: busbw there is the flat-algorithm equivalent"), std::string::npos) << notes;
  EXPECT_NE(notes.find("NCCL_ALGO=Ring"), std::string::npos) << notes;
  // Back from JSON (a --procs child's document) with NCCL's choice kept.
  const auto back = nccl_run_from_json(to_json(run));
  EXPECT_EQ(back.rows[1].algo, "NVLS");
  EXPECT_EQ(back.rows[1].channels, 24);
  EXPECT_EQ(back.notes, run.notes);
}

}  // namespace
}  // namespace gsq::topo

namespace gsq::topo {
namespace {

TEST(NcclCapture, ARingRunIsAskedForWhereLargeSizesRanOnNvlsOrTree) {
  NcclRun run;
  run.ranks = 8;
  auto row = [](const char* coll, uint64_t bytes, const char* algo) {
    return NcclRow{coll, bytes, 1, 1, 1, 0, algo, algo[0] ? "SIMPLE" : "", algo[0] ? 16 : 0};
  };
  run.rows = {row("all_reduce", 1 << 20, "RING"), row("all_reduce", 1 << 30, "NVLS"),  // NVLS at the largest size
              row("all_gather", 1 << 20, "NVLS"), row("all_gather", 1 << 30, "RING"),  // NVLS only when small
              row("broadcast", 1 << 30, "RING"),  row("reduce", 1 << 30, "")};         // not captured
  EXPECT_EQ(collectives_off_ring(run), std::vector<std::string>{"all_reduce"});
  run.rows[4].algo = "TREE";
  EXPECT_EQ(collectives_off_ring(run), (std::vector<std::string>{"all_reduce", "broadcast"}));
  run.rows = {row("all_reduce", 1 << 30, "")};
  EXPECT_TRUE(collectives_off_ring(run).empty());
}

}  // namespace
}  // namespace gsq::topo

namespace gsq::topo {
namespace {

// `probe p2p --json` of one H100 recorded by bench/device/multigpu.sh, read back as `report --p2p` does.
TEST(ProbeJson, ASavedP2pDocumentReadsBackAndAWrongOneIsNamed) {
  const auto j = read_json_file(test::fixture("h100-p2p-one-gpu.json"), "gpusqueeze.p2p/1");
  const auto r = p2p_from_json(j, "h100");
  ASSERT_EQ(r.gpus, 1);
  EXPECT_EQ(r.names, std::vector<std::string>{"NVIDIA H100 80GB HBM3"});
  EXPECT_GT(r.uni_gbs[0][0], 1000.0);  // GB/s within the GPU
  EXPECT_GT(r.sm_uni_gbs[0][0], 1000.0);
  EXPECT_GT(r.sm_latency_us[0][0], 0.0);
  EXPECT_LT(r.sm_latency_us[0][0], 5.0);  // µs through L2
  EXPECT_EQ(to_json(r), j);               // nothing lost on the way back
  auto old = j;                           // a document from before the SM fields
  old.erase("sm_uni_gbs");
  old.erase("sm_latency_us");
  EXPECT_TRUE(p2p_from_json(old, "old").sm_uni_gbs.empty());
  auto expect_bad = [](nlohmann::json doc, const std::string& says) {
    try {
      (void)p2p_from_json(doc, "x.json");
      ADD_FAILURE() << "accepted: " << doc.dump();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::bad_input);
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  auto wide = j;
  wide["uni_gbs"][0].push_back(1.0);  // 1 × 2 for one GPU
  expect_bad(wide, "\"uni_gbs\" is not a 1×1 matrix of numbers");
  auto text = j;
  text["latency_us"][0][0] = "fast";
  expect_bad(text, "\"latency_us\" is not a 1×1 matrix");
  auto none = j;
  none["gpus"] = 0;
  expect_bad(none, "\"gpus\" is not a GPU count");
  auto other = j;
  other["schema"] = "gpusqueeze.bench/1";
  expect_bad(other, "not a gpusqueeze.p2p/1 document");
  auto missing = j;
  missing.erase("bi_gbs");
  expect_bad(missing, "no \"bi_gbs\"");
}

}  // namespace
}  // namespace gsq::topo
