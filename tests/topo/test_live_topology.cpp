// The live topology reader over a table of fake NVML functions (SYNTHETIC machines: no GPU is needed or touched).
#include "topo/live.hpp"

#include "core/error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>

namespace gsq::topo {
namespace {

// The fake machine the functions below answer for.
struct FakeMachine {
  unsigned gpus = 0;
  std::map<unsigned, unsigned> direct_links;  // GPU → peer GPU its active links reach (count in `links`)
  std::map<unsigned, unsigned> links;         // GPU → number of active links
  std::map<unsigned, unsigned> present;       // GPU → links it has (default: 18 if any is active, else none)
  std::map<unsigned, unsigned> version;       // GPU → NVLink version of its active links (default 4)
  bool to_switch = false;                     // every active link ends at an NVSwitch
  std::map<std::pair<unsigned, unsigned>, nvmlGpuTopologyLevel_t> level;
  std::map<std::pair<unsigned, unsigned>, nvmlGpuP2PStatus_t> p2p;
  std::map<unsigned, unsigned long long> replays_per_read;  // GPU → replay errors each counter read adds
  std::map<unsigned, unsigned long long> replays;           // the counter's value now
};
FakeMachine g_fake;

unsigned index_of(nvmlDevice_t d) {
  return static_cast<unsigned>(reinterpret_cast<uintptr_t>(d) - 1);
}
std::pair<unsigned, unsigned> pair_of(nvmlDevice_t a, nvmlDevice_t b) {
  return {std::min(index_of(a), index_of(b)), std::max(index_of(a), index_of(b))};
}
void bus_id(unsigned i, char* out) {
  const std::string id = "00000000:" + std::to_string(0x10 + i) + ":00.0";
  std::strncpy(out, id.c_str(), NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE);
}

nvmlReturn_t fake_count(unsigned* n) {
  *n = g_fake.gpus;
  return NVML_SUCCESS;
}
nvmlReturn_t fake_handle(unsigned i, nvmlDevice_t* d) {
  if (i >= g_fake.gpus) return NVML_ERROR_INVALID_ARGUMENT;
  *d = reinterpret_cast<nvmlDevice_t>(static_cast<uintptr_t>(i + 1));
  return NVML_SUCCESS;
}
nvmlReturn_t fake_pci(nvmlDevice_t d, nvmlPciInfo_t* p) {
  bus_id(index_of(d), p->busId);
  return NVML_SUCCESS;
}
nvmlReturn_t fake_link_state(nvmlDevice_t d, unsigned link, nvmlEnableState_t* s) {
  const unsigned i = index_of(d);
  const unsigned present = g_fake.present.count(i) ? g_fake.present[i] : g_fake.links[i] > 0 ? 18 : 0;
  if (link >= present) return NVML_ERROR_NOT_SUPPORTED;
  *s = link < g_fake.links[i] ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}
nvmlReturn_t fake_version(nvmlDevice_t d, unsigned, unsigned* v) {
  *v = g_fake.version.count(index_of(d)) ? g_fake.version[index_of(d)] : 4;
  return NVML_SUCCESS;
}
nvmlReturn_t fake_remote_pci(nvmlDevice_t d, unsigned, nvmlPciInfo_t* p) {
  bus_id(g_fake.direct_links.at(index_of(d)), p->busId);
  return NVML_SUCCESS;
}
nvmlReturn_t fake_remote_type(nvmlDevice_t, unsigned, nvmlIntNvLinkDeviceType_t* t) {
  *t = g_fake.to_switch ? NVML_NVLINK_DEVICE_TYPE_SWITCH : NVML_NVLINK_DEVICE_TYPE_GPU;
  return NVML_SUCCESS;
}
nvmlReturn_t fake_ancestor(nvmlDevice_t a, nvmlDevice_t b, nvmlGpuTopologyLevel_t* l) {
  *l = g_fake.level.at(pair_of(a, b));
  return NVML_SUCCESS;
}
nvmlReturn_t fake_p2p(nvmlDevice_t a, nvmlDevice_t b, nvmlGpuP2PCapsIndex_t caps, nvmlGpuP2PStatus_t* s) {
  EXPECT_EQ(caps, NVML_P2P_CAPS_INDEX_READ);
  *s = g_fake.p2p.at(pair_of(a, b));
  return NVML_SUCCESS;
}

nvmlReturn_t fake_errors(nvmlDevice_t d, unsigned, nvmlNvLinkErrorCounter_t c, unsigned long long* v) {
  if (c != NVML_NVLINK_ERROR_DL_REPLAY) {
    *v = 7;  // an old CRC count that never moves
    return NVML_SUCCESS;
  }
  *v = g_fake.replays[index_of(d)] += g_fake.replays_per_read[index_of(d)];
  return NVML_SUCCESS;
}

gpu::NvmlApi fake_api() {
  gpu::NvmlApi api;
  api.nvmlDeviceGetCount_v2 = fake_count;
  api.nvmlDeviceGetHandleByIndex_v2 = fake_handle;
  api.nvmlDeviceGetPciInfo_v3 = fake_pci;
  api.nvmlDeviceGetNvLinkState = fake_link_state;
  api.nvmlDeviceGetNvLinkRemotePciInfo_v2 = fake_remote_pci;
  api.nvmlDeviceGetNvLinkRemoteDeviceType = fake_remote_type;
  api.nvmlDeviceGetTopologyCommonAncestor = fake_ancestor;
  api.nvmlDeviceGetP2PStatus = fake_p2p;
  api.nvmlDeviceGetNvLinkErrorCounter = fake_errors;
  api.nvmlDeviceGetNvLinkVersion = fake_version;
  return api;
}

std::string at(const TopoMatrix& m, const char* a, const char* b) {
  return m.link.at({a, b});
}

TEST(LiveTopology, PcieLevelsNvlinkPairsAndPeerStatusBecomeTheNvidiaSmiMatrices) {
  // Four GPUs: 0 and 1 joined by four NVLinks under one host bridge, 2 and 3 under one PCIe switch on the other
  // socket, peer reads refused by the chipset across the sockets.
  g_fake = {};
  g_fake.gpus = 4;
  g_fake.links = {{0, 4}, {1, 4}};
  g_fake.direct_links = {{0, 1}, {1, 0}};
  for (unsigned a = 0; a < 4; ++a)
    for (unsigned b = a + 1; b < 4; ++b) {
      const bool same_socket = (a < 2) == (b < 2);
      g_fake.level[{a, b}] = !same_socket ? NVML_TOPOLOGY_SYSTEM
                             : a == 0     ? NVML_TOPOLOGY_HOSTBRIDGE
                                          : NVML_TOPOLOGY_SINGLE;
      g_fake.p2p[{a, b}] = same_socket ? NVML_P2P_STATUS_OK : NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED;
    }
  const auto t = read_live_topology(fake_api(), 0);
  EXPECT_EQ(at(t.links, "GPU0", "GPU0"), "X");
  EXPECT_EQ(at(t.links, "GPU0", "GPU1"), "NV4");  // NVLink shown over the PCIe level, as nvidia-smi does
  EXPECT_EQ(at(t.links, "GPU1", "GPU0"), "NV4");
  EXPECT_EQ(at(t.links, "GPU2", "GPU3"), "PIX");
  EXPECT_EQ(at(t.links, "GPU0", "GPU3"), "SYS");
  EXPECT_EQ(at(t.p2p, "GPU0", "GPU2"), "CNS");
  EXPECT_EQ(at(t.p2p, "GPU2", "GPU3"), "OK");
  EXPECT_TRUE(t.notes.empty());
  // The checks of a pasted matrix apply unchanged: pairs across the CPU interconnect, peer access refused.
  std::vector<std::string> ids;
  for (const auto* m : {&t.links, &t.p2p})
    for (const auto& f : topo_findings(*m)) ids.push_back(f.id);
  EXPECT_NE(std::find(ids.begin(), ids.end(), "topo-p2p-unsupported"), ids.end());
  EXPECT_FALSE(ids.empty());
}

TEST(LiveTopology, GpusOnAnNvswitchShowTheirLinkCountAndMissingSymbolsBecomeNotes) {
  g_fake = {};
  g_fake.gpus = 2;
  g_fake.links = {{0, 18}, {1, 18}};
  g_fake.to_switch = true;
  g_fake.level[{0, 1}] = NVML_TOPOLOGY_SYSTEM;
  g_fake.p2p[{0, 1}] = NVML_P2P_STATUS_OK;
  auto api = fake_api();
  EXPECT_EQ(at(read_live_topology(api, 0).links, "GPU0", "GPU1"), "NV18");
  api.nvmlDeviceGetNvLinkState = nullptr;  // an old driver
  api.nvmlDeviceGetP2PStatus = nullptr;
  const auto t = read_live_topology(api, 0);
  EXPECT_EQ(at(t.links, "GPU0", "GPU1"), "SYS");
  EXPECT_EQ(t.p2p.link.count({"GPU0", "GPU1"}), 0U);
  EXPECT_EQ(t.notes.size(), 2U);
  api.nvmlDeviceGetCount_v2 = nullptr;
  EXPECT_THROW((void)read_live_topology(api, 0), Error);
}

TEST(LiveTopology, EightGpusOnNvswitchesWithOneLinkDownShowTheShortPairAndAreUneven) {
  g_fake = {};
  g_fake.gpus = 8;
  for (unsigned g = 0; g < 8; ++g) g_fake.links[g] = g == 5 ? 17 : 18;  // one of GPU5's links is down
  g_fake.to_switch = true;
  for (unsigned a = 0; a < 8; ++a)
    for (unsigned b = a + 1; b < 8; ++b) {
      g_fake.level[{a, b}] = a / 4 == b / 4 ? NVML_TOPOLOGY_NODE : NVML_TOPOLOGY_SYSTEM;
      g_fake.p2p[{a, b}] = NVML_P2P_STATUS_OK;
    }
  const auto t = read_live_topology(fake_api(), 0);
  EXPECT_EQ(at(t.links, "GPU0", "GPU7"), "NV18");
  EXPECT_EQ(at(t.links, "GPU5", "GPU2"), "NV17");
  std::vector<std::string> ids;
  for (const auto& f : topo_findings(t.links)) ids.push_back(f.id);
  EXPECT_NE(std::find(ids.begin(), ids.end(), "topo-nvlink-uneven"), ids.end());
  // The GPU itself is named: 17 active of its 18 links where its peers have 18.
  const auto f = nvlink_findings(t);
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].id, "nvlink-below-peers");
  EXPECT_EQ(f[0].subject, "GPU5");
  EXPECT_EQ(t.nvlinks.at("GPU5").active, 17);
  EXPECT_EQ(t.nvlinks.at("GPU5").present, 18);
}

