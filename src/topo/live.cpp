// NVML → the topo -m and topo -p2p matrices.
#include "topo/live.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace gsq::topo {

namespace {

std::string level_code(nvmlGpuTopologyLevel_t level) {
  switch (level) {
    case NVML_TOPOLOGY_INTERNAL:
      return "PIX";  // two GPUs on one board behind its own switch
    case NVML_TOPOLOGY_SINGLE:
      return "PIX";
    case NVML_TOPOLOGY_MULTIPLE:
      return "PXB";
    case NVML_TOPOLOGY_HOSTBRIDGE:
      return "PHB";
    case NVML_TOPOLOGY_NODE:
      return "NODE";
    case NVML_TOPOLOGY_SYSTEM:
      return "SYS";
  }
  return "SYS";
}

std::string p2p_code(nvmlGpuP2PStatus_t s) {
  switch (s) {
    case NVML_P2P_STATUS_OK:
      return "OK";
    case NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED:
      return "CNS";
    case NVML_P2P_STATUS_GPU_NOT_SUPPORTED:
      return "GNS";
    case NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED:
      return "TNS";
    case NVML_P2P_STATUS_DISABLED_BY_REGKEY:
      return "DR";
    case NVML_P2P_STATUS_NOT_SUPPORTED:
      return "NS";
    case NVML_P2P_STATUS_UNKNOWN:
      break;
  }
  return "U";
}

struct Gpu {
  nvmlDevice_t dev{};
  std::string name, bus_id;
  std::map<std::string, int> links_to;  // peer bus id → active links
  int links_to_switch = 0;
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

// The NVLink error counters of every active link, summed (0 where NVML has no counter for it).
uint64_t nvlink_errors(const gpu::NvmlApi& api, nvmlDevice_t dev) {
  if (!api.nvmlDeviceGetNvLinkErrorCounter || !api.nvmlDeviceGetNvLinkState) return 0;
  uint64_t sum = 0;
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    if (api.nvmlDeviceGetNvLinkState(dev, link, &active) != NVML_SUCCESS || active != NVML_FEATURE_ENABLED) continue;
    for (auto c : {NVML_NVLINK_ERROR_DL_REPLAY, NVML_NVLINK_ERROR_DL_RECOVERY, NVML_NVLINK_ERROR_DL_CRC_FLIT,
                   NVML_NVLINK_ERROR_DL_CRC_DATA}) {
      unsigned long long v = 0;
      if (api.nvmlDeviceGetNvLinkErrorCounter(dev, link, c, &v) == NVML_SUCCESS) sum += v;
    }
  }
  return sum;
}

LiveTopology read_live_topology(const gpu::NvmlApi& api, double error_interval_s) {
  if (!api.nvmlDeviceGetCount_v2 || !api.nvmlDeviceGetHandleByIndex_v2 || !api.nvmlDeviceGetPciInfo_v3)
    throw_no_gpu("topo: this driver's NVML lacks the device count, handle or PCI calls");
  LiveTopology out;
  unsigned count = 0;
  if (const auto rc = api.nvmlDeviceGetCount_v2(&count); rc != NVML_SUCCESS)
    throw_no_gpu(fmt::format("topo: nvmlDeviceGetCount failed: {}", gpu::nvml_error_name(rc)));
  std::vector<Gpu> gpus(count);
  for (unsigned i = 0; i < count; ++i) {
    auto& g = gpus[i];
    g.name = fmt::format("GPU{}", i);
    if (const auto rc = api.nvmlDeviceGetHandleByIndex_v2(i, &g.dev); rc != NVML_SUCCESS)
      throw_no_gpu(fmt::format("topo: no handle for GPU {}: {}", i, gpu::nvml_error_name(rc)));
    nvmlPciInfo_t pci{};
    if (api.nvmlDeviceGetPciInfo_v3(g.dev, &pci) == NVML_SUCCESS) g.bus_id = lower(pci.busId);
  }
  // NVLink: count active links per remote end (another GPU by bus id, or a switch).
  const bool nvlink = api.nvmlDeviceGetNvLinkState && api.nvmlDeviceGetNvLinkRemotePciInfo_v2;
  if (!nvlink) out.notes.push_back("NVLink not read: this driver's NVML lacks the link state or remote PCI calls");
  for (auto& g : gpus) {
    if (!nvlink) break;
    LiveTopology::Links mine;
    for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
      nvmlEnableState_t active = NVML_FEATURE_DISABLED;
      if (api.nvmlDeviceGetNvLinkState(g.dev, link, &active) != NVML_SUCCESS) continue;  // no such link
      ++mine.present;
      if (active != NVML_FEATURE_ENABLED) continue;
      ++mine.active;
      if (unsigned v = 0;
          api.nvmlDeviceGetNvLinkVersion && api.nvmlDeviceGetNvLinkVersion(g.dev, link, &v) == NVML_SUCCESS) {
        mine.min_version = mine.min_version == 0 ? v : std::min(mine.min_version, v);
        mine.max_version = std::max(mine.max_version, v);
      }
      nvmlIntNvLinkDeviceType_t type = NVML_NVLINK_DEVICE_TYPE_GPU;
      if (api.nvmlDeviceGetNvLinkRemoteDeviceType &&
          api.nvmlDeviceGetNvLinkRemoteDeviceType(g.dev, link, &type) == NVML_SUCCESS &&
          type == NVML_NVLINK_DEVICE_TYPE_SWITCH) {
        ++g.links_to_switch;
        continue;
      }
      nvmlPciInfo_t remote{};
      if (api.nvmlDeviceGetNvLinkRemotePciInfo_v2(g.dev, link, &remote) == NVML_SUCCESS)
        ++g.links_to[lower(remote.busId)];
    }
    if (mine.present > 0) out.nvlinks[g.name] = mine;
  }
  if (!api.nvmlDeviceGetTopologyCommonAncestor)
    out.notes.push_back("PCIe levels not read: this driver's NVML lacks nvmlDeviceGetTopologyCommonAncestor");
  if (!api.nvmlDeviceGetP2PStatus)
    out.notes.push_back("peer access not read: this driver's NVML lacks nvmlDeviceGetP2PStatus");
  // The error counters twice, `error_interval_s` apart, on GPUs with active links.
  std::vector<uint64_t> before;
  for (const auto& g : gpus) before.push_back(nvlink_errors(api, g.dev));
  if (error_interval_s > 0 &&
      std::any_of(gpus.begin(), gpus.end(), [](const Gpu& g) { return !g.links_to.empty() || g.links_to_switch > 0; }))
    std::this_thread::sleep_for(std::chrono::duration<double>(error_interval_s));
  out.error_interval_s = error_interval_s;
  for (size_t i = 0; i < gpus.size(); ++i)
    if (const uint64_t now = nvlink_errors(api, gpus[i].dev); now > before[i])
      out.nvlink_errors_moving[gpus[i].name] = now - before[i];
  for (auto* m : {&out.links, &out.p2p})
    for (const auto& g : gpus) m->devices.push_back(g.name);
  for (const auto& g : gpus) out.bus_ids.push_back(g.bus_id);
  out.p2p.p2p_status = true;
  for (const auto& a : gpus)
    for (const auto& b : gpus) {
      const auto key = std::make_pair(a.name, b.name);
      if (a.name == b.name) {
        out.links.link[key] = std::string("X");
        out.p2p.link[key] = std::string("X");
        continue;
      }
      // nvidia-smi shows the NVLink count where there is one, else the PCIe level.
      const auto direct = a.links_to.find(b.bus_id);
      if (direct != a.links_to.end() && !b.bus_id.empty()) {
        out.links.link[key] = fmt::format("NV{}", direct->second);
      } else if (a.links_to_switch > 0 && b.links_to_switch > 0) {
        out.links.link[key] = fmt::format("NV{}", std::min(a.links_to_switch, b.links_to_switch));
      } else if (api.nvmlDeviceGetTopologyCommonAncestor) {
        nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_SYSTEM;
        const auto rc = api.nvmlDeviceGetTopologyCommonAncestor(a.dev, b.dev, &level);
        out.links.link[key] = rc == NVML_SUCCESS ? level_code(level) : "";
      }
      if (api.nvmlDeviceGetP2PStatus) {
        nvmlGpuP2PStatus_t s = NVML_P2P_STATUS_UNKNOWN;
        const auto rc = api.nvmlDeviceGetP2PStatus(a.dev, b.dev, NVML_P2P_CAPS_INDEX_READ, &s);
        out.p2p.link[key] = rc == NVML_SUCCESS ? p2p_code(s) : "U";
      }
    }
  return out;
}

