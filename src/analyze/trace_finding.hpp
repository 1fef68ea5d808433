// The shape of the analyzer's findings: severity from their share of wall time, the saving as a share of it, step 2.
#pragma once

#include "core/finding.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gsq::analyze::detail {

// `share` of wall time sets the severity (≥ 10% warn, else info); `saving_ns` becomes the saving ratio and evidence.
[[nodiscard]] Finding finding(const char* id, double share, std::string title, std::vector<Evidence> ev,
                              int64_t saving_ns, std::string fix, std::string source, int64_t wall_ns);

}  // namespace gsq::analyze::detail
