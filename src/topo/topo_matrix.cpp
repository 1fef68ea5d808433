// Pasted topology matrices and their checks (see topo_matrix.hpp).
#include "topo/topo_matrix.hpp"

#include "core/error.hpp"
#include "topo/log_framing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/ranges.h>

namespace gsq::topo {

namespace {

std::string strip_ansi(const std::string& s) {
  static const std::regex ansi(R"(\x1B\[[0-9;]*[A-Za-z])");
  return std::regex_replace(s, ansi, "");
}
// Cells are tab-separated in nvidia-smi's output; pasted copies may have spaces instead: then any run of spaces splits
// (the affinity columns never hold spaces themselves).
std::vector<std::string> cells_as_separated(const std::string& line) {
  std::vector<std::string> out;
  if (line.find('\t') != std::string::npos) {
    std::stringstream in(line);
    for (std::string c; std::getline(in, c, '\t');) {
      c.erase(0, c.find_first_not_of(' '));
      while (!c.empty() && c.back() == ' ') c.pop_back();
      out.push_back(c);
    }
  } else {
    std::istringstream in(line);
    for (std::string c; in >> c;) out.push_back(c);
  }
  return out;
}

// A cell that is several cells whose separating tab was lost in a copy ("NIC8NIC9" in a header, "NODEPXB" or
// "NODENODE" in a row, as in a pasted DGX matrix of vllm#13855): the cells it holds, else the cell itself.
std::vector<std::string> unglue(const std::string& c) {
  static const std::regex glued_devices(R"(((GPU|NIC)\d+){2,})");
  static const std::regex glued_links(R"(((SYS|NODE|PHB|PXB|PIX|SOC|NV\d+)){2,})");
  static const std::regex one(R"((GPU|NIC)\d+|SYS|NODE|PHB|PXB|PIX|SOC|NV\d+)");
  if (!std::regex_match(c, glued_devices) && !std::regex_match(c, glued_links)) return {c};
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(c.begin(), c.end(), one); it != std::sregex_iterator(); ++it)
    out.push_back(it->str());
  return out;
}

// A line's cells, glued ones split.
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> raw = cells_as_separated(line), out;
  for (const auto& c : raw)
    for (auto& part : unglue(c)) out.push_back(std::move(part));
  return out;
}

// GPU0…, NIC0…, and the NIC names older drivers print in their place (mlx5_0, mlx4_0).
bool is_device(const std::string& s) {
  static const std::regex dev(R"((GPU|NIC)\d+|mlx\d_\d+)");
  return std::regex_match(s, dev);
}

bool is_nic(const std::string& d) {
  return !d.starts_with("GPU");
}

Finding make(const char* id, Severity sev, std::string title, std::vector<Evidence> ev, std::string fix) {
  return make_finding(id, sev, std::move(title), std::move(ev), std::move(fix),
                      "nvidia-smi topo legend; NCCL troubleshooting (PCI ACS, GPUDirect RDMA placement)", 5,
                      "topology");
}

int nvlinks(const std::string& v) {
  return v.starts_with("NV") ? std::atoi(v.c_str() + 2) : 0;
}