TEST(LiveTopology, ALinkOnAnOlderNvlinkVersionThanItsPeersIsAFindingAndPcieCardsAreNotCompared) {
  // Two NVLink-bridged pairs on NVLink 4, one GPU's links trained at version 3; two PCIe cards without NVLink.
  g_fake = {};
  g_fake.gpus = 6;
  g_fake.links = {{0, 4}, {1, 4}, {2, 4}, {3, 4}};
  g_fake.direct_links = {{0, 1}, {1, 0}, {2, 3}, {3, 2}};
  g_fake.version = {{3, 3}};
  for (unsigned a = 0; a < 6; ++a)
    for (unsigned b = a + 1; b < 6; ++b) {
      g_fake.level[{a, b}] = NVML_TOPOLOGY_NODE;
      g_fake.p2p[{a, b}] = NVML_P2P_STATUS_OK;
    }
  const auto t = read_live_topology(fake_api(), 0);
  EXPECT_EQ(t.nvlinks.size(), 4U);  // the PCIe cards have no links to compare
  const auto f = nvlink_findings(t);
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].id, "nvlink-version-below-peers");
  EXPECT_EQ(f[0].subject, "GPU3");
  // A bridged pair with one of its links down is below its peers; the cards without NVLink still are not.
  g_fake.version.clear();
  g_fake.links[2] = 3;
  const auto down = nvlink_findings(read_live_topology(fake_api(), 0));
  ASSERT_EQ(down.size(), 1U);
  EXPECT_EQ(down[0].id, "nvlink-below-peers");
  EXPECT_EQ(down[0].subject, "GPU2");
}

