// Exposition of the tune profile's verify result.
#include "monitor/tune_metrics.hpp"

#include "monitor/metrics.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gsq::monitor {

std::string render_tune_metrics(const std::string& hostname, const std::string& profile,
                                const std::vector<tune::Check>& checks, const std::string& error) {
  const auto host = escape_label(hostname);
  const bool failed = !error.empty() || std::any_of(checks.begin(), checks.end(), [](const tune::Check& c) {
    return c.status == tune::Status::failed;
  });
  std::string out = fmt::format(
      "# HELP gsq_tune_verified 1 when no setting of the tune profile failed verify (pending and skipped count as "
      "not failed).\n# TYPE gsq_tune_verified gauge\ngsq_tune_verified{{hostname=\"{}\",profile=\"{}\"}} {}\n",
      host, escape_label(profile), failed ? 0 : 1);
  out +=
      "# HELP gsq_tune_drift 1 when the setting's value differs from the profile (verify: failed), 0 when it matches "
      "or waits for the next module load.\n# TYPE gsq_tune_drift gauge\n";
  for (const auto& c : checks) {
    if (c.status == tune::Status::skipped) continue;  // missing here: no series, as NVML gaps have none
    out += fmt::format("gsq_tune_drift{{hostname=\"{}\",setting=\"{}\",status=\"{}\"}} {}\n", host, escape_label(c.id),
                       tune::status_name(c.status), c.status == tune::Status::failed ? 1 : 0);
  }
  return out;
}

}  // namespace gsq::monitor