// A markdown pipe table of the matrix (a docs page: "| CPU Affinity | NUMA Affinity | | GPU0 | … | mlx5\_0 |", the
// columns in any order, "\_" escaped): each row rewritten as nvidia-smi prints it — the row's device, its cells under
// the device columns in their order, then the affinities — so the reader below takes it as it takes the tool's own.
std::string unpipe(const std::string& text) {
  std::istringstream in(text);
  std::string out;
  std::vector<size_t> device_cols;  // header positions of the device columns
  std::optional<size_t> cpu_col, numa_col;
  auto split = [](std::string line) {
    for (size_t at = line.find("\\_"); at != std::string::npos; at = line.find("\\_", at)) line.erase(at, 1);
    std::vector<std::string> c;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, '|');) {
      cell.erase(0, cell.find_first_not_of(" \t"));
      while (!cell.empty() && (cell.back() == ' ' || cell.back() == '\t')) cell.pop_back();
      c.push_back(cell);
    }
    if (!c.empty() && c.front().empty()) c.erase(c.begin());  // the row's opening pipe
    return c;
  };
  for (std::string line; std::getline(in, line);) {
    const size_t lead = line.find_first_not_of(" \t");
    if (lead == std::string::npos || line[lead] != '|') {
      out += line + '\n';
      continue;
    }
    const auto c = split(line);
    if (std::all_of(c.begin(), c.end(),
                    [](const std::string& x) { return x.find_first_not_of("-: ") == std::string::npos; }))
      continue;  // the rule under the header
    if (device_cols.empty()) {
      for (size_t i = 0; i < c.size(); ++i) {
        if (is_device(c[i])) device_cols.push_back(i);
        if (c[i].starts_with("CPU Affinity")) cpu_col = i;
        if (c[i].starts_with("NUMA Affinity")) numa_col = i;
      }
      if (device_cols.empty() || c[device_cols.front()] != "GPU0") {
        device_cols.clear();
        out += line + '\n';
        continue;
      }
      std::string h;
      for (size_t i : device_cols) h += c[i] + '\t';
      out += h + "CPU Affinity\tNUMA Affinity\n";
      continue;
    }
    // The row's device: the first device name outside the device columns.
    std::string row;
    for (size_t i = 0; i < c.size() && row.empty(); ++i)
      if (is_device(c[i]) && std::find(device_cols.begin(), device_cols.end(), i) == device_cols.end()) row = c[i];
    if (row.empty() || c.size() <= device_cols.back()) continue;
    for (size_t i : device_cols) row += '\t' + (c[i].empty() ? std::string("-") : c[i]);
    const auto cell = [&](const std::optional<size_t>& i) {
      return i && *i < c.size() && !c[*i].empty() ? c[*i] : std::string("N/A");
    };
    out += row + '\t' + cell(cpu_col) + '\t' + cell(numa_col) + '\n';
  }
  return out;
}

}  // namespace

std::vector<std::string> TopoMatrix::gpus() const {
  std::vector<std::string> g;
  for (const auto& d : devices)
    if (d.starts_with("GPU")) g.push_back(d);
  return g;
}

std::vector<std::string> TopoMatrix::nics() const {
  std::vector<std::string> n;
  for (const auto& d : devices)
    if (is_nic(d)) n.push_back(d);
  return n;
}

TopoMatrix parse_topo_matrix(const std::string& text, const std::string& origin) {
  TopoMatrix m;
  std::istringstream in(text.find('|') == std::string::npos ? text : unpipe(text));
  std::vector<std::string> header;  // every header cell, devices first
  for (std::string raw; std::getline(in, raw);) {
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    int rank = -1;  // launcher and logger prefixes (Slurm --label, timestamps, kubectl) off, as for NCCL logs
    const std::string line = strip_prefixes(strip_ansi(raw), rank);
    if (line.starts_with("#")) continue;
    auto c = cells(line);
    c.erase(std::remove(c.begin(), c.end(), std::string()), c.end());
    if (c.empty()) continue;
    if (header.empty()) {
      if (!c.empty() && c.front() == "GPU0" && (c.size() == 1 || is_device(c[1]) || c[1].starts_with("CPU"))) {
        header = c;
        for (const auto& h : header)
          if (is_device(h)) m.devices.push_back(h);
      }
      continue;
    }
    // NIC legend: "  NIC0: mlx5_0".
    static const std::regex legend(R"(^\s*(NIC\d+):\s*(\S+))");
    std::smatch lm;
    if (std::regex_search(line, lm, legend)) {
      m.nic_names[lm[1]] = lm[2];
      continue;
    }
    if (!is_device(c.front()) || c.size() < m.devices.size() + 1) continue;
    const std::string row = c.front();
    for (size_t k = 0; k < m.devices.size(); ++k) {
      std::string v = c[k + 1];
      if (v == "SOC") v = "SYS";  // older drivers' name for the same path
      if (v == "OK" || v == "CNS" || v == "GNS" || v == "TNS" || v == "NS" || v == "DR") m.p2p_status = true;
      m.link[{row, m.devices[k]}] = v;
    }
    if (c.size() > m.devices.size() + 1) m.cpu_affinity[row] = c[m.devices.size() + 1];
    if (c.size() > m.devices.size() + 2) m.numa_affinity[row] = c[m.devices.size() + 2];
  }
  if (m.devices.empty() || m.link.empty())
    throw_bad_input(origin +
                    ": no topology matrix found (paste the output of nvidia-smi topo -m or topo -p2p rw: a "
                    "header row naming GPU0… and one row per device)");
  return m;
}

