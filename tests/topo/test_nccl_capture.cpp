// NCCL's INFO lines around a probe: the capture's settings and clean-up, and the rows annotated from SYNTHETIC
// TUNING lines in the shape NCCL's src/enqueue.cc prints (no GPU or NCCL run here).
#include "topo/nccl_capture.hpp"

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
