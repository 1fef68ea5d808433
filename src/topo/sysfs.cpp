// The sysfs side of the topology (see sysfs.hpp).
#include "topo/sysfs.hpp"

#include "core/error.hpp"
#include "host/facts.hpp"
#include "topo/live.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>

namespace gsq::topo {

namespace fs = std::filesystem;

namespace {

// A sysfs value: the file's first line without trailing spaces, "" when unreadable.
std::string read_line(const fs::path& p) {
  const auto f = host::read_first_line(p);
  std::string s = f.ok() ? *f : "";
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

bool is_bdf(const std::string& s) {  // dddd:bb:dd.f
  return s.size() == 12 && s[4] == ':' && s[7] == ':' && s[10] == '.';
}

fs::path sys(const fs::path& root, const std::string& rel) {
  return root / fs::path(rel).relative_path();
}

Finding make(const char* id, Severity sev, std::string title, std::vector<Evidence> ev, std::string fix,
             std::string subject) {
  return make_finding(id, sev, std::move(title), std::move(ev), std::move(fix),
                      "NCCL troubleshooting guide (PCI Access Control Services, IOMMU); sysfs", 5, std::move(subject));
}

}  // namespace

PciNode pci_node(const fs::path& root, const std::string& bdf) {
  const auto link = sys(root, "/sys/bus/pci/devices") / bdf;
  std::error_code ec;
  const auto real = fs::canonical(link, ec);
  if (ec) throw_bad_input(fmt::format("PCI device {} is not in sysfs ({})", bdf, link.string()));
  PciNode n;
  n.bdf = bdf;
  for (const auto& part : real) {
    const std::string s = part.string();
    if (s.starts_with("pci") && s.size() > 3 && s.find(':') != std::string::npos)
      n.host_bridge = s;
    else if (is_bdf(s) && s != bdf)
      n.bridges.push_back(s);
  }
  try {
    n.numa = std::stoi(read_line(real / "numa_node"));
  } catch (...) {
    n.numa = -1;
  }
  return n;
}

std::string pci_distance(const PciNode& a, const PciNode& b) {
  if (a.host_bridge != b.host_bridge) return a.numa >= 0 && a.numa == b.numa ? "NODE" : "SYS";
  size_t common = 0;
  while (common < a.bridges.size() && common < b.bridges.size() && a.bridges[common] == b.bridges[common]) ++common;
  // bridges[0] is the root port; [1] a switch's upstream port, [2] its downstream ports.
  if (common >= 2) return "PIX";
  if (common == 1) return "PXB";
  return "PHB";
}

std::vector<Nic> read_nics(const fs::path& root) {
  std::vector<Nic> out;
  std::set<std::string> taken;  // PCI functions already listed as an RDMA device
  std::error_code ec;
  const auto ib = sys(root, "/sys/class/infiniband");
  if (fs::is_directory(ib, ec))
    for (const auto& d : fs::directory_iterator(ib, ec)) {
      Nic n;
      n.name = d.path().filename().string();
      const auto dev = fs::canonical(d.path() / "device", ec);
      if (ec) continue;
      n.bdf = dev.filename().string();
      if (!is_bdf(n.bdf)) continue;
      n.link_layer = read_line(d.path() / "ports/1/link_layer");
      n.state = read_line(d.path() / "ports/1/state");  // "4: ACTIVE"
      if (const auto colon = n.state.find(": "); colon != std::string::npos) n.state = n.state.substr(colon + 2);
      n.rate = read_line(d.path() / "ports/1/rate");
      if (fs::is_directory(dev / "net", ec))
        for (const auto& nd : fs::directory_iterator(dev / "net", ec)) n.netdevs.push_back(nd.path().filename());
      std::sort(n.netdevs.begin(), n.netdevs.end());
      n.pci = pci_node(root, n.bdf);
      taken.insert(n.bdf);
      out.push_back(std::move(n));
    }
  const auto net = sys(root, "/sys/class/net");
  if (fs::is_directory(net, ec))
    for (const auto& d : fs::directory_iterator(net, ec)) {
      const auto dev = fs::canonical(d.path() / "device", ec);
      if (ec || !is_bdf(dev.filename().string()) || taken.count(dev.filename().string())) continue;
      Nic n;
      n.name = d.path().filename().string();
      n.bdf = dev.filename().string();
      n.state = read_line(d.path() / "operstate");
      const auto speed = read_line(d.path() / "speed");
      n.rate = speed.empty() || speed.starts_with("-") ? std::string() : fmt::format("{} Mb/s", speed);
      n.netdevs = {n.name};
      n.pci = pci_node(root, n.bdf);
      out.push_back(std::move(n));
    }
  std::sort(out.begin(), out.end(), [](const Nic& a, const Nic& b) {
    return std::make_pair(a.link_layer.empty(), a.name) < std::make_pair(b.link_layer.empty(), b.name);
  });
  return out;
}

AcsState read_acs(const fs::path& root, const std::string& bdf) {
  AcsState a;
  a.bdf = bdf;
  std::ifstream in(sys(root, "/sys/bus/pci/devices") / bdf / "config", std::ios::binary);
  const std::string cfg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (cfg.size() <= 256) return a;  // only the first 256 bytes without root: no extended capabilities
  a.readable = true;
  auto u32 = [&](size_t at) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(cfg[at + static_cast<size_t>(i)]);
    return v;
  };
  size_t at = 0x100;
  for (int guard = 0; guard < 64 && at >= 0x100 && at + 8 <= cfg.size(); ++guard) {
    const uint32_t header = u32(at);
    if (header == 0 || header == 0xffffffff) break;
    if ((header & 0xffff) == 0x000d) {  // ACS extended capability; control register at +6
      a.present = true;
      const uint32_t ctrl = u32(at + 4) >> 16;
      a.src_valid = ctrl & 0x1;
      a.req_redirect = ctrl & 0x4;
      a.cmplt_redirect = ctrl & 0x8;
      break;
    }
    at = header >> 20;
  }
  return a;
}

std::string iommu_type(const fs::path& root, const std::string& bdf) {
  std::error_code ec;
  const auto group = fs::canonical(sys(root, "/sys/bus/pci/devices") / bdf / "iommu_group", ec);
  if (ec) return "";
  return read_line(group / "type");
}

bool in_virtual_machine(const fs::path& root) {
  std::ifstream in(sys(root, "/proc/cpuinfo"));
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("flags") && line.find(" hypervisor") != std::string::npos) return true;
  return false;
}

