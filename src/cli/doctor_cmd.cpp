// `gpusqueeze doctor`: health and configuration checks with evidence and the fix.
#include "cli/common.hpp"
#include "core/error.hpp"
#include "jobs/tune_view.hpp"
#include "topo/sysfs.hpp"

#include "core/json_io.hpp"
#include "doctor/checks.hpp"
#include "report/report.hpp"

#include <fmt/format.h>

#include <iostream>
#include <optional>

namespace gsq::cli {

namespace {
struct DoctorOptions {
  SnapshotOptions snap;
  bool json = false, list = false, all = false;
  std::string save_snapshot;
};
}  // namespace

Action register_doctor(CLI::App& app) {
  auto o = std::make_shared<DoctorOptions>();
  auto* cmd = app.add_subcommand(
      "doctor", "Check the machine: PCIe link, throttling, ECC, persistence, ASPM, BAR1, profiling permission, ...");
  cmd->footer(
      "Runs a short FMA load on each GPU (2 s by default) while sampling NVML, so throttle reasons and the PCIe link\n"
      "generation are judged busy, not idle. With several GPUs it adds `topo`'s checks (links, NICs, ACS, IOMMU).\n"
      "Writes nothing to the GPU's settings.\n"
      "Exit codes: 0 no fail-level finding, 1 at least one fail, 2 bad input, 3 no NVIDIA driver/GPU.\n"
      "Examples:\n"
      "  gpusqueeze doctor\n"
      "  gpusqueeze doctor --save-snapshot node7.json     send the file to a colleague\n"
      "  gpusqueeze doctor --snapshot node7.json          diagnose it elsewhere");
  add_snapshot_options(*cmd, o->snap, true);
  cmd->add_flag("--json", o->json, "Print findings as gpusqueeze.doctor/1 JSON");
  cmd->add_flag("--all", o->all, "Also list passing and informational checks in the table");
  cmd->add_flag("--list", o->list, "List the checks and exit");
  cmd->add_option("--save-snapshot", o->save_snapshot, "Also write the snapshot (with the load readings) to FILE");
  return [o]() {
    if (o->list) {
      for (const auto& c : doctor::check_catalog()) std::cout << fmt::format("{:<26} {}\n", c.id, c.what);
      return 0;
    }
    const gpu::Snapshot s = acquire_snapshot(o->snap, true);
    if (!o->save_snapshot.empty()) {
      write_json_file(o->save_snapshot, nlohmann::json(s));
      note("saved snapshot to " + o->save_snapshot);
    }
    auto findings = doctor::run_checks(s);
    std::optional<jobs::TuneView> tv;  // the installed tune profile, verified on the live machine (step 6)
    if (o->snap.snapshot_file.empty()) {
      try {
        tv = jobs::verify_tune_profile("", std::nullopt);
      } catch (const Error& e) {
        note(std::string("the installed tune profile was not verified: ") + e.what());
      }
      if (tv)
        for (auto& f : jobs::tune_findings(*tv)) findings.push_back(std::move(f));
      if (s.gpus.size() > 1) {  // step 5's checks: the GPUs' links, NICs, ACS, IOMMU (as `gpusqueeze topo`)
        try {
          const auto nvml = gpu::Nvml::open();
          for (auto& f : topo::read_machine_topology(nvml.api()).findings) findings.push_back(std::move(f));
        } catch (const Error& e) {
          note(std::string("topology not checked: ") + e.what());
        }
      }
    }
    const Severity w = worst(findings);
    if (o->json) {
      std::cout << nlohmann::json{{"schema", "gpusqueeze.doctor/1"},
                                  {"source", s.source},
                                  {"captured_at", s.captured_at},
                                  {"worst", to_string(w)},
                                  {"findings", findings},
                                  {"tune",
                                   tv ? nlohmann::json{{"profile", tv->name}, {"checks", tune::to_json(tv->checks)}}
                                      : nlohmann::json(nullptr)}}
                       .dump(2)
                << '\n';
    } else {
      std::vector<Finding> shown;
      for (const auto& f : findings)
        if (o->all || f.severity == Severity::warn || f.severity == Severity::fail) shown.push_back(f);
      int counts[4] = {};
      for (const auto& f : findings) counts[static_cast<int>(f.severity)]++;
      std::cout << fmt::format("doctor: {} checks on {} GPU(s) from {} — {} fail, {} warn, {} info, {} pass\n\n",
                               findings.size(), s.gpus.size(), s.source, counts[3], counts[2], counts[1], counts[0]);
      if (!shown.empty())
        std::cout << report::findings_table(shown).markdown();
      else
        std::cout << "All checks pass" << (o->all ? "" : " (--all lists them)") << ".\n";
      if (tv)
        std::cout << "\ntune profile " << jobs::tune_headline(*tv) << " (gpusqueeze tune verify " << tv->name << ")\n";
    }
    return w == Severity::fail ? 1 : 0;
  };
}

}  // namespace gsq::cli
