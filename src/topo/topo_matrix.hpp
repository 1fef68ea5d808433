// `nvidia-smi topo -m` and `topo -p2p <cap>` output as users paste it (tabs or spaces, ANSI colour, the NIC legend,
// SOC for SYS on old drivers), and the checks it allows: GPU pairs that cross the CPU interconnect, NVLink counts that
// differ, NICs far from every GPU, GPUs without a near NIC, peer access not supported.
#pragma once

#include "core/finding.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gsq::topo {

inline constexpr const char* kTopoSchema = "gpusqueeze.topo/1";

struct TopoMatrix {
  std::vector<std::string> devices;                                 // GPU0…, NIC0… in column order
  std::map<std::pair<std::string, std::string>, std::string> link;  // (row, column) → X, NV18, PIX, …, OK, GNS, …
  std::map<std::string, std::string> cpu_affinity, numa_affinity;
  std::map<std::string, std::string> nic_names;  // NIC0 → mlx5_0 (the legend)
  bool p2p_status = false;                       // a `topo -p2p` matrix (OK/CNS/GNS/…) rather than `topo -m`
  [[nodiscard]] std::vector<std::string> gpus() const;
  [[nodiscard]] std::vector<std::string> nics() const;
};

// Throws Error(bad_input) when no matrix (a header with GPU0 and rows of it) is found.
[[nodiscard]] TopoMatrix parse_topo_matrix(const std::string& text, const std::string& origin);
[[nodiscard]] std::vector<Finding> topo_findings(const TopoMatrix& m);
[[nodiscard]] nlohmann::json to_json(const TopoMatrix& m, const std::vector<Finding>& findings);

}  // namespace gsq::topo
