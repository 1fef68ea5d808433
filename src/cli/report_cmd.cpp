// `gpusqueeze report`: every step for this machine on one page (index.html, report.md, report.json).
#include "cli/common.hpp"

#include "core/error.hpp"
#include "doctor/checks.hpp"
#include "env/fingerprint.hpp"
#include "report/report.hpp"

#include <fmt/format.h>

#include <iostream>

namespace gsq::cli {

namespace {
struct ReportOptions {
  SnapshotOptions snap;
  std::string out_dir = "gsq-report";
};
}  // namespace

Action register_report(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  auto* cmd = app.add_subcommand("report", "Write the one-page report of this machine (HTML + markdown + JSON)");
  cmd->footer(
      "Sections: environment and fingerprint, doctor findings; later steps add theirs.\n"
      "Without an NVIDIA GPU the report says so and is built from the snapshot recorded on an H200 that ships with\n"
      "gpusqueeze, labelled as such. Open OUT/index.html in any browser: it has no external resources.");
  add_snapshot_options(*cmd, o->snap, true);
  cmd->add_option("-o,--out", o->out_dir, "Report folder")->capture_default_str();
  return [o]() {
    gpu::Snapshot s;
    std::string provenance;
    try {
      s = acquire_snapshot(o->snap, true);
      provenance = o->snap.snapshot_file.empty()
                       ? fmt::format("Live on {} at {}.", s.host.hostname.ok() ? *s.host.hostname : "this host", s.captured_at)
                       : fmt::format("Replayed from {} (recorded at {} on {}).", o->snap.snapshot_file, s.captured_at,
                                     s.host.hostname.ok() ? *s.host.hostname : "an unnamed host");
    } catch (const Error& e) {
      if (e.code() != ExitCode::no_gpu) throw;
      const auto bundled = bundled_snapshot();
      if (!bundled) throw;
      note(std::string(e.what()));
      note(fmt::format("this machine has no usable NVIDIA GPU; the report shows the bundled snapshot recorded on an H200 "
                       "({}) instead", bundled->string()));
      s = gpu::load_snapshot(*bundled);
      provenance = fmt::format("NOT THIS MACHINE: {} ({}). Shown from the snapshot recorded on {} at {}, bundled with gpusqueeze.",
                               e.what(), "no GPU here", s.gpus.empty() || !s.gpus[0].name.ok() ? "a GPU server" : *s.gpus[0].name,
                               s.captured_at);
    }
    const auto findings = doctor::run_checks(s);
    report::Report r;
    r.title = fmt::format("gpusqueeze report — {}", s.gpus.empty() || !s.gpus[0].name.ok() ? "machine" : *s.gpus[0].name);
    r.provenance = provenance;
    r.sections.push_back(report::environment_section(s, env::fingerprint(env::locked_fields(s))));
    r.sections.push_back(report::doctor_section(findings));
    report::write_report(r, o->out_dir);
    std::cout << fmt::format("report written to {}/index.html (also report.md, report.json)\n{}\n", o->out_dir, provenance);
    std::cout << fmt::format("doctor: worst finding {}\n", to_string(worst(findings)));
    return 0;
  };
}

}  // namespace gsq::cli
