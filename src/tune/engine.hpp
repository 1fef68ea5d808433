// `tune`'s verbs: capture the machine into a profile, verify a profile, plan and apply it (saving every previous value
// first, in a journal that survives a crash between two writes), and roll back what was applied. Rollback is explicit,
// never on exit.
#pragma once

#include "tune/machine.hpp"
#include "tune/profile.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gsq::tune {

enum class Status { passed, failed, skipped, pending };
[[nodiscard]] const char* status_name(Status s);

struct Check {
  std::string id;
  Status status = Status::skipped;
  std::string actual, expected;
  std::string detail;  // why skipped, what pending waits for, the evidence of a clock lock
};

// How many checks ended in each status.
struct CheckCounts {
  int passed = 0, failed = 0, skipped = 0, pending = 0;
};
[[nodiscard]] CheckCounts count_checks(const std::vector<Check>& checks);

// Every setting of the profile on this machine, one Check each; `unsupported` ids of a capture are skipped with their
// reason. Module options configured but not loaded are pending; knobs missing here are skipped, never failed.
[[nodiscard]] std::vector<Check> verify(const Profile& p, const Machine& m);

// The machine's current values (what capture reads and cannot read).
[[nodiscard]] Profile capture(const Machine& m);

struct Step {
  std::string id, from, to;
  enum class Action { change, unchanged, skip, in_process } action = Action::change;
  std::string note;
};
// What apply would do. Throws Error(bad_input) listing every value this machine refuses (clocks not supported, power
// outside the range, governors not offered, …) before anything is written.
[[nodiscard]] std::vector<Step> plan(const Profile& p, const Machine& m);

struct ApplyResult {
  std::vector<std::string> applied;  // ids written, in order
  std::string failed_id, error;      // the write that failed (apply stops there)
  std::vector<Check> checks;         // verify after the writes
};
// Applies the plan's changes: each previous value is saved in the journal before its write; a failure stops the run.
[[nodiscard]] ApplyResult apply(const Profile& p, const std::string& profile_name, const Machine& m);

struct RollbackResult {
  std::vector<std::string> restored;
  std::vector<std::pair<std::string, std::string>> failed;  // id, error: kept in the journal for the next rollback
};
// Restores every saved value, newest first, and empties the journal of those restored.
[[nodiscard]] RollbackResult rollback(const Machine& m);

// The journal: {"schema": "gpusqueeze.tune-state/1", "boot_id", "profile", "entries": [{id, previous, target,
// status: writing|written|failed, time}]}. Missing file → no entries.
[[nodiscard]] nlohmann::json read_state(const Machine& m);

// Python for the framework group (and the allocator variable's effective value), which sets and checks each flag.
[[nodiscard]] std::string framework_snippet(const Profile& p);

// Text output shared by the CLI and the report: "passed  host.numa_balancing = 0" lines.
[[nodiscard]] std::string check_line(const Check& c);
[[nodiscard]] nlohmann::json to_json(const std::vector<Check>& checks);

}  // namespace gsq::tune
