// PyTorch's NCCL Flight Recorder dumps, read on any machine: one file per rank, written by ProcessGroupNCCL when its
// watchdog times out (TORCH_NCCL_TRACE_BUFFER_SIZE > 0; TORCH_NCCL_DEBUG_INFO_TEMP_FILE / TORCH_FR_DUMP_TEMP_FILE + the
// global rank), a pickle of plain values (read by core/pickle.hpp, nothing executed), or the JSON form
// `_dump_nccl_trace_json` gives. Formats "1.x" to "2.10" (torch 2.3 to 2.15) and the bare entry list of torch 2.2.
//
// The ranks compared, per process group (its name and members from pg_config): the collectives each rank issued
// (collective_seq_id of its non-p2p entries), those still in flight (state other than completed), and at each
// sequence number issued by several ranks whether they issued the same collective. A rank that issued fewer
// collectives of a group than the others never joined the next one: the others wait in it (a hang's usual cause, the
// one fr_trace reports as "Not all ranks joining collective"). This needs no alignment of record ids across ranks
// (fr_trace's, which drops every entry of most ranks of an only-active dump). Where every member issued a collective
// and it never completed, the hang is inside the collective (network, a GPU fault), not a missing rank.
#pragma once

#include "core/finding.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gsq::topo {

inline constexpr const char* kFlightRecorderSchema = "gpusqueeze.flight-recorder/1";

struct FrEntry {
  std::string group;  // process group name (pg_config's key, process_group[0]): the same group on every member
  std::string desc;   // "default_pg", "EXPERT_MODEL_PARALLEL_GROUP", …
  std::string op;     // profiling_name: "nccl:all_reduce", "nccl:send 0->3"
  std::string state;  // scheduled, started, completed
  std::string input_sizes, input_dtypes, output_sizes;  // as Python prints them: "[[4096, 5120]]", "['BFloat16']"
  int64_t seq = -1, p2p_seq = -1, record_id = -1, timeout_ms = 0, created_ns = 0;
  bool p2p = false;
  [[nodiscard]] bool completed() const { return state == "completed"; }
  // Recorded as scheduled or started and not completed (formats without a state say nothing of it).
  [[nodiscard]] bool in_flight() const { return !completed() && !state.empty(); }
};

struct FrDump {
  std::string origin, version, comm_lib_version;
  int rank = -1;  // from the file name's last number (nothing inside the dump records it)
  struct Group {
    std::string desc;
    std::vector<int> ranks;  // global ranks
  };
  std::map<std::string, Group> groups;  // pg_config, by group name
  std::vector<FrEntry> entries;
  [[nodiscard]] size_t in_flight() const {
    return static_cast<size_t>(
        std::count_if(entries.begin(), entries.end(), [](const FrEntry& e) { return e.in_flight(); }));
  }
};

// The last run of digits in a file's name ("nccl_trace_rank_12" → "12", "_dump_3" → "3"); empty when none. Callers
// bound its length: a rank, or a number to sort files by.
[[nodiscard]] std::string_view last_number_in_name(std::string_view file_name);

// Whether the bytes are a Flight Recorder dump: a pickle (protocol 2+), or JSON with its top-level keys.
[[nodiscard]] bool looks_like_flight_recorder(std::string_view bytes);
// Throws Error(bad_input) naming `origin`: not a pickle or JSON of the dump's shape, a refused pickle opcode, a
// truncated file.
[[nodiscard]] FrDump parse_flight_recorder(std::string_view bytes, const std::string& origin);

// One dump: what was in flight when it was written. Several: the ranks compared group by group (see above).
[[nodiscard]] std::vector<Finding> flight_recorder_findings(const std::vector<FrDump>& dumps);
[[nodiscard]] nlohmann::json to_json(const FrDump& dump, const std::vector<Finding>& findings);

}  // namespace gsq::topo
