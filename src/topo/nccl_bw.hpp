// nccl-tests' bandwidth arithmetic (its src/<collective>.cu GetBw and doc/PERFORMANCE.md): algbw = S / t with S the
// bytes each collective's "size" column counts, busbw = algbw × a factor that turns it into the per-link rate a flat
// point-to-point algorithm would need. With NVLS, Tree or CollNet busbw no longer describes the wire: a flat-algorithm
// equivalent, labelled so.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gsq::topo {

// "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv" (or nccl-tests'
// binary names, "all_reduce_perf"). nullopt for a collective it does not know.
[[nodiscard]] std::optional<double> bus_factor(std::string_view collective, int nranks);
[[nodiscard]] std::string collective_of(std::string_view test_or_name);  // "all_reduce_perf" → "all_reduce"

struct Bandwidth {
  double algbw_gbs = 0, busbw_gbs = 0;
};
// `bytes` is nccl-tests' size column (the whole buffer), `seconds` the time per operation.
[[nodiscard]] Bandwidth bandwidth(std::string_view collective, double bytes, double seconds, int nranks);

}  // namespace gsq::topo
