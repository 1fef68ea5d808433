// The triage corpus (tests/data/triage: real logs from public threads, each labelled from its thread): what the readers
// must find in them, by meaning. The whole corpus is judged by bench/triage/corpus.py (CTest triage_corpus).
#include "topo/log_framing.hpp"
#include "topo/nccl_logs.hpp"
#include "topo/topo_matrix.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"

#include <gtest/gtest.h>

#include <filesystem>

namespace gsq::topo {
namespace {

namespace fs = std::filesystem;

fs::path corpus(const std::string& name) {
  return fs::path(GSQ_SOURCE_DIR) / "tests/data/triage" / name;
}

struct Read {
  NcclLog log;
  std::vector<Finding> findings;
  [[nodiscard]] const Finding* find(const std::string& id) const {
    for (const auto& f : findings)
      if (f.id == id) return &f;
    return nullptr;
  }
  [[nodiscard]] bool fatal() const { return worst(findings) == Severity::fail; }
};

Read read(const std::string& name) {
  Read r{parse_nccl_log(read_text_file(corpus(name)), name), {}};
  r.findings = nccl_findings(r.log);
  return r;
}

std::string evidence(const Finding& f, const std::string& name) {
  for (const auto& e : f.evidence)
    if (e.name == name) return e.value;
  return {};
}

TEST(LogFraming, LauncherPrefixesComeOffAndNameTheRank) {
  int rank = -1;
  EXPECT_EQ(strip_prefixes("[1,3]<stdout>:host:1:2 [0] NCCL INFO x", rank), "host:1:2 [0] NCCL INFO x");
  EXPECT_EQ(rank, 3);
  rank = -1;
  EXPECT_EQ(strip_prefixes("12: # nThread 1", rank), "# nThread 1");
  EXPECT_EQ(rank, 12);
  rank = -1;
  EXPECT_EQ(strip_prefixes("[rank7]:[E ProcessGroupNCCL.cpp:1] x", rank), "[E ProcessGroupNCCL.cpp:1] x");
  EXPECT_EQ(rank, 7);
  rank = -1;
  EXPECT_EQ(
      strip_prefixes("(RayWorkerWrapper pid=12, ip=10.0.0.1) 2024-05-11 14:10:52,224 host:1:2 [0] NCCL INFO y", rank),
      "host:1:2 [0] NCCL INFO y");
  rank = -1;
  EXPECT_EQ(strip_prefixes("worker-1: host:1:2 [0] NCCL WARN z", rank), "host:1:2 [0] NCCL WARN z");
  // Never a message's own "Error: …", and an NCCL line keeps its host.
  EXPECT_EQ(strip_prefixes("RuntimeError: NCCL error", rank), "RuntimeError: NCCL error");
  EXPECT_EQ(strip_prefixes("node2:1208:1208 [0] NCCL INFO a", rank), "node2:1208:1208 [0] NCCL INFO a");
  // Open MPI's tag in the middle of an interleaved row.
  EXPECT_EQ(strip_prefixes("  8  2  float  sum  -1[1,1]<stdout>:  5.1", rank), "  8  2  float  sum  -1  5.1");
  // A watchdog record glued after a long progress bar keeps its rank; a "Rank N]" far into other text is no rank.
  rank = -1;
  (void)strip_prefixes(std::string(230, '#') + "[E ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught", rank);
  EXPECT_EQ(rank, 2);
  rank = -1;
  (void)strip_prefixes(std::string(230, '#') + " see Rank 5] in the table", rank);
  EXPECT_EQ(rank, -1);
}

TEST(TriageCorpus, OlderIbCompletionFormatGivesTheStatus) {
  const auto r = read("nccl-errors/ib_error4_vendor81_send_fe80_h100_nccl928.log");
  const auto* f = r.find("nccl-ib-completion-error");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(evidence(*f, "status"), "4");
  EXPECT_EQ(evidence(*f, "vendor_err"), "81");
  EXPECT_TRUE(r.fatal());
}

TEST(TriageCorpus, BootstrapTruncationIsAVersionOrJobMismatch) {
  const auto r = read("nccl-errors/bootstrap_truncated_256_vs_4_slurm_prefix_nccl1176.log");
  const auto* f = r.find("nccl-bootstrap-mismatch");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(evidence(*f, "received"), "256");
  EXPECT_TRUE(r.fatal());
}

TEST(TriageCorpus, WatchdogWithoutNumelInOlderFormatsIsATimeout) {
  const auto r = read("torch-dist/pytorch118369_old_format_no_numel.log");
  ASSERT_FALSE(r.log.timeouts.empty());
  EXPECT_FALSE(r.log.timeouts.front().op.empty());
  EXPECT_EQ(r.log.timeouts.front().numel, -1);  // not in the message: unknown, never a made-up 0
  EXPECT_NE(r.find("nccl-watchdog-timeout"), nullptr);
  EXPECT_TRUE(r.fatal());
}

TEST(TriageCorpus, DesyncReportNamesTheLaggingRank) {
  const auto r = read("torch-dist/pytorch152623_desync_report_rank7_lagging.log");
  EXPECT_TRUE(r.log.lagging_ranks.contains(7));
  EXPECT_NE(r.find("nccl-lagging-rank"), nullptr);
}

// torchtune#2093: rank 0 enqueued more (#619732) but completed less (#619724) than rank 3 (#619730, #619726); the
// thread's maintainers: rank 0 is two collectives behind. Behind is by completed work, not by enqueued.
TEST(TriageCorpus, TheRankBehindIsTheOneThatCompletedLess) {
  const auto r = read("torch-dist/torchtune2093_checkpoint_save_rank0_behind_rank3.log");
  const auto* f = r.find("nccl-lagging-rank");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(evidence(*f, "ranks"), "0");
}

TEST(TriageCorpus, ProgressIsNeverInventedWhenTheLogDoesNotSayIt) {
  for (const auto& name :
       {"torch-dist/pytorch118369_old_format_no_numel.log", "torch-dist/basicsr737_allreduce_seq808.log"}) {
    const auto r = read(name);
    const auto* f = r.find("nccl-watchdog-timeout");
    ASSERT_NE(f, nullptr) << name;
    if (r.log.progress.empty()) {
      EXPECT_EQ(f->title.find("#-1"), std::string::npos) << f->title;
    }
  }
}

TEST(TriageCorpus, RanksCalledDifferentCollectivesIsACodeBug) {
  const auto r = read("torch-dist/pytorch20630_optype_mismatch_broadcast_vs_allreduce.log");
  EXPECT_NE(r.find("nccl-collective-mismatch"), nullptr);
  EXPECT_TRUE(r.fatal());
}

TEST(TriageCorpus, StoreTimeoutBeforeNcclIsNamed) {
  const auto r = read("torch-dist/pytorch69197_c10d_rdzv_connect_timed_out.log");
  EXPECT_NE(r.find("nccl-store-timeout"), nullptr);
  EXPECT_TRUE(r.fatal());
}

TEST(TriageCorpus, ProcessesOnDifferentNetworksCannotConnect) {
  const auto r = read("nccl-info/sock_nccltests188_mixed_ib_socket_nodes.log");
  const auto* f = r.find("nccl-socket-fallback");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::fail);
}

TEST(TriageCorpus, HealthySingleNodeInitOnSocketsIsNotAnAlarm) {
  const auto r = read("nccl-info/p2p_nccl1190_2080ti_direct_shared_memory_lo.log");
  EXPECT_LT(worst(r.findings), Severity::warn);
  EXPECT_EQ(r.log.transports.count("SHM"), 1U);  // NCCL 2.4's "via direct shared memory"
}

TEST(TriageCorpus, NcclTestsLayoutsReadWithTheirRows) {
  // Old alltoall: no redop column, Open MPI tags, float error column.
  const auto a = read("nccl-tests/tutel172_alltoall_tag_output_old_layout.log");
  EXPECT_GE(a.log.rows.size(), 5U);
  EXPECT_LT(worst(a.findings), Severity::fail);
  // mpirun's "[0]" glued into every row.
  const auto b = read("nccl-tests/nccl1453_h100_3node_rank0_prefix_cliff64M.log");
  EXPECT_GE(b.log.rows.size(), 5U);
  EXPECT_NE(b.find("nccl-tests-cliff"), nullptr);
}

TEST(TriageCorpus, BandwidthIsJudgedAgainstTheHardware) {
  // 8×H100 through NVSwitch at 480 GB/s: as expected.
  const auto ok = read("nccl-tests/nccltests347_8xh100_single_node_nvls_480.log");
  EXPECT_EQ(ok.find("nccl-tests-low-bandwidth"), nullptr);
  EXPECT_NE(ok.find("nccl-tests-bandwidth"), nullptr);
  // 8 nodes of V100 at 4.3 GB/s: below what one 100 Gb/s NIC carries.
  const auto low = read("nccl-tests/nccltests78_8node_v100_100gib_allreduce_4gbps.log");
  EXPECT_NE(low.find("nccl-tests-low-bandwidth"), nullptr);
}

TEST(TriageCorpus, TheOfiPluginsFailuresReadAsTheirIbCounterparts) {
  // AWS EFA through aws-ofi-nccl: libfabric finds no EFA device (fi_getinfo: No data available) → no RDMA network;
  // a send completing with an error → a failed network completion, fatal.
  const auto none = read(
      "nccl-errors/"
      "awsofi1020_p5_container_timestamp_prefix_nccl_net_ofi_rdma_init_fi_getinfo_no_data_available_dev_infiniband_not_"
      "exposed.log");
  EXPECT_NE(none.find("nccl-ib-unavailable"), nullptr);
  EXPECT_EQ(none.find("nccl-nccl-system-error"), nullptr);
  const auto failed = read(
      "nccl-errors/"
      "awsofi156_mpijob_tag_output_backticked_ofi_process_cq_rc20_rxr_tx_error_not_a_directory_efa_security_group.log");
  EXPECT_NE(failed.find("nccl-ib-completion-error"), nullptr);
  EXPECT_TRUE(failed.fatal());
}

TEST(TriageCorpus, ABenchmarksOwnBusBandwidthIsReadNotRefused) {
  const auto r =
      read("nccl-info/skypilot3592_gcp_2x_h100x8_no_tcpx_allreduce_bench_40gb_busbw_151gbps_ray_head_prefix.log");
  ASSERT_EQ(r.log.reported_busbw.size(), 1U);
  EXPECT_NEAR(r.log.reported_busbw.front(), 18.973, 1e-9);
  EXPECT_EQ(r.log.reported_ranks, 16);
  const auto* f = r.find("nccl-reported-bandwidth");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(evidence(*f, "ranks"), "16");
  // nccl-tests' own header names the column, no value: not a reported bandwidth.
  EXPECT_TRUE(read("nccl-tests/nccltests347_8xh100_single_node_nvls_480.log").log.reported_busbw.empty());
}

TEST(TriageCorpus, ASlurmOomKillIsTheHostsMemoryRunningOut) {
  // slurmstepd's "Detected 1 oom_kill event … have been OOM Killed": the kernel's OOM killer, fatal, whatever else
  // the step's teardown printed (CXI services busy, the other tasks terminated).
  const auto r = read(
      "torch-dist/"
      "lumiai20241126_e12_slurmstepd_oom_kill_cxi_service_busy_task0_out_of_memory_fsdp_full_state_dict_save_70b.log");
  EXPECT_NE(r.find("nccl-nccl-oom"), nullptr);
  EXPECT_TRUE(r.fatal());
}

TEST(TriageCorpus, WrongResultsAreFatal) {
  const auto r = read("nccl-tests/nccltests37_v100_allgather_4G_oob_failed.log");
  EXPECT_NE(r.find("nccl-tests-wrong"), nullptr);
  EXPECT_TRUE(r.fatal());
}

TEST(TriageCorpus, TruncatedTopologyJudgesOnlyTheRowsThere) {
  const auto m = parse_topo_matrix(read_text_file(corpus("topo/nccl1357_h100_4nics_odd_gpus_no_local_nic.log")), "t");
  const auto f = topo_findings(m);
  size_t without = 0;
  for (const auto& x : f) without += x.id == "topo-gpu-without-near-nic";
  EXPECT_EQ(without, 3U);  // GPU1, GPU3, GPU5; GPU7's row was cut off and is not judged
  EXPECT_TRUE(std::any_of(f.begin(), f.end(), [](const Finding& x) { return x.id == "topo-truncated"; }));
}

// A docs page's markdown table of the matrix (held-out batch 57, first pass refused): the affinity columns first, the
// row's device in a column of its own, NIC names with escaped underscores. Read as nvidia-smi prints it.
TEST(TriageCorpus, AMarkdownPipeTableOfTheMatrixIsRead) {
  const auto m = parse_topo_matrix(
      read_text_file(corpus("topo/alcfpolarisguide_4xa100_nv4_single_socket_four_numa_mlx5_phb_gpu3_gpu1_markdown_"
                            "pipe_table_escaped_underscores.log")),
      "t");
  EXPECT_EQ(m.gpus().size(), 4U);
  EXPECT_EQ(m.nics(), (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
  EXPECT_EQ(m.link.at({"GPU3", "mlx5_0"}), "PHB");
  EXPECT_EQ(m.link.at({"GPU0", "GPU1"}), "NV4");
  EXPECT_EQ(m.cpu_affinity.at("GPU0"), "24-31,56-63");
  EXPECT_EQ(m.numa_affinity.at("GPU0"), "3");
  // A pipe in a line that is no table changes nothing (this text holds no matrix either way).
  EXPECT_THROW((void)parse_topo_matrix("a | b\n", "t"), Error);
}

}  // namespace
}  // namespace gsq::topo
