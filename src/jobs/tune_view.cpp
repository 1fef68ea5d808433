// Verifying a tune profile for doctor and report.
#include "jobs/tune_view.hpp"

#include "core/error.hpp"
#include "report/report.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace gsq::jobs {

std::optional<TuneView> verify_tune_profile(const std::string& file,
                                            const std::optional<std::filesystem::path>& shipped) {
  tune::Machine m;
  TuneView v;
  std::filesystem::path path = file;
  if (path.empty() && std::filesystem::exists(m.installed_profile())) {
    path = m.installed_profile();
    v.note = "The installed profile, which gpusqueeze-tune.service applies at boot.";
  } else if (path.empty() && shipped) {
    path = *shipped;
    v.suggested = true;
    v.note =
        "No profile is installed (/etc/gpusqueeze/tune.toml): this is the base profile that ships with gpusqueeze, "
        "checked against this machine. `gpusqueeze tune capture -o my.toml` starts your own.";
  } else if (path.empty()) {
    return std::nullopt;
  } else {
    v.note = "The profile given with --tune.";
  }
  v.name = report::display_name(path);
  const auto gpu = tune::open_nvml_control(m.gpu_missing);
  m.gpu = gpu.get();
  v.checks = tune::verify(tune::read_profile(path), m);
  v.counts = tune::count_checks(v.checks);
  return v;
}

std::vector<Finding> tune_findings(const TuneView& v) {
  std::vector<Finding> out;
  for (const auto& c : v.checks) {
    if (c.status != tune::Status::failed) continue;
    // A profile that was applied here (installed, or the user's own) and no longer holds has drifted: a warning. The
    // shipped base profile was never applied: where the machine differs from it, that is a suggestion.
    out.push_back(make_finding(
        v.suggested ? "tune-suggestion" : "tune-drift", v.suggested ? Severity::info : Severity::warn,
        v.suggested ? fmt::format("{} is {}; the shipped base profile would set {}", c.id, c.actual, c.expected)
                    : fmt::format("{} is {}, the tune profile says {}", c.id, c.actual, c.expected),
        {{"setting", c.id}, {"actual", c.actual}, {"expected", c.expected}},
        fmt::format("sudo gpusqueeze tune apply {} --yes (previous values are saved; `tune "
                    "rollback --yes` restores them){}",
                    v.name, c.detail.empty() ? "" : "; " + c.detail),
        "gpusqueeze tune verify " + v.name, 6,
        c.id.rfind("gpu.", 0) == 0 ? "GPU " + c.id.substr(4, c.id.find('.', 4) - 4) : "host"));
  }
  return out;
}

std::string tune_headline(const TuneView& v) {
  return fmt::format("{}: {} passed, {} failed, {} pending, {} skipped", v.name, v.counts.passed, v.counts.failed,
                     v.counts.pending, v.counts.skipped);
}

}  // namespace gsq::jobs
