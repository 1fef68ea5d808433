// The tune profile as doctor and report show it: the installed profile (/etc/gpusqueeze/tune.toml), one the user
// names, or the shipped base profile, verified against this machine, with a finding per failed setting.
#pragma once

#include "core/finding.hpp"
#include "tune/engine.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gsq::jobs {

struct TuneView {
  std::string name;        // as shown: the file's display name
  std::string note;        // which profile this is and why
  bool suggested = false;  // the shipped base profile: never applied here, so a difference is advice, not drift
  std::vector<tune::Check> checks;
  tune::CheckCounts counts;
};

// `file` when given; else the installed profile; else `shipped`, the base profile that ships with gpusqueeze (where
// the caller wants it and it is installed). nullopt when there is none. Throws Error(bad_input) for a profile that does
// not read.
[[nodiscard]] std::optional<TuneView> verify_tune_profile(const std::string& file,
                                                          const std::optional<std::filesystem::path>& shipped);

[[nodiscard]] std::vector<Finding> tune_findings(const TuneView& v);
[[nodiscard]] std::string tune_headline(const TuneView& v);

}  // namespace gsq::jobs
