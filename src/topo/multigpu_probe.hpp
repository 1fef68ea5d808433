// Step 5's measurements: `probe p2p` (copy-engine bandwidth between every pair of GPUs, one way and both ways, peer
// access on or staged through the host, and a small-copy latency) and `probe nccl` (the collectives over a size sweep
// in one process driving every GPU, like nccl-tests -g N, with nccl-tests' algbw/busbw). NCCL is opened at run time:
// libnccl.so.2 from $GSQ_NCCL_LIBRARY, the loader's path, the CUDA toolkit, or PyPI's nvidia-nccl-cu13 in the active
// virtualenv; the message says which and its version.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gsq::topo {

struct NcclLibrary {
  std::string path, origin;  // where it was found, and how ("GSQ_NCCL_LIBRARY", "loader path", "CUDA toolkit", "PyPI")
  int version = 0;           // ncclGetVersion: 22703 = 2.27.3
  [[nodiscard]] std::string version_text() const;
  std::shared_ptr<void> handle;  // the dlopen handle; never closed (NCCL's own threads outlive any use)
};
// Throws Error(no_gpu) naming every place looked in when NCCL cannot be loaded or lacks a symbol.
[[nodiscard]] NcclLibrary open_nccl();
// The places open_nccl looks in, in order (for messages and tests).
[[nodiscard]] std::vector<std::string> nccl_candidates();

struct P2pOptions {
  uint64_t bytes = 256ull << 20;
  int reps = 8, trials = 5;
  int pingpong_rounds = 2000;  // round trips per latency trial
};
struct P2pResult {
  int gpus = 0;
  std::vector<std::string> names;
  std::vector<std::vector<int>> peer_access;         // cudaDeviceCanAccessPeer
  std::vector<std::vector<double>> uni_gbs, bi_gbs;  // row = source, column = destination; diagonal: on-device copy
  std::vector<std::vector<double>> latency_us;       // a 4-byte copy, copy engine
  std::vector<std::vector<double>> sm_uni_gbs;       // a copy kernel on the source storing into the destination
  std::vector<std::vector<double>> sm_latency_us;    // one way: half an SM ping-pong round trip over peer memory;
                                                     // diagonal: two SMs of one GPU through its L2
  std::vector<std::string> notes;
};
// Needs a GPU; with one, measures the on-device copy and says what needs more.
[[nodiscard]] P2pResult probe_p2p(const P2pOptions& o);
[[nodiscard]] nlohmann::json to_json(const P2pResult& r);

struct NcclOptions {
  uint64_t min_bytes = 8, max_bytes = 1ull << 30;
  int warmup = 5, iters = 20;
  std::vector<std::string> collectives{"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                       "reduce",     "alltoall",   "sendrecv"};
};
struct NcclRow {
  std::string collective;
  uint64_t bytes = 0;  // nccl-tests' size column
  double time_us = 0, algbw_gbs = 0, busbw_gbs = 0;
  int64_t wrong = 0;        // bytes that differ from the expected result in the checked slices
  std::string algo, proto;  // NCCL's choice for this size (its TUNING lines; empty when not captured)
  int channels = 0;
};
struct NcclRun {
  std::string library, version;
  int ranks = 0;
  std::vector<NcclRow> rows;
  std::vector<std::string> notes;
};
// One rank of a job of several processes (one per GPU, on one node or many), the way nccl-tests runs under mpirun:
// every rank passes the same unique id (ncclGetUniqueId on rank 0, handed over by the launcher) to ncclCommInitRank.
struct NcclRank {
  int rank = 0, nranks = 1, device = 0;
  std::string unique_id;  // hex of the 128-byte ncclUniqueId
};
// A new unique id, as hex (NCCL's bootstrap: it needs the library and a network interface, not a GPU).
[[nodiscard]] std::string nccl_unique_id(const NcclLibrary& lib);
// Without `rank`: one process driving every GPU of this machine (ncclCommInitAll). With it: this process is that rank
// on its device; the rows are its own timings (rank 0's are the job's figures, as in nccl-tests).
[[nodiscard]] NcclRun probe_nccl(const NcclLibrary& lib, const NcclOptions& o,
                                 const std::optional<NcclRank>& rank = {});
[[nodiscard]] nlohmann::json to_json(const NcclRun& r);
// The run back from to_json's document (a child process's output); throws nlohmann::json::exception on a wrong one.
[[nodiscard]] NcclRun nccl_run_from_json(const nlohmann::json& j);
// A saved `probe p2p --json` document (`report --p2p`): throws Error(bad_input) naming `origin` and what is wrong
// (another schema, a matrix that is not gpus × gpus numbers). Documents from before the SM fields read with those
// matrices empty.
[[nodiscard]] P2pResult p2p_from_json(const nlohmann::json& j, const std::string& origin);

}  // namespace gsq::topo
