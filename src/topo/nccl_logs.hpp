// What NCCL and its users already print, read on any machine: nccl-tests result tables (old and 2.20 headers), NCCL's
// INFO/WARN lines (version, transports, channels, network plugin, IB completion errors, environment it saw) and
// PyTorch's ProcessGroupNCCL watchdog messages. Findings say what the lines show and what to do.
#pragma once

#include "core/finding.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gsq::topo {

inline constexpr const char* kNcclLogSchema = "gpusqueeze.nccl-log/1";

struct NcclTestRow {
  uint64_t bytes = 0, count = 0;
  std::string type, redop;
  double time_us[2] = {0, 0}, algbw[2] = {0, 0}, busbw[2] = {0, 0};  // out-of-place, in-place (GB/s)
  int64_t wrong[2] = {0, 0};                                         // -1: not checked (N/A)
};

struct NcclLog {
  std::string origin;
  // nccl-tests
  std::string test, tests_version;
  std::vector<std::string> devices;  // "Rank 0 … NVIDIA H100 PCIe" lines
  std::vector<NcclTestRow> rows;
  std::optional<double> avg_busbw;
  // NCCL INFO/WARN
  std::string nccl_version;
  std::map<std::string, uint64_t> transports;  // "P2P/IPC", "NET/IB/GDRDMA", "SHM", "NET/Socket", ... → channel lines
  std::map<std::string, std::string> env;      // NCCL_* "set by environment to" and mpirun -x settings
  bool socket_fallback = false, ibverbs_missing = false, nvls = false;
  std::vector<int> ib_completion_status;  // status= of "Got completion from peer … with status=N"
  std::vector<std::string> warnings;      // NCCL WARN lines, first few
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
  // PyTorch watchdog
  struct Timeout {
    std::string op;
    int64_t seq = -1, timeout_ms = 0, ran_ms = 0, numel = 0, last_enqueued = -1, last_completed = -1;
  };
  std::vector<Timeout> timeouts;
  size_t lines = 0, recognized = 0;
};

// Throws Error(bad_input) when nothing in the text is NCCL's, nccl-tests' or the watchdog's.
[[nodiscard]] NcclLog parse_nccl_log(const std::string& text, const std::string& origin);
[[nodiscard]] std::vector<Finding> nccl_findings(const NcclLog& log);
[[nodiscard]] nlohmann::json to_json(const NcclLog& log, const std::vector<Finding>& findings);

}  // namespace gsq::topo
