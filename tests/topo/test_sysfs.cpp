// The sysfs side of `topo` on a SYNTHETIC tree made here (no machine's sysfs is read): two GPUs and an InfiniBand NIC
// under one PCIe switch on socket 0, an Ethernet NIC on socket 1; ACS on the switch's downstream port, one bridge whose
// extended config space is unreadable (as without root), and GPU0 in a translating IOMMU group.
#include "topo/sysfs.hpp"

#include "core/error.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

namespace gsq::topo {
namespace {

namespace fs = std::filesystem;

struct FakeSysfs {
  fs::path root = fs::temp_directory_path() / ("gsq-sysfs-" + std::to_string(::getpid()));
  FakeSysfs() {
    fs::remove_all(root);
    const std::string s0 = "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0";
    device(s0 + "/0000:02:00.0/0000:03:00.0", 0);                   // GPU0
    device(s0 + "/0000:02:01.0/0000:04:00.0", 0);                   // GPU1
    device(s0 + "/0000:02:02.0/0000:05:00.0", 0);                   // mlx5_0
    device("sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0", 1);  // eth0
    fs::create_directories(root / "sys/bus/pci/devices");
    for (const auto& [bdf, path] :
         std::map<std::string, std::string>{{"0000:00:01.0", "sys/devices/pci0000:00/0000:00:01.0"},
                                            {"0000:01:00.0", s0},
                                            {"0000:02:00.0", s0 + "/0000:02:00.0"},
                                            {"0000:02:01.0", s0 + "/0000:02:01.0"},
                                            {"0000:02:02.0", s0 + "/0000:02:02.0"},
                                            {"0000:03:00.0", s0 + "/0000:02:00.0/0000:03:00.0"},
                                            {"0000:04:00.0", s0 + "/0000:02:01.0/0000:04:00.0"},
                                            {"0000:05:00.0", s0 + "/0000:02:02.0/0000:05:00.0"},
                                            {"0000:81:00.0", "sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0"}})
      fs::create_directory_symlink(root / path, root / "sys/bus/pci/devices" / bdf);
    // ACS capability at 0x100 of the downstream port above GPU0: control 0x001d (SrcValid+ ReqRedir+ CmpltRedir+).
    std::string cfg(4096, '\0');
    cfg[0x100] = 0x0d, cfg[0x106] = 0x1d;
    write(s0 + "/0000:02:00.0/config", cfg);
    write(s0 + "/0000:02:01.0/config", std::string(4096, '\0'));  // no ACS capability
    write(s0 + "/config", std::string(256, '\0'));                // only 256 bytes: not root
    // RDMA device and network interfaces.
    fs::create_directories(root / "sys/class/infiniband/mlx5_0/ports/1");
    fs::create_directory_symlink(root / s0 / "0000:02:02.0/0000:05:00.0", root / "sys/class/infiniband/mlx5_0/device");
    write("sys/class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n");
    write("sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
    write("sys/class/infiniband/mlx5_0/ports/1/rate", "400 Gb/sec (4X NDR)\n");
    fs::create_directories(root / s0 / "0000:02:02.0/0000:05:00.0/net/ib0");
    fs::create_directories(root / "sys/class/net/eth0");
    fs::create_directory_symlink(root / "sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0",
                                 root / "sys/class/net/eth0/device");
    write("sys/class/net/eth0/operstate", "up\n");
    write("sys/class/net/eth0/speed", "25000\n");
    fs::create_directories(root / "sys/class/net/lo");  // virtual: no device link
    // IOMMU groups.
    write("sys/kernel/iommu_groups/7/type", "DMA-FQ\n");
    write("sys/kernel/iommu_groups/8/type", "identity\n");
    fs::create_directory_symlink(root / "sys/kernel/iommu_groups/7",
                                 root / s0 / "0000:02:00.0/0000:03:00.0/iommu_group");
    fs::create_directory_symlink(root / "sys/kernel/iommu_groups/8",
                                 root / s0 / "0000:02:01.0/0000:04:00.0/iommu_group");
    write("proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu vme sse2\n");
  }
  ~FakeSysfs() { fs::remove_all(root); }
  void device(const std::string& path, int numa) {
    fs::create_directories(root / path);
    write(path + "/numa_node", std::to_string(numa) + "\n");
  }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel, std::ios::binary) << text;
  }
};

TopoMatrix two_gpus() {
  TopoMatrix m;
  m.devices = {"GPU0", "GPU1"};
  m.link[{"GPU0", "GPU0"}] = m.link[{"GPU1", "GPU1"}] = "X";
  m.link[{"GPU0", "GPU1"}] = m.link[{"GPU1", "GPU0"}] = "PIX";
  return m;
}

TEST(Sysfs, PciDistancesFollowTheBridgesOnThePath) {
  FakeSysfs f;
  const auto gpu0 = pci_node(f.root, "0000:03:00.0"), gpu1 = pci_node(f.root, "0000:04:00.0");
  const auto ib = pci_node(f.root, "0000:05:00.0"), eth = pci_node(f.root, "0000:81:00.0");
  EXPECT_EQ(gpu0.host_bridge, "pci0000:00");
  EXPECT_EQ(gpu0.bridges, (std::vector<std::string>{"0000:00:01.0", "0000:01:00.0", "0000:02:00.0"}));
  EXPECT_EQ(gpu0.numa, 0);
  EXPECT_EQ(pci_distance(gpu0, gpu1), "PIX");
  EXPECT_EQ(pci_distance(gpu0, ib), "PIX");
  EXPECT_EQ(pci_distance(gpu0, eth), "SYS");
  auto other_root_same_node = eth;
  other_root_same_node.numa = 0;
  EXPECT_EQ(pci_distance(gpu0, other_root_same_node), "NODE");
  auto below_root_port = gpu1;
  below_root_port.bridges = {"0000:00:01.0", "0000:01:01.0"};
  EXPECT_EQ(pci_distance(gpu0, below_root_port), "PXB");
  below_root_port.bridges = {"0000:00:02.0"};
  EXPECT_EQ(pci_distance(gpu0, below_root_port), "PHB");
  EXPECT_THROW((void)pci_node(f.root, "0000:99:00.0"), Error);
}

TEST(Sysfs, NicsAreTheRdmaDevicesThenPciInterfacesWithTheirPorts) {
  FakeSysfs f;
  const auto nics = read_nics(f.root);
  ASSERT_EQ(nics.size(), 2u);  // lo has no PCI device
  EXPECT_EQ(nics[0].name, "mlx5_0");
  EXPECT_EQ(nics[0].link_layer, "InfiniBand");
  EXPECT_EQ(nics[0].state, "ACTIVE");
  EXPECT_EQ(nics[0].rate, "400 Gb/sec (4X NDR)");
  EXPECT_EQ(nics[0].netdevs, (std::vector<std::string>{"ib0"}));
  EXPECT_EQ(nics[1].name, "eth0");
  EXPECT_EQ(nics[1].rate, "25000 Mb/s");
  EXPECT_EQ(nics[1].pci.numa, 1);
}

TEST(Sysfs, AcsControlIsReadFromTheExtendedConfigSpace) {
  FakeSysfs f;
  const auto on = read_acs(f.root, "0000:02:00.0");
  EXPECT_TRUE(on.readable && on.present && on.src_valid && on.req_redirect && on.cmplt_redirect);
  const auto none = read_acs(f.root, "0000:02:01.0");
  EXPECT_TRUE(none.readable);
  EXPECT_FALSE(none.present);
  EXPECT_FALSE(read_acs(f.root, "0000:01:00.0").readable);
  EXPECT_EQ(iommu_type(f.root, "0000:03:00.0"), "DMA-FQ");
  EXPECT_EQ(iommu_type(f.root, "0000:05:00.0"), "");
}

TEST(Sysfs, NicsJoinTheMatrixAndAcsAndIommuAreFindingsOnBareMetalOnly) {
  FakeSysfs f;
  auto m = two_gpus();
  EXPECT_FALSE(in_virtual_machine(f.root));
  const auto t = add_sysfs_topology(f.root, {"00000000:03:00.0", "00000000:04:00.0"}, false, m);
  EXPECT_EQ(m.devices, (std::vector<std::string>{"GPU0", "GPU1", "NIC0", "NIC1"}));
  EXPECT_EQ(m.nic_names.at("NIC0"), "mlx5_0");
  EXPECT_EQ((m.link[{"GPU1", "NIC0"}]), "PIX");
  EXPECT_EQ((m.link[{"NIC1", "GPU0"}]), "SYS");
  EXPECT_EQ((m.link[{"NIC0", "NIC1"}]), "SYS");
  EXPECT_EQ(m.numa_affinity.at("GPU0"), "0");
  std::vector<std::string> ids;
  for (const auto& x : t.findings) ids.push_back(x.id + " " + x.subject);
  EXPECT_EQ(ids, (std::vector<std::string>{"acs-redirect bridge 0000:02:00.0", "iommu-translating GPU0"}));
  ASSERT_EQ(t.notes.size(), 1u);  // the root port and the switch's upstream port: 256 bytes only
  EXPECT_NE(t.notes[0].find("needs root"), std::string::npos);

  f.write("proc/cpuinfo", "flags\t\t: fpu hypervisor sse2\n");  // in a VM both are required, not faults
  auto vm = two_gpus();
  EXPECT_TRUE(in_virtual_machine(f.root));
  EXPECT_TRUE(add_sysfs_topology(f.root, {"0000:03:00.0", "0000:04:00.0"}, true, vm).findings.empty());
}

// This machine's own sysfs (whatever it has): every NIC found has a PCI address and a path to its host bridge.
TEST(Sysfs, ThisMachinesNicsReadWithoutError) {
  std::vector<Nic> nics;
  ASSERT_NO_THROW(nics = read_nics("/"));
  for (const auto& n : nics) {
    EXPECT_EQ(n.bdf.size(), 12u) << n.name;
    EXPECT_FALSE(n.pci.host_bridge.empty()) << n.name;
  }
}

}  // namespace
}  // namespace gsq::topo
