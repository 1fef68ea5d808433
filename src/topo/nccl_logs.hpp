// What NCCL and its users print, read on any machine as users paste it (launcher prefixes, wrapped lines, every
// nccl-tests layout): nccl-tests result tables judged against the link the hardware has; NCCL's INFO lines (version,
// ranks and nodes, transports, rings/trees, channels, NVLS, the environment it saw); NCCL WARN lines and error chains
// through the error catalogue (nccl_errors.hpp); PyTorch's ProcessGroupNCCL watchdog, desync report, progress and
// collective-mismatch messages, compared rank by rank. Findings say what the lines show and what to do; a log that
// records a fatal failure always has a fail-level finding.
#pragma once

#include "core/finding.hpp"
#include "topo/nccl_errors.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gsq::topo {

inline constexpr const char* kNcclLogSchema = "gpusqueeze.nccl-log/2";

struct NcclTestRow {
  uint64_t bytes = 0, count = 0;
  std::string type, redop;
  double time_us[2] = {0, 0}, algbw[2] = {0, 0}, busbw[2] = {0, 0};  // out-of-place, in-place (GB/s)
  int64_t wrong[2] = {0, 0};  // -1: not checked (N/A) or an older layout's float error column (see max_error)
  double max_error = 0;       // older nccl-tests print the largest error as a float instead of a count
  [[nodiscard]] double best_busbw() const { return busbw[0] > busbw[1] ? busbw[0] : busbw[1]; }
};

