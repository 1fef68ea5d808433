// Pasted topology matrices posted publicly (../shared/data/nccl/topo_*, sources in each file's first line).
#include "topo/topo_matrix.hpp"

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
  const TopoMatrix m = parse_topo_matrix(read_text_file(file), file.string());      \
  const auto findings = topo_findings(m)

int count(const std::vector<Finding>& f, const std::string& id) {
  return static_cast<int>(std::count_if(f.begin(), f.end(), [&](const Finding& x) { return x.id == id; }));
}

TEST(TopoMatrix, HgxWithTenNicsReadsEveryLinkAndFindsTheNicsFarFromEveryGpu) {
  NEED("topo_8gpu_h100_hgx_10nic.txt");
  EXPECT_EQ(m.gpus().size(), 8u);
  EXPECT_EQ(m.nics().size(), 10u);
  EXPECT_EQ(m.link.at({"GPU0", "GPU7"}), "NV18");
  EXPECT_EQ(m.link.at({"GPU3", "NIC5"}), "PIX");
  EXPECT_EQ(m.cpu_affinity.at("GPU4"), "56-111,168-223");
  EXPECT_EQ(count(findings, "topo-nvlink-uneven"), 0);  // NV18 everywhere
  EXPECT_EQ(count(findings, "topo-nic-far"), 2);        // NIC3 and NIC4 are SYS from every GPU
  EXPECT_EQ(count(findings, "topo-gpu-without-near-nic"), 0);
}

// nvidia-smi topo -m of one H100 (driver 580), recorded by bench/device/multigpu.sh: tab-separated, underlined header
// (ANSI escapes) whose cells are "CPU Affinity", "NUMA Affinity" and "GPU NUMA ID", an empty NUMA ID cell.
TEST(TopoMatrix, OneGpuWithTheNewerHeaderCellsIsRead) {
  const auto m = parse_topo_matrix(read_text_file(test::fixture("h100-topo-m-one-gpu.txt")), "h100");
  EXPECT_EQ(m.gpus(), std::vector<std::string>{"GPU0"});
  EXPECT_EQ(m.link.at({"GPU0", "GPU0"}), "X");
  EXPECT_EQ(m.cpu_affinity.at("GPU0"), "0-15");
  EXPECT_EQ(m.numa_affinity.at("GPU0"), "0");
  EXPECT_TRUE(topo_findings(m).empty());  // nothing between GPUs to judge
}

TEST(TopoMatrix, TwoSocketPcieBoxHasItsCrossSocketPairs) {
  NEED("topo_4gpu_pcie_pxb_pix_sys.txt");
  EXPECT_EQ(m.link.at({"GPU0", "GPU1"}), "PXB");
  EXPECT_EQ(m.link.at({"GPU2", "GPU3"}), "PIX");
  EXPECT_EQ(m.numa_affinity.at("GPU2"), "1");
  EXPECT_EQ(count(findings, "topo-cross-socket"), 1);
  EXPECT_NE(findings.front().evidence.front().value.find("GPU0–GPU2"), std::string::npos);
}

TEST(TopoMatrix, PeerAccessNotSupportedIsNamed) {
  NEED("topo_p2p_rw_2gpu_rtx5090_gns.txt");
  EXPECT_TRUE(m.p2p_status);
  EXPECT_EQ(m.link.at({"GPU0", "GPU1"}), "GNS");
  EXPECT_EQ(count(findings, "topo-p2p-unsupported"), 1);
}

TEST(TopoMatrix, SpacesColourAndSocReadLikeTabs) {
  // SYNTHETIC: the 4-GPU matrix pasted with spaces, ANSI colour and the old driver's SOC.
  const auto m = parse_topo_matrix(
      "\x1b[4mGPU0  GPU1  GPU2  CPU Affinity\x1b[0m\n"
      "GPU0   X    NV4   SOC   0-27\n"
      "GPU1  NV4    X    SOC   0-27\n"
      "GPU2  SOC   SOC    X    28-55\n",
      "pasted.txt");
  EXPECT_EQ(m.link.at({"GPU0", "GPU2"}), "SYS");
  EXPECT_EQ(m.link.at({"GPU1", "GPU0"}), "NV4");
  EXPECT_THROW((void)parse_topo_matrix("no matrix here\n", "x.txt"), Error);
}

TEST(TopoMatrix, CellsGluedByALostTabAreSplit) {
  // SYNTHETIC, in the way a pasted DGX matrix (vllm#13855) lost tabs: "NIC1NIC2" in the header, "NODEPXB" in a row.
  const auto m = parse_topo_matrix(
      "\tGPU0\tGPU1\tNIC0\tNIC1NIC2\tCPU Affinity\n"
      "GPU0\t X \tNV18\tPXB\tNODE\tNODE\t0-55\n"
      "GPU1\tNV18\t X \tNODE\tNODEPXB\t0-55\n",
      "glued.txt");
  EXPECT_EQ(m.link.at({"GPU1", "NIC2"}), "PXB");
  EXPECT_EQ(m.link.at({"GPU1", "NIC1"}), "NODE");
  EXPECT_EQ(m.link.at({"GPU0", "NIC0"}), "PXB");
  for (const auto& f : topo_findings(m)) EXPECT_NE(f.id, "topo-gpu-without-near-nic") << f.title;
}

}  // namespace
}  // namespace gsq::topo
