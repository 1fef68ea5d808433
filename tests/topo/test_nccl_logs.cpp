// NCCL logs, nccl-tests tables and PyTorch watchdog messages posted publicly (../shared/data/nccl, sources in each
// file's first line).
#include "topo/nccl_logs.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "support/fixtures.hpp"

#include <gtest/gtest.h>

#include <filesystem>

namespace gsq::topo {
namespace {

namespace fs = std::filesystem;

#define NEED(name)                                                                  \
  const fs::path file = test::shared_data(std::string("nccl/") + (name));           \
  if (!fs::exists(file)) GTEST_SKIP() << file << " not present (shared test data)"; \
  const NcclLog log = parse_nccl_log(read_text_file(file), file.string());          \
  const auto findings = nccl_findings(log)

bool has(const std::vector<Finding>& f, const std::string& id) {
  return std::any_of(f.begin(), f.end(), [&](const Finding& x) { return x.id == id; });
}

TEST(NcclLogs, WatchdogTimeoutNamesTheCollectiveOnceWithItsProgress) {
  NEED("pytorch_watchdog_timeout_p2p_hang_nccl1509.log");
  ASSERT_EQ(log.timeouts.size(), 1u);
  EXPECT_EQ(log.timeouts[0].op, "ALLREDUCE");
  EXPECT_EQ(log.timeouts[0].seq, 7);
  EXPECT_EQ(log.timeouts[0].timeout_ms, 600000);
  EXPECT_EQ(log.timeouts[0].last_completed, 6);
  EXPECT_TRUE(has(findings, "nccl-watchdog-timeout"));
}

TEST(NcclLogs, MissingIbverbsIsASocketFallback) {
  NEED("nccl_info_a100_hgx_no_libibverbs_socket_fallback_nccltests100.log");
  EXPECT_TRUE(log.ibverbs_missing);
  EXPECT_TRUE(log.socket_fallback);
  EXPECT_TRUE(has(findings, "nccl-socket-fallback"));
}

TEST(NcclLogs, IbCompletionStatus12IsNamed) {
  NEED("nccl_warn_ib_completion_status12_nccl1814.log");
  ASSERT_FALSE(log.ib_completion_status.empty());
  EXPECT_EQ(log.ib_completion_status.front(), 12);
  EXPECT_TRUE(has(findings, "nccl-ib-completion-error"));
}

TEST(NcclLogs, TransportsOfAGpuDirectRdmaJobAreCounted) {
  NEED("nccl_info_h20_2node_transports_gdrdma_nccl1189.log");
  EXPECT_GT(log.transports.at("NET/IB/GDRDMA"), 0u);
  EXPECT_FALSE(has(findings, "nccl-socket-fallback"));
}

TEST(NcclLogs, NcclTestsTablesOldAndNewReadWithTheirColumns) {
  {
    NEED("nccltests_h100pcie_2gpu_nvlink_bridge_nccltests194.txt");
    ASSERT_EQ(log.rows.size(), 2u);
    EXPECT_EQ(log.rows[0].bytes, 1073741824u);
    EXPECT_DOUBLE_EQ(log.rows[0].busbw[0], 115.37);
    EXPECT_DOUBLE_EQ(log.rows[1].busbw[1], 115.93);
    EXPECT_EQ(log.rows[1].wrong[0], 0);
  }
  {
    NEED("nccltests_gb10_2node_v2_20_format_dgxspark103.txt");
    EXPECT_EQ(log.tests_version, "2.20.0");
    EXPECT_EQ(log.test, "all_reduce_perf");
    EXPECT_EQ(log.devices.size(), 2u);
    ASSERT_FALSE(log.rows.empty());
    EXPECT_EQ(log.rows[0].bytes, 8192u);
  }
  {
    NEED("nccltests_h100_2node_1gpu_tree_nccltests232.txt");
    EXPECT_EQ(log.env.at("NCCL_ALGO"), "Tree");  // from mpirun -x
  }
}

TEST(NcclLogs, InventedRemovedAndDebugSettingsAreCalledOut) {
  // SYNTHETIC: the lines NCCL prints for variables it reads, and mpirun -x for the rest.
  const auto log = parse_nccl_log(
      "node:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
      "$ mpirun -x NCCL_SOCKET_TIMEOUT=1200000 -x NCCL_TREE_THRESHOLD=0 -x NCCL_P2P_DISABLE=0 ./all_reduce_perf\n",
      "t.log");
  const auto f = nccl_findings(log);
  int env = 0;
  for (const auto& x : f) env += x.id == "nccl-env";
  EXPECT_EQ(env, 3);  // NCCL_P2P_DISABLE=0 is the default: not flagged
  EXPECT_THROW((void)parse_nccl_log("just some text\n", "x.log"), Error);
}

}  // namespace
}  // namespace gsq::topo
