// `gpusqueeze topo`: this machine's GPU topology through NVML, or (--from FILE) a pasted `nvidia-smi topo -m` or
// `topo -p2p rw` read and checked on any machine.
#include "cli/common.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "core/table.hpp"
#include "report/report.hpp"
#include "topo/live.hpp"
#include "topo/sysfs.hpp"
#include "topo/topo_matrix.hpp"

#include <iostream>

namespace gsq::cli {

namespace {

struct TopoCliOptions {
  std::string from;
  bool json = false;
  std::string root = "/";
};

Table matrix_table(const topo::TopoMatrix& m) {
  Table t{{""}, {}};
  for (const auto& d : m.devices) t.header.push_back(d);
  const bool affinity = !m.cpu_affinity.empty();
  if (affinity) t.header.push_back("CPU affinity");
  for (const auto& r : m.devices) {
    std::vector<std::string> row{r};
    for (const auto& c : m.devices) {
      const auto it = m.link.find({r, c});
      row.push_back(it == m.link.end() ? "" : it->second);
    }
    if (affinity) row.push_back(m.cpu_affinity.count(r) ? m.cpu_affinity.at(r) : "");
    t.rows.push_back(std::move(row));
  }
  return t;
}

int run_topo(const TopoCliOptions& o) {
  std::vector<topo::TopoMatrix> matrices;
  std::vector<std::string> notes;
  std::vector<Finding> findings;
  std::string origin;
  if (o.from.empty()) {
    const auto nvml = gpu::Nvml::open();  // no driver: exit 3 with the reason
    auto machine = topo::read_machine_topology(nvml.api(), o.root);
    matrices = {std::move(machine.links), std::move(machine.p2p)};
    notes = std::move(machine.notes);
    findings = std::move(machine.findings);
    origin = "this machine (NVML and sysfs)";
  } else {
    matrices.push_back(topo::parse_topo_matrix(read_text_file(o.from), o.from));
    origin = o.from;
    findings = topo::topo_findings(matrices[0]);
  }
  if (o.json) {
    auto j = topo::to_json(matrices[0], findings);
    if (matrices.size() > 1) j["p2p_read"] = topo::to_json(matrices[1], {})["links"];
    j["notes"] = notes;
    std::cout << j.dump(2) << '\n';
  } else {
    std::cout << "# Topology: " << origin << "\n\n" << matrix_table(matrices[0]).markdown();
    if (matrices.size() > 1)
      std::cout << "\nPeer reads (nvidia-smi topo -p2p r):\n\n" << matrix_table(matrices[1]).markdown();
    for (const auto& n : notes) std::cout << "\nnote: " << n << '\n';
    if (!findings.empty()) std::cout << '\n' << report::findings_table(findings).markdown();
  }
  return worst(findings) == Severity::fail ? static_cast<int>(ExitCode::findings) : 0;
}

}  // namespace

Action register_topo(CLI::App& app) {
  auto o = std::make_shared<TopoCliOptions>();
  auto* cmd = app.add_subcommand("topo", "GPU topology through NVML, or a saved nvidia-smi topo -m (--from), checked");
  cmd->footer(
      "Reads nvidia-smi topo -m (X, NV#, PIX, PXB, PHB, NODE, SYS/SOC; the NIC legend; tabs or spaces, colour codes)\n"
      "or topo -p2p rw (OK, CNS, GNS, TNS, NS, DR) and checks: GPU pairs across the CPU interconnect, uneven NVLink\n"
      "counts, NICs SYS from every GPU, GPUs without a NIC under their switch, peer access not supported.\n"
      "Without --from, reads this machine through NVML (PCIe level, NVLink count and peer-read status of each GPU\n"
      "pair) and sysfs: the NICs (RDMA devices, PCI network interfaces) with their PCIe distance to each GPU, NUMA\n"
      "nodes, ACS on the bridges between GPUs (root needed to read it) and the IOMMU mode of the GPUs; NVLink error\n"
      "counters are read twice, a second apart, and counters that move are a finding.\n"
      "Exit codes: 0 ok, 2 no matrix in the file, 3 no NVIDIA driver.\n"
      "Examples:\n"
      "  gpusqueeze topo\n"
      "  nvidia-smi topo -m > topo.txt;  gpusqueeze topo --from topo.txt\n"
      "  nvidia-smi topo -p2p rw | gpusqueeze topo --from /dev/stdin");
  cmd->add_option("--from", o->from, "A saved nvidia-smi topo -m or topo -p2p output");
  cmd->add_flag("--json", o->json, "Print gpusqueeze.topo/1 JSON");
  cmd->add_option("--root", o->root, "Read sysfs and procfs under this folder instead of / (a copy, for tests)")
      ->capture_default_str();
  return [o] { return run_topo(*o); };
}

}  // namespace gsq::cli
