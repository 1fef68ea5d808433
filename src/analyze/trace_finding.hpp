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

namespace gsq::analyze {
struct Analysis;
struct Thresholds;
namespace detail {
// The hardware layer's findings (analysis_hw.cpp) appended to `fs`.
void hardware_findings(const Analysis& a, double gpu_share, double gemm_share, const Thresholds& th,
                       std::vector<Finding>& fs);
// The copies' findings (pageable, synchronous, not overlapped) appended to `fs`.
void copy_findings(const Analysis& a, std::vector<Finding>& fs);
}  // namespace detail
}  // namespace gsq::analyze
