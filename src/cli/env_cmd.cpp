// `gpusqueeze env`: the machine's fingerprint, saved and checked for drift.
#include "cli/common.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "core/table.hpp"
#include "env/fingerprint.hpp"

#include <fmt/format.h>

#include <iostream>

namespace gsq::cli {

namespace {
struct EnvOptions {
  SnapshotOptions snap;
  bool json = false;
  std::string save, check;
};
}  // namespace

Action register_env(CLI::App& app) {
  auto o = std::make_shared<EnvOptions>();
  auto* cmd =
      app.add_subcommand("env", "Fingerprint everything on this machine that changes GPU performance; track drift");
  cmd->footer(
      "Examples:\n"
      "  gpusqueeze env                       table of host and GPU state with the fingerprint\n"
      "  gpusqueeze env --save base.json      record it (commit it next to your baseline)\n"
      "  gpusqueeze env --check base.json     list every locked field that changed; exit 1 if any did\n"
      "Locked fields are settings and identity (driver, clocks limits, power limit, ECC, MIG, PCIe width, env vars "
      "such\n"
      "as PYTORCH_CUDA_ALLOC_CONF or CUDA_MODULE_LOADING); readings that move by themselves (temperature, power draw) "
      "are\n"
      "shown but not fingerprinted.");
  add_snapshot_options(*cmd, o->snap, false);
  cmd->add_flag("--json", o->json, "Print the gpusqueeze.env/1 document instead of tables");
  cmd->add_option("--save", o->save, "Write the gpusqueeze.env/1 document (fingerprint + snapshot) to FILE");
  cmd->add_option("--check", o->check, "Compare with a saved env document or snapshot; exit 1 on drift")
      ->check(CLI::ExistingFile);
  return [o]() {
    const gpu::Snapshot s = acquire_snapshot(o->snap, false);
    const nlohmann::json doc = env::env_document(s);
    if (!o->save.empty()) {
      write_json_file(o->save, doc);
      note(fmt::format("saved fingerprint {} to {}", doc.at("fingerprint").get<std::string>(), o->save));
    }
    if (!o->check.empty()) {
      const auto before = env::fields_from_file(o->check);
      const auto drifted = env::drift(before, env::locked_fields(s));
      if (o->json) {
        nlohmann::json out = {{"schema", "gpusqueeze.env-drift/1"},
                              {"baseline", o->check},
                              {"fingerprint_before", env::fingerprint(before)},
                              {"fingerprint_now", doc.at("fingerprint")}};
        out["drift"] = nlohmann::json::array();
        for (const auto& d : drifted)
          out["drift"].push_back({{"field", d.field}, {"before", d.before}, {"after", d.after}});
        std::cout << out.dump(2) << '\n';
      } else if (drifted.empty()) {
        std::cout << fmt::format("no drift: fingerprint {} matches {}\n", doc.at("fingerprint").get<std::string>(),
                                 o->check);
      } else {
        Table t{{"field", "in " + o->check, "now"}, {}};
        for (const auto& d : drifted) t.rows.push_back({d.field, abbreviate(d.before), abbreviate(d.after)});
        std::cout << fmt::format("{} field(s) drifted since {} (fingerprint {} → {}):\n\n{}", drifted.size(), o->check,
                                 env::fingerprint(before), doc.at("fingerprint").get<std::string>(), t.markdown());
      }
      return drifted.empty() ? 0 : 1;
    }
    if (o->json) {
      std::cout << doc.dump(2) << '\n';
      return 0;
    }
    Table t{{"field", "value"}, {}};
    for (const auto& [k, v] : doc.at("fields").items()) t.rows.push_back({k, abbreviate(v.get<std::string>())});
    std::cout << fmt::format("fingerprint {}  ({} locked fields, snapshot {})\n\n{}",
                             doc.at("fingerprint").get<std::string>(), t.rows.size(), s.source, t.markdown());
    // Moving readings: useful to see, not part of the fingerprint.
    Table live{{"GPU", "SM MHz", "mem MHz", "power W", "temp °C", "PCIe gen", "mem used GiB", "processes"}, {}};
    for (const auto& g : s.gpus) {
      auto f = [](const auto& fld) { return fld.ok() ? fmt::format("{}", *fld) : std::string("n/a"); };
      live.rows.push_back({std::to_string(g.index), f(g.sm_clock_mhz), f(g.mem_clock_mhz),
                           g.power_draw_w.ok() ? fmt::format("{:.0f}", *g.power_draw_w) : "n/a", f(g.temperature_c),
                           f(g.pcie_gen_current),
                           g.memory_used_bytes.ok()
                               ? fmt::format("{:.2f}", static_cast<double>(*g.memory_used_bytes) / (1ULL << 30))
                               : "n/a",
                           g.processes.ok() ? std::to_string(g.processes->size()) : "n/a"});
    }
    std::cout << "\nreadings (not fingerprinted):\n\n" << live.markdown();
    return 0;
  };
}

}  // namespace gsq::cli