SysfsTopology add_sysfs_topology(const fs::path& root, const std::vector<std::string>& gpu_bus_ids, bool virtualized,
                                 TopoMatrix& links) {
  SysfsTopology out;
  const auto gpus = links.gpus();
  std::vector<std::optional<PciNode>> gpu_pci(gpus.size());
  for (size_t i = 0; i < gpus.size() && i < gpu_bus_ids.size(); ++i) {
    std::string id = gpu_bus_ids[i];
    if (id.size() > 12) id = id.substr(id.size() - 12);  // NVML's 8-digit domain → sysfs's 4
    std::transform(id.begin(), id.end(), id.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    try {
      gpu_pci[i] = pci_node(root, id);
      if (gpu_pci[i]->numa >= 0) links.numa_affinity[gpus[i]] = std::to_string(gpu_pci[i]->numa);
    } catch (const Error& e) {
      out.notes.push_back(fmt::format("{}: {}", gpus[i], e.what()));
    }
  }
  try {
    out.nics = read_nics(root);
  } catch (const Error& e) {
    out.notes.push_back(fmt::format("NICs not read: {}", e.what()));
  }
  for (size_t k = 0; k < out.nics.size(); ++k) {
    const auto& nic = out.nics[k];
    const std::string name = fmt::format("NIC{}", k);
    links.devices.push_back(name);
    links.nic_names[name] = nic.name;
    links.link[{name, name}] = std::string("X");
    for (size_t i = 0; i < gpus.size(); ++i) {
      const std::string d = gpu_pci[i] ? pci_distance(*gpu_pci[i], nic.pci) : "";
      links.link[{gpus[i], name}] = d;
      links.link[{name, gpus[i]}] = d;
    }
    for (size_t j = 0; j < k; ++j) {
      const std::string other = fmt::format("NIC{}", j);
      links.link[{name, other}] = links.link[{other, name}] = pci_distance(nic.pci, out.nics[j].pci);
    }
  }
  // ACS on every bridge above two or more GPUs that share a host bridge (the path P2P takes between them).
  std::set<std::string> shared;
  for (size_t i = 0; i < gpu_pci.size(); ++i)
    for (size_t j = i + 1; j < gpu_pci.size(); ++j) {
      if (!gpu_pci[i] || !gpu_pci[j] || gpu_pci[i]->host_bridge != gpu_pci[j]->host_bridge) continue;
      for (const auto* g : {&*gpu_pci[i], &*gpu_pci[j]})
        for (const auto& b : g->bridges) shared.insert(b);
    }
  size_t unreadable = 0;
  for (const auto& b : shared) {
    const auto acs = read_acs(root, b);
    if (!acs.readable) {
      ++unreadable;
      continue;
    }
    if (acs.present && (acs.redirects() || acs.src_valid) && !virtualized)
      out.findings.push_back(make(
          "acs-redirect", Severity::warn,
          fmt::format("ACS on bridge {} sends P2P between GPUs through the root complex", b),
          {{"bridge", b},
           {"ACSCtl", fmt::format("SrcValid{} ReqRedir{} CmpltRedir{}", acs.src_valid ? '+' : '-',
                                  acs.req_redirect ? '+' : '-', acs.cmplt_redirect ? '+' : '-')}},
          "On bare metal turn ACS off for the GPUs' switches (BIOS: IO virtualization / VT-d / ACS), or per bridge "
          "until reboot with `setpci -s BRIDGE ECAP_ACS+0x6.w=0000`; P2P through the root complex is slow or hangs",
          fmt::format("bridge {}", b)));
  }
  if (unreadable > 0)
    out.notes.push_back(
        fmt::format("ACS of {} bridge(s) between GPUs not read: the extended PCI config space needs root", unreadable));
  for (size_t i = 0; i < gpu_pci.size(); ++i) {
    if (!gpu_pci[i]) continue;
    const auto type = iommu_type(root, gpu_pci[i]->bdf);
    if (type.starts_with("DMA") && !virtualized)
      out.findings.push_back(
          make("iommu-translating", Severity::warn,
               fmt::format("The IOMMU translates {}'s DMA (domain type {})", gpus[i], type),
               {{"bdf", gpu_pci[i]->bdf}, {"iommu_group_type", type}},
               "On bare metal boot with iommu=pt (Intel: intel_iommu=on iommu=pt) or turn VT-d/IOMMU "
               "off: translated P2P and GPUDirect RDMA go through the root complex, slowly or not at "
               "all",
               gpus[i]));
  }
  return out;
}

MachineTopology read_machine_topology(const gpu::NvmlApi& api, const fs::path& root) {
  auto live = read_live_topology(api);
  auto sysfs = add_sysfs_topology(root, live.bus_ids, in_virtual_machine(root), live.links);
  MachineTopology m{std::move(live.links), std::move(live.p2p), std::move(sysfs.findings), std::move(live.notes)};
  m.notes.insert(m.notes.end(), sysfs.notes.begin(), sysfs.notes.end());
  for (const auto* matrix : {&m.links, &m.p2p})
    for (auto& f : topo_findings(*matrix)) m.findings.push_back(std::move(f));
  for (auto& f : nvlink_findings(live)) m.findings.push_back(std::move(f));
  return m;
}

}  // namespace gsq::topo
