// `gpusqueeze topo --from FILE`: a pasted `nvidia-smi topo -m` (or `topo -p2p rw`) read and checked on any machine.
#include "cli/common.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "core/table.hpp"
#include "report/report.hpp"
#include "topo/topo_matrix.hpp"

#include <iostream>

namespace gsq::cli {

namespace {

struct TopoCliOptions {
  std::string from;
  bool json = false;
};

int run_topo(const TopoCliOptions& o) {
  if (o.from.empty())
    throw_bad_input(
        "topo: reading the live topology through NVML is not built yet; give --from FILE with the output "
        "of nvidia-smi topo -m (or nvidia-smi topo -p2p rw)");
  const auto m = topo::parse_topo_matrix(read_text_file(o.from), o.from);
  const auto findings = topo::topo_findings(m);
  if (o.json) {
    std::cout << topo::to_json(m, findings).dump(2) << '\n';
  } else {
    Table t{{""}, {}};
    for (const auto& d : m.devices) t.header.push_back(d);
    t.header.push_back("CPU affinity");
    for (const auto& r : m.devices) {
      std::vector<std::string> row{r};
      for (const auto& c : m.devices) {
        const auto it = m.link.find({r, c});
        row.push_back(it == m.link.end() ? "" : it->second);
      }
      row.push_back(m.cpu_affinity.count(r) ? m.cpu_affinity.at(r) : "");
      t.rows.push_back(std::move(row));
    }
    std::cout << "# Topology: " << o.from << "\n\n" << t.markdown();
    if (!findings.empty()) std::cout << '\n' << report::findings_table(findings).markdown();
  }
  return worst(findings) == Severity::fail ? static_cast<int>(ExitCode::findings) : 0;
}

}  // namespace

Action register_topo(CLI::App& app) {
  auto o = std::make_shared<TopoCliOptions>();
  auto* cmd = app.add_subcommand("topo", "GPU/NIC topology: read a pasted nvidia-smi topo -m and check it");
  cmd->footer(
      "Reads nvidia-smi topo -m (X, NV#, PIX, PXB, PHB, NODE, SYS/SOC; the NIC legend; tabs or spaces, colour codes)\n"
      "or topo -p2p rw (OK, CNS, GNS, TNS, NS, DR) and checks: GPU pairs across the CPU interconnect, uneven NVLink\n"
      "counts, NICs SYS from every GPU, GPUs without a NIC under their switch, peer access not supported.\n"
      "Exit codes: 0 ok, 2 no matrix in the file.\n"
      "Examples:\n"
      "  nvidia-smi topo -m > topo.txt;  gpusqueeze topo --from topo.txt\n"
      "  nvidia-smi topo -p2p rw | gpusqueeze topo --from /dev/stdin");
  cmd->add_option("--from", o->from, "A saved nvidia-smi topo -m or topo -p2p output");
  cmd->add_flag("--json", o->json, "Print gpusqueeze.topo/1 JSON");
  return [o] { return run_topo(*o); };
}

}  // namespace gsq::cli