std::vector<Finding> topo_findings(const TopoMatrix& m) {
  std::vector<Finding> out;
  // A pasted matrix may be cut short: a GPU is judged when its row is there; a NIC through the GPU rows' columns.
  std::set<std::string> rows;
  for (const auto& [k, v] : m.link) rows.insert(k.first);
  std::vector<std::string> gpus, missing;
  for (const auto& g : m.gpus()) (rows.contains(g) ? gpus : missing).push_back(g);
  const auto nics = m.nics();
  if (!missing.empty())
    out.push_back(make(
        "topo-truncated", Severity::info,
        fmt::format("The matrix has no row for {}: only the GPU rows present are judged", fmt::join(missing, ", ")),
        {{"missing", fmt::format("{}", fmt::join(missing, ", "))}}, "Paste the whole output of nvidia-smi topo -m"));
  auto at = [&](const std::string& a, const std::string& b) {
    const auto it = m.link.find({a, b});
    return it == m.link.end() ? std::string() : it->second;
  };
  if (m.p2p_status) {
    std::vector<std::string> bad;
    for (size_t i = 0; i < gpus.size(); ++i)
      for (size_t j = i + 1; j < gpus.size(); ++j)
        if (const auto v = at(gpus[i], gpus[j]); !v.empty() && v != "OK" && v != "X")
          bad.push_back(fmt::format("{}–{} {}", gpus[i], gpus[j], v));
    if (!bad.empty())
      out.push_back(make("topo-p2p-unsupported", Severity::warn,
                         fmt::format("Peer access is not available between {} GPU pair(s)", bad.size()),
                         {{"pairs", fmt::format("{}", fmt::join(bad, "; "))}},
                         "NCCL and CUDA copies then go through host memory. GNS: the GPU does not allow it (many "
                         "consumer boards); CNS: the chipset; on servers check ACS (SrcValid+ on the bridges) and "
                         "IOMMU, and test with NCCL_P2P_DISABLE=1 whether P2P is what hangs"));
    return out;
  }
  std::vector<std::string> cross;
  std::set<int> nv_counts;
  bool all_nv = gpus.size() > 1;
  for (size_t i = 0; i < gpus.size(); ++i)
    for (size_t j = i + 1; j < gpus.size(); ++j) {
      const auto v = at(gpus[i], gpus[j]);
      if (v.empty()) continue;  // a cell cut off
      if (v == "SYS") cross.push_back(gpus[i] + "–" + gpus[j]);
      if (nvlinks(v) > 0)
        nv_counts.insert(nvlinks(v));
      else
        all_nv = false;
    }
  if (!cross.empty())
    out.push_back(make("topo-cross-socket", Severity::info,
                       fmt::format("{} GPU pair(s) talk across the CPU interconnect (SYS)", cross.size()),
                       {{"pairs", fmt::format("{}", fmt::join(cross, ", "))}},
                       "Keep tensor-parallel groups and the busiest pairs within a socket (PIX/PXB/NODE or NVLink); "
                       "P2P across sockets is often unsupported or slow, so NCCL stages through host memory"));
  // NVLinks per GPU: NV# is the number of links between the pair (through NVSwitch: every link of the GPU).
  if (!nv_counts.empty()) {
    std::vector<std::string> per_gpu;
    for (const auto& g : gpus) {
      int peers = 0, links = 0;
      for (const auto& h : gpus)
        if (h != g && nvlinks(at(g, h)) > 0) ++peers, links = std::max(links, nvlinks(at(g, h)));
      per_gpu.push_back(fmt::format("{} NV{} to {} of {} GPUs", g, links, peers, gpus.size() - 1));
    }
    out.push_back(
        make("topo-nvlink", Severity::info,
             fmt::format("NVLink between {} GPU pairs{}", gpus.size() * (gpus.size() - 1) / 2 - (all_nv ? 0 : 1) * 0,
                         all_nv ? " (every pair)" : " (not every pair: the others go over PCIe)"),
             {{"per_gpu", fmt::format("{}", fmt::join(per_gpu, "; "))}}, ""));
  }
  if (all_nv && nv_counts.size() > 1)
    out.push_back(make("topo-nvlink-uneven", Severity::warn, "GPU pairs have different NVLink counts",
                       {{"counts", fmt::format("{}", fmt::join(nv_counts, ", "))}},
                       "On an NVSwitch system every pair shows the same NV#: fewer links on some pairs means links "
                       "down — nvidia-smi nvlink -s and the NVLink error counters (gpusqueeze exporter) say which"));
  // NICs: one SYS from every GPU is a storage/management NIC or misplaced; GPUs without a NIC under their switch
  // while other GPUs have one cross the host bridge for every inter-node byte.
  auto near_nic = [&](const std::string& g) {
    return std::any_of(nics.begin(), nics.end(), [&](const std::string& n) {
      const auto v = at(g, n);
      return v == "PIX" || v == "PXB";
    });
  };
  const bool any_gpu_near = std::any_of(gpus.begin(), gpus.end(), near_nic);
  for (const auto& n : nics) {
    bool near = false, seen = false;
    for (const auto& g : gpus) {
      const auto v = at(g, n);
      seen = seen || !v.empty();
      near = near || (v != "SYS" && !v.empty());
    }
    if (!near && seen)
      out.push_back(make(
          "topo-nic-far", any_gpu_near ? Severity::info : Severity::warn,
          fmt::format("{}{} is SYS from every GPU{}", n, m.nic_names.count(n) ? " (" + m.nic_names.at(n) + ")" : "",
                      any_gpu_near ? " (other NICs sit near the GPUs: a storage or management NIC?)" : ""),
          {{"nic", n}},
          "GPUDirect RDMA through it crosses the CPU interconnect: if it carries NCCL traffic, move it "
          "under a GPU's PCIe switch, or keep it out of NCCL_IB_HCA"));
  }
  if (!nics.empty())
    for (const auto& g : gpus)
      if (!near_nic(g))
        out.push_back(
            make("topo-gpu-without-near-nic", any_gpu_near ? Severity::warn : Severity::info,
                 fmt::format("{} has no NIC under its PCIe switch (PIX/PXB){}", g,
                             any_gpu_near ? " while other GPUs do: its inter-node traffic is the slow path" : ""),
                 {{"gpu", g}},
                 "Its inter-node traffic crosses the host bridge or the CPU interconnect; on GPUDirect RDMA "
                 "systems a NIC per GPU (or per GPU pair) under the same switch is the usual layout"));
  return out;
}

nlohmann::json to_json(const TopoMatrix& m, const std::vector<Finding>& findings) {
  nlohmann::json links = nlohmann::json::object();
  for (const auto& [k, v] : m.link) links[k.first][k.second] = v;
  return {{"schema", kTopoSchema},
          {"devices", m.devices},
          {"links", links},
          {"cpu_affinity", m.cpu_affinity},
          {"numa_affinity", m.numa_affinity},
          {"nic_names", m.nic_names},
          {"p2p_status", m.p2p_status},
          {"findings", findings}};
}

}  // namespace gsq::topo
