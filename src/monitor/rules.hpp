// `gpusqueeze rules generate`: a Prometheus rule file with the method's three alert levels, written from the
// exporter's metric names and a latency baseline. Its behaviour is pinned by promtool unit tests
// (deploy/prometheus/gpusqueeze-rules.test.yml, run in CI with Debian's prometheus package).
#pragma once

#include <string>

namespace gsq::monitor {

struct RulesOptions {
  double baseline_p99_s = 0;  // the application's P99 latency in the baseline, seconds (> 0)
  std::string latency_histogram = "gsq_request_latency_seconds";  // the app's Prometheus histogram (base name)
  double latency_factor = 1.2;                                    // alert when P99 exceeds this × the baseline
  std::string job = "gpusqueeze";                                 // scrape job of the exporters
  std::string baseline_origin;  // where the baseline came from, for the file's comment
};

// YAML text. Levels: `severity: info` (look when convenient), `warning` (performance is lost now), `critical`
// (hardware or monitoring is broken). Throws Error(bad_input) for a non-positive baseline or factor.
[[nodiscard]] std::string generate_rules(const RulesOptions& o);

}  // namespace gsq::monitor