TEST(LiveTopology, NvlinkErrorCountersThatMoveDuringTheReadingAreAFinding) {
  g_fake = {};
  g_fake.gpus = 2;
  g_fake.links = {{0, 4}, {1, 4}};
  g_fake.direct_links = {{0, 1}, {1, 0}};
  g_fake.level[{0, 1}] = NVML_TOPOLOGY_SINGLE;
  g_fake.p2p[{0, 1}] = NVML_P2P_STATUS_OK;
  g_fake.replays_per_read = {{1, 5}};  // GPU1's replay counter rises by 5 at every read of it
  const auto t = read_live_topology(fake_api(), 0);
  ASSERT_EQ(t.nvlink_errors_moving.size(), 1U);  // GPU0's counters hold still (old CRC counts do not count)
  // Four links read twice: the second pass reads 25, 30, 35, 40 against the first one's 5, 10, 15, 20 — 4 × 20.
  EXPECT_EQ(t.nvlink_errors_moving.at("GPU1"), 80U);
  const auto f = nvlink_findings(t);
  ASSERT_EQ(f.size(), 1U);
  EXPECT_EQ(f[0].id, "nvlink-errors-moving");
  EXPECT_EQ(f[0].subject, "GPU1");
  EXPECT_EQ(f[0].severity, Severity::warn);
}

}  // namespace
}  // namespace gsq::topo
