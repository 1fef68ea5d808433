// `probe nccl --sweep-env`: the same collective in fresh processes under a few NCCL settings, and which of them helps
// on this machine. The settings, their parsing and the judgement live here (no GPU); the CLI runs the processes.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace gsq::topo {

struct SweepSetting {
  std::string name;                                      // "NCCL_ALGO=Ring" ("as is" for the baseline)
  std::vector<std::pair<std::string, std::string>> env;  // what the child process gets on top of this environment
};
// The baseline, then NCCL_ALGO Ring/Tree, NCCL_PROTO Simple/LL128, NCCL_MIN_CTAS=32, NCCL_P2P_LEVEL=SYS (no P2P
// between GPUs) and NCCL_NVLS_ENABLE=0: the knobs the method's article names, with their real spellings.
[[nodiscard]] std::vector<SweepSetting> default_sweep();
// "NAME=VALUE[,NAME=VALUE]" per setting, after the baseline. Throws Error(bad_input) for a malformed one or a name
// that is not NCCL_* (or names NCCL does not know: the same table as `doctor`'s nccl-env check).
[[nodiscard]] std::vector<SweepSetting> parse_sweep(const std::vector<std::string>& specs);

// The figure a run is judged by: the mean busbw over the sweep's sizes of at least a quarter of its largest (where
// link bandwidth, not latency, decides), of one collective, from `probe nccl --json`. Throws Error(bad_input) when the
// JSON has no such rows.
[[nodiscard]] double large_size_busbw(const nlohmann::json& probe_json, const std::string& collective);

struct SweepRow {
  std::string setting;
  std::vector<double> busbw;  // one per trial that ran
  std::string error;          // why it did not run ("" when it did)
  double median = 0, ratio = 0;
  std::string verdict;  // baseline, helps, hurts, no clear difference, did not run
};
// A setting helps when its every trial beats the baseline's every trial (the ranges do not overlap), hurts when the
// reverse holds; with one trial each there is no spread to judge by and the verdict says so.
[[nodiscard]] std::vector<SweepRow> judge_sweep(std::vector<SweepRow> rows);
[[nodiscard]] nlohmann::json to_json(const std::vector<SweepRow>& rows);

}  // namespace gsq::topo