struct NcclLog {
  std::string origin;
  // nccl-tests
  std::string test, tests_version;
  std::vector<std::string> devices;  // "Rank 0 Group 0 Pid 1 on host device 0 [0x18] NVIDIA H100 PCIe" lines
  std::set<std::string> test_hosts;  // the hosts of those lines
  std::vector<NcclTestRow> rows;
  bool table_header = false;  // a result table's header ("size count type redop … algbw busbw"), rows or not
  // torchelastic (torchrun, NeMo's ft_launcher) restarting a failed worker group ("Worker group FAILED. 3/3 attempts
  // left; will restart worker group"), and the line where a worker group then finished ("WorkerState.SUCCEEDED"): 0
  // when none. Failures before such a success were recovered from.
  size_t restart_line = 0, succeeded_line = 0;
  std::optional<double> avg_busbw;
  // A bus bandwidth a benchmark of the user's own printed outside any nccl-tests table ("busbw: 18.973 GBps (151.8
  // Gbps)"), in GB/s, and the ranks its lines name ("(5 trials, 16 ranks)"; 0 when none)
  std::vector<double> reported_busbw;
  int reported_ranks = 0;
  uint64_t min_bytes = 0, max_bytes = 0;  // the sweep asked for ("minBytes 8 maxBytes 8589934592")
  int64_t out_of_bounds = -1;             // "Out of bounds values : N OK|FAILED"
  bool tests_failed = false;              // a FAILED verdict printed by nccl-tests
  uint64_t failed_at_bytes = 0;  // a row that ends in "Test CUDA failure" / "Test NCCL failure": the size it died at
  bool validation_off = false;   // nccl-tests ran with -c 0 ("validation: 0"): #wrong is N/A, nothing was checked
  // NCCL INFO
  std::string nccl_version;
  std::map<std::string, uint64_t> transports;  // "P2P/IPC", "NET/IB/GDRDMA", "SHM", "NET/Socket", ... → channel lines
  std::map<std::string, std::string> env;      // NCCL_* "set by environment to" and mpirun -x settings
  std::string network;                         // "Using network IB|Socket|…"
  bool socket_fallback = false, ibverbs_missing = false, nvls = false;
  bool ib_device_failed = false;  // an RDMA device is there (it failed to open; IPoIB interfaces) and is unused
  int nranks = 0, nnodes = 0;
  std::set<std::string> hosts;  // from NCCL's "host:pid:tid [dev]" line prefixes
  size_t init_complete = 0;     // "Init COMPLETE" lines
  size_t destroy_complete = 0;  // "Destroy COMPLETE" lines: a communicator torn down by ncclCommDestroy (a run's end)
  struct Graph {
    int pattern = -1, crossnic = -1, channels = 0;
    double bw_intra = 0, bw_inter = 0;
    std::string type;
  };
  std::vector<Graph> graphs;  // "Pattern 4, crossNic 0, nChannels 16, bw 40.0/40.0, type NVL/PIX, sameChannels 1"
  int coll_channels = 0, nvls_channels = 0;
  std::vector<int> ib_completion_status;  // status= of "Got completion from peer … with status=N" (or "with error N")
  std::vector<std::string> warnings;      // NCCL WARN lines, the first few
  size_t warn_lines = 0, unknown_warn_lines = 0;  // all WARN lines; those the catalogue does not know
  // Lines where the program reports a failure in capitals ("FAILED", "FAILURE: some tests failed on rank 1"), the
  // catalogue knowing none of them: the first two.
  std::vector<std::string> failure_reports;
  std::map<std::string, std::string> store_bind;  // the c10d store's bind warnings: port, bind_error
  bool net_plugin_init_failed = false;            // the external network plugin (aws-ofi-nccl) failed to initialise
  // NCCL going on without a feature ("Cannot initialize CollNet, using point-to-point network instead"): the first few
  // such lines, and the line number of the last.
  std::vector<std::string> fallbacks;
  size_t last_fallback_line = 0;
  std::map<std::string, std::string> network_by_host;  // "Using network …" per host
  std::vector<ErrorSeen> errors;                       // catalogue families, in order of first appearance
  // NCCL_DEBUG_SUBSYS=TUNING: rank 0's choice per collective call, "AllReduce: 1048576 Bytes -> Algo RING proto
  // SIMPLE channel{Lo..Hi}={0..31}" (src/enqueue.cc), by NCCL's collective name and the bytes it prints (count ×
  // type size: per rank for AllGather and ReduceScatter). The first choice seen; `varied` when later calls differed.
  struct Tuning {
    std::string algo, proto;
    int channels = 0;
    uint64_t calls = 0;
    bool varied = false;
  };
  std::map<std::pair<std::string, uint64_t>, Tuning> tuning;
  // PyTorch ProcessGroupNCCL
  struct Timeout {
    std::string op;
    int64_t seq = -1, timeout_ms = 0, ran_ms = 0, numel = -1, numel_out = -1, last_enqueued = -1, last_completed = -1;
    int rank = -1;
  };
  std::vector<Timeout> timeouts;  // one per rank and collective
  struct Progress {
    int64_t last_enqueued = -1, last_completed = -1;
    // The process group the line names ("ID 11 PG GUID 119"), "" when none: counts compare within one group.
    std::string group;
  };
  std::map<int, Progress> progress;  // by rank (-1: a rank the log does not name)
  // NCCL RAS (`ncclras`): a communicator's ranks grouped by how far they launched ("30 ranks have launched up to
  // operation 640"), the ranks it lists (the smaller group's, under the last such line), and the ranks it has no
  // data from ("Missing communicator data from 1 rank", then "Rank R -- GPU …").
  struct Ras {
    std::string op;                                     // "AllGather" of "different AllGather operation counts"
    std::vector<std::pair<int64_t, int64_t>> launched;  // (ranks, up to operation)
    std::map<int, int64_t> listed;                      // rank → the operation its group launched up to
    std::set<int> no_data;                              // ranks RAS has no communicator data from
    std::vector<std::string> lines;                     // the listed ranks' lines (first few)
  };
  Ras ras;
  // gdb interrupted the program (SIGINT) while a frame of its backtrace waited for the GPU ("testStreamSynchronize"):
  // that frame, "" when none. A run someone had to interrupt there had hung.
  std::string interrupted_in;
  std::map<int, int> ddp_rank_lines;    // PyTorch Lightning's "initializing ddp: GLOBAL_RANK: r" lines, by rank
  int ddp_world = 0;                    // their "MEMBER: i/N"
  std::set<int> lagging_ranks;          // named by a desync report
  std::vector<std::string> desync;      // the report's lines on ranks (first few)
  std::vector<std::string> mismatches;  // "Detected mismatch between collectives…" (first few)
  std::set<int> ranks_seen;             // ranks named by prefixes or messages
  size_t tagged_lines = 0;              // lines opened by a launcher's rank tag (a distributed job's own output)
  // The node's own tools beside a job: DCGM's NVLink states per GPU (`dcgmi nvlink --link-status`: U up, D down, X
  // disabled, _ not supported), its diagnostic's failed checks (`dcgmi diag`), and `nvidia-smi -q`'s row remapping.
  std::map<int, std::string> nvlink_states;   // gpuId → one letter a link
  std::vector<std::string> dcgm_failed;       // "| <test> | Fail …" rows (first few)
  bool dcgm_diag = false;                     // a `dcgmi diag` run is in the log
  int remap_pending = -1, remap_failed = -1;  // "Pending : Yes/No", "Remapping Failure Occurred : Yes/No" (-1: absent)
  int remap_uncorrectable = -1;               // "Uncorrectable Error : N" under Remapped Rows
  // PyTorch's C++ warnings from its distributed sources ("[W reducer.cpp:1300] Warning: …", "[W1206 10:00:00.1 …
  // ProcessGroupNCCL.cpp:4561] …"): how many, and whether DDP's "find_unused_parameters=True … but did not find any
  // unused parameters" is among them (harmless, and a cost every step).
  size_t torch_warnings = 0;
  bool ddp_unused_flag = false;
  size_t lines = 0, recognized = 0;
};

// Throws Error(bad_input) when nothing in the text is NCCL's, nccl-tests', PyTorch distributed's or a known error.
[[nodiscard]] NcclLog parse_nccl_log(const std::string& text, const std::string& origin);
[[nodiscard]] std::vector<Finding> nccl_findings(const NcclLog& log);
[[nodiscard]] nlohmann::json to_json(const NcclLog& log, const std::vector<Finding>& findings);

// The bus bandwidth nccl-tests should reach on large messages for the hardware its device lines name (GB/s), with
// where that figure comes from; nullopt when the hardware is not in the table (shared/research/multigpu.md §9).
struct BusbwExpectation {
  double typical = 0, low = 0;  // what a healthy system gives; below `low` is a finding
  bool known = false;           // the hardware is in the table (else `low` is only a floor for any GPU path)
  // The largest size of the sweep must reach this for its bandwidth to be judged: PCIe saturates by 2-8 MB, NVSwitch
  // and multi-node fabrics need hundreds of MB.
  uint64_t judge_from_bytes = 256ULL << 20;
  std::string hardware, source;
};
[[nodiscard]] std::optional<BusbwExpectation> expected_busbw(const NcclLog& log);

}  // namespace gsq::topo
