// Doctor: health and configuration checks over a snapshot, each giving a finding with evidence, fix and threshold
// source.
#pragma once

#include "core/finding.hpp"
#include "gpu/snapshot.hpp"

#include <vector>

namespace gsq::doctor {

// Every check runs on every GPU (or the host once); a check whose inputs are unsupported gives an `info` finding saying
// so.
[[nodiscard]] std::vector<Finding> run_checks(const gpu::Snapshot& s);

struct CheckInfo {
  const char* id;
  const char* what;
};
[[nodiscard]] const std::vector<CheckInfo>& check_catalog();  // for --list

}  // namespace gsq::doctor
