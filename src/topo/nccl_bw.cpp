// Bus-bandwidth factors per collective (nccl-tests, doc/PERFORMANCE.md).
#include "topo/nccl_bw.hpp"

namespace gsq::topo {

std::string collective_of(std::string_view s) {
  if (s.ends_with("_perf")) s.remove_suffix(5);
  return std::string(s);
}

std::optional<double> bus_factor(std::string_view collective, int n) {
  const auto c = collective_of(collective);
  if (n < 1) return std::nullopt;
  const double nd = n;
  if (c == "all_reduce") return 2.0 * (nd - 1) / nd;
  if (c == "all_gather" || c == "reduce_scatter" || c == "alltoall" || c == "gather" || c == "scatter")
    return (nd - 1) / nd;
  if (c == "broadcast" || c == "reduce" || c == "sendrecv" || c == "hypercube") return 1.0;
  return std::nullopt;
}

Bandwidth bandwidth(std::string_view collective, double bytes, double seconds, int nranks) {
  Bandwidth b;
  if (seconds <= 0) return b;
  b.algbw_gbs = bytes / seconds / 1e9;
  b.busbw_gbs = b.algbw_gbs * bus_factor(collective, nranks).value_or(0.0);
  return b;
}

}  // namespace gsq::topo
