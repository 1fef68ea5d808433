// The installed tune profile's state as metrics: gsq_tune_verified (1 when no setting failed) and gsq_tune_drift per
// setting (1 when its value differs from the profile), so a reset GPU or a changed sysctl alerts (GsqTuneDrift).
#pragma once

#include "tune/engine.hpp"

#include <string>
#include <vector>

namespace gsq::monitor {

// Checks of one verify run; `error` non-empty when the profile could not be verified at all (exported as verified 0).
[[nodiscard]] std::string render_tune_metrics(const std::string& hostname, const std::string& profile,
                                              const std::vector<tune::Check>& checks, const std::string& error = {});

}  // namespace gsq::monitor