std::vector<Finding> nvlink_findings(const LiveTopology& t) {
  std::vector<Finding> out;
  for (const auto& [gpu, n] : t.nvlink_errors_moving)
    out.push_back(make_finding(
        "nvlink-errors-moving", Severity::warn,
        fmt::format("{}'s NVLink error counters rose by {} in {:.1f} s", gpu, n, t.error_interval_s),
        {{"new_errors", std::to_string(n)}, {"interval_s", fmt::format("{:.1f}", t.error_interval_s)}},
        "A link is retrying or recovering now: `nvidia-smi nvlink -e` per link, DCGM diag, and the fabric manager's "
        "log; replays cost bandwidth before a link goes down",
        "NVML NVLink error counters (replay, recovery, CRC); DCGM's NVLink health watch", 5, gpu));
  int most = 0;
  unsigned newest = 0;
  for (const auto& [gpu, l] : t.nvlinks) {
    most = std::max(most, l.active);
    newest = std::max(newest, l.max_version);
  }
  for (const auto& [gpu, l] : t.nvlinks) {
    if (most > 0 && l.active < most)
      out.push_back(make_finding(
          "nvlink-below-peers", Severity::warn,
          fmt::format("{} has {} active NVLink link(s), another GPU here has {}", gpu, l.active, most),
          {{"active", std::to_string(l.active)},
           {"links_on_gpu", std::to_string(l.present)},
           {"most_active_on_a_peer", std::to_string(most)}},
          "A link is down or never trained: `nvidia-smi nvlink -s` names it; NCCL's rings and NVLS move data at "
          "the slowest GPU's rate, so the whole job loses. Check the fabric manager's log and the link's error "
          "counters; reseat or replace the board",
          "NVML nvmlDeviceGetNvLinkState per link, compared across the machine's GPUs", 5, gpu));
    if (newest > 0 && l.min_version > 0 && l.min_version < newest)
      out.push_back(make_finding(
          "nvlink-version-below-peers", Severity::warn,
          fmt::format("{} runs NVLink version {} on a link where another GPU here runs {}", gpu, l.min_version, newest),
          {{"min_version", std::to_string(l.min_version)}, {"newest_on_a_peer", std::to_string(newest)}},
          "Links of one machine normally run one NVLink generation: a lower one is a link trained down or a "
          "different board; `nvidia-smi nvlink -s` and the fabric manager's log say which",
          "NVML nvmlDeviceGetNvLinkVersion per active link", 4, gpu));
  }
  return out;
}

}  // namespace gsq::topo
