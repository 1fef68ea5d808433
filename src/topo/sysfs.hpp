// What NVML does not know about a machine's topology, read from Linux's sysfs: the NICs (RDMA devices and network
// interfaces on PCI) with their PCI path and NUMA node, the PCIe distance between any two PCI devices from their paths,
// the ACS control of the bridges between GPUs (P2P redirected to the root complex: NCCL's troubleshooting guide) and
// whether the IOMMU translates the GPUs' DMA. Every path is under `root` ("/" on a machine; a fake tree in tests).
#pragma once

#include "core/finding.hpp"
#include "gpu/nvml.hpp"
#include "topo/topo_matrix.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gsq::topo {

// A PCI function by its sysfs path: "0000:05:00.0" under /sys/devices/pci0000:00/0000:00:01.1/0000:02:00.0/...
struct PciNode {
  std::string bdf;                   // 0000:05:00.0
  std::string host_bridge;           // pci0000:00
  std::vector<std::string> bridges;  // from the root port down to (not including) the device
  int numa = -1;
};
// Throws Error(bad_input) when the device is not in sysfs.
[[nodiscard]] PciNode pci_node(const std::filesystem::path& root, const std::string& bdf);

// nvidia-smi's words for the path between two devices: PIX (below one switch), PXB (below one root port, through
// several switches), PHB (one host bridge), NODE (host bridges of one NUMA node), SYS (across NUMA nodes).
[[nodiscard]] std::string pci_distance(const PciNode& a, const PciNode& b);

struct Nic {
  std::string name;  // mlx5_0 (RDMA) or eth0 (a network interface with no RDMA device)
  std::string bdf;
  std::string link_layer;  // InfiniBand, Ethernet ("" when not RDMA)
  std::string state;       // ACTIVE, DOWN, … (port 1) or the interface's operstate
  std::string rate;        // "400 Gb/sec (4X NDR)" or the interface's speed in Mb/s
  std::vector<std::string> netdevs;
  PciNode pci;
};
// RDMA devices first (/sys/class/infiniband), then PCI network interfaces without one (/sys/class/net/*/device).
[[nodiscard]] std::vector<Nic> read_nics(const std::filesystem::path& root);

struct AcsState {
  std::string bdf;
  bool readable = false;  // the extended config space (beyond 256 bytes) needs root
  bool present = false;   // the bridge has an ACS capability
  bool src_valid = false, req_redirect = false, cmplt_redirect = false;
  [[nodiscard]] bool redirects() const { return req_redirect || cmplt_redirect; }
};
[[nodiscard]] AcsState read_acs(const std::filesystem::path& root, const std::string& bdf);

// The IOMMU domain type of the device's group ("identity" passes DMA through; "DMA", "DMA-FQ" translate), "" without
// an IOMMU group.
[[nodiscard]] std::string iommu_type(const std::filesystem::path& root, const std::string& bdf);

// A virtual machine (the CPU's "hypervisor" flag in /proc/cpuinfo): ACS and the IOMMU are required there, not faults.
[[nodiscard]] bool in_virtual_machine(const std::filesystem::path& root);

struct SysfsTopology {
  std::vector<Nic> nics;
  std::vector<Finding> findings;   // ACS redirecting between GPUs, IOMMU translating on bare metal
  std::vector<std::string> notes;  // what could not be read (ACS without root, a GPU not in sysfs)
};
// Adds the NICs to `links` (their rows and columns, the NIC legend, GPU and NIC NUMA affinity) from the GPUs' PCI bus
// ids (NVML's "00000000:17:00.0" or sysfs's "0000:17:00.0"), in the order of links.gpus().
[[nodiscard]] SysfsTopology add_sysfs_topology(const std::filesystem::path& root,
                                               const std::vector<std::string>& gpu_bus_ids, bool virtualized,
                                               TopoMatrix& links);

// This machine as `topo` shows it: NVML's GPU matrices with sysfs's NICs added, every check of both (the matrices'
// checks, ACS, IOMMU), and the notes of what could not be read. `api`: an open NVML session's table.
struct MachineTopology {
  TopoMatrix links, p2p;
  std::vector<Finding> findings;
  std::vector<std::string> notes;
};
[[nodiscard]] MachineTopology read_machine_topology(const gpu::NvmlApi& api, const std::filesystem::path& root = "/");

}  // namespace gsq::topo
