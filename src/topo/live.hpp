// The topology of this machine's GPUs read through NVML, as the same matrix `nvidia-smi topo -m` prints: the PCIe level
// of each pair (nvmlDeviceGetTopologyCommonAncestor), NVLink counts (active links whose remote end is the other GPU,
// or an NVSwitch both reach), and the peer-read status of each pair (nvmlDeviceGetP2PStatus) as a -p2p r matrix.
#pragma once

#include "core/finding.hpp"
#include "gpu/nvml.hpp"
#include "topo/topo_matrix.hpp"

#include <map>
#include <string>
#include <vector>

namespace gsq::topo {

struct LiveTopology {
  TopoMatrix links;                  // `topo -m` style: X, NV#, PIX, PXB, PHB, NODE, SYS
  TopoMatrix p2p;                    // `topo -p2p r` style: OK, CNS, GNS, TNS, DR, NS, U
  std::vector<std::string> notes;    // what NVML could not say (a symbol missing in this driver, a call refused)
  std::vector<std::string> bus_ids;  // each GPU's PCI bus id, in order ("" where NVML did not give it)
  // NVLink errors (replay, recovery, CRC flit and data, summed over a GPU's active links) counted while the reading
  // waited `error_interval`: GPU name → new errors. Counters that move now mean a link is failing now (the totals
  // since boot, which `doctor` reports, may be old).
  std::map<std::string, uint64_t> nvlink_errors_moving;
  double error_interval_s = 0;
  // Each GPU's NVLinks: the links NVML knows on it (state readable), those active, and the lowest and highest NVLink
  // version of the active ones (0: not read). GPUs without NVLink are absent.
  struct Links {
    int present = 0, active = 0;
    unsigned min_version = 0, max_version = 0;
  };
  std::map<std::string, Links> nvlinks;
};

// `api` is an open session's table (gpu::Nvml::api()); tests pass a table of fakes. NICs are not read (NVML does not
// know them): topo/sysfs.hpp adds them from the bus ids.
[[nodiscard]] LiveTopology read_live_topology(const gpu::NvmlApi& api, double error_interval_s = 1.0);

// `nvlink-errors-moving` (warn) for each GPU whose NVLink error counters moved during the reading;
// `nvlink-below-peers` (warn) for a GPU with fewer active links than another GPU of the machine has (a link down
// or never trained: NCCL's rings and NVLS run at the slowest GPU's rate); `nvlink-version-below-peers` (warn) for
// a GPU whose links run an older NVLink version than another GPU's.
[[nodiscard]] std::vector<Finding> nvlink_findings(const LiveTopology& t);

}  // namespace gsq::topo
