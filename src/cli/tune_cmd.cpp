// `gpusqueeze tune`: step 6 of the method. Profiles (TOML) of GPU, nvidia-module, host, environment and PyTorch
// settings, captured from a machine, verified setting by setting, applied with every previous value saved first, and
// rolled back on request. Nothing is written without --yes; rollback never happens by itself.
#include "cli/common.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "core/table.hpp"
#include "tune/engine.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>

namespace gsq::cli {

namespace {

struct TuneCliOptions {
  std::string profile, output, root = "/";
  int pid = 0;
  bool yes = false, json = false;
};

// The machine the verbs work on: NVML (or the fake named by GSQ_TUNE_FAKE_GPU, for tests), paths under --root.
struct MachineHandle {
  std::unique_ptr<tune::GpuControl> gpu;
  tune::Machine m;
};

MachineHandle open_machine(const TuneCliOptions& o) {
  MachineHandle h;
  h.m.root = o.root;
  if (o.pid > 0) h.m.pid = o.pid;
  if (const char* fake = std::getenv("GSQ_TUNE_FAKE_GPU"); fake != nullptr && *fake != '\0') {
    h.gpu = tune::FakeGpuControl::from_file(fake);
    note(fmt::format("GPUs are the fake machine in {} (GSQ_TUNE_FAKE_GPU)", fake));
  } else {
    h.gpu = tune::open_nvml_control(h.m.gpu_missing);
  }
  h.m.gpu = h.gpu.get();
  return h;
}

void require_root(const TuneCliOptions& o, const char* verb) {
  if (o.root == "/" && ::geteuid() != 0)
    throw_bad_input(
        fmt::format("tune {} --yes writes NVML settings, sysfs and /etc: run it as root (sudo); without "
                    "--yes it only shows what it would do",
                    verb));
}

std::string summary(const tune::CheckCounts& c) {
  return fmt::format("{} passed, {} failed, {} skipped, {} pending", c.passed, c.failed, c.skipped, c.pending);
}

int print_checks(const std::vector<tune::Check>& checks, const std::string& what, bool json) {
  const auto c = tune::count_checks(checks);
  if (json) {
    std::cout << nlohmann::json{{"profile", what},      {"checks", tune::to_json(checks)},
                                {"passed", c.passed},   {"failed", c.failed},
                                {"skipped", c.skipped}, {"pending", c.pending}}
                     .dump(2)
              << '\n';
  } else {
    for (const auto& x : checks) std::cout << tune::check_line(x) << '\n';
    std::cout << fmt::format("verify {}: {}\n", what, summary(c));
  }
  return c.failed > 0 ? static_cast<int>(ExitCode::findings) : 0;
}

int run_capture(const TuneCliOptions& o) {
  auto h = open_machine(o);
  const auto p = tune::capture(h.m);
  const auto text = tune::write_profile(
      p, "gpusqueeze tune profile, " + p.summary +
             "\nValues in [unsupported] could not be read here; `gpusqueeze tune verify` skips them.\nEdit, then: "
             "gpusqueeze tune apply FILE (shows the plan), --yes to apply as root.");
  if (o.output.empty() || o.output == "-") {
    std::cout << text;
  } else {
    write_text_file(o.output, text);
    note(
        fmt::format("wrote {} ({} settings, {} not readable here)", o.output, p.settings.size(), p.unsupported.size()));
  }
  return 0;
}

const char* action_name(tune::Step::Action a) {
  switch (a) {
    case tune::Step::Action::change:
      return "change";
    case tune::Step::Action::unchanged:
      return "unchanged";
    case tune::Step::Action::skip:
      return "skip";
    case tune::Step::Action::in_process:
      return "in process";
  }
  return "?";
}

int run_apply(const TuneCliOptions& o) {
  auto h = open_machine(o);
  const auto p = tune::read_profile(o.profile);
  const auto steps = tune::plan(p, h.m);  // refuses bad values before anything is written
  Table t{{"setting", "now", "profile", "action", "note"}, {}};
  int changes = 0;
  for (const auto& s : steps) {
    t.rows.push_back({s.id, s.from, s.to, action_name(s.action), s.note});
    changes += s.action == tune::Step::Action::change;
  }
  if (!o.yes) {
    std::cout << "# tune apply " << o.profile << ": plan (dry run)\n\n" << t.markdown();
    std::cout << fmt::format(
        "\n{} change(s). Nothing was written: run with --yes as root to apply; every previous "
        "value is saved first ({}) and `gpusqueeze tune rollback --yes` restores them.\n",
        changes, h.m.state_dir().string());
    return 0;
  }
  require_root(o, "apply");
  const auto r = tune::apply(p, o.profile, h.m);
  for (const auto& id : r.applied) std::cout << "applied  " << id << '\n';
  if (!r.failed_id.empty()) {
    std::cout << fmt::format("FAILED   {}: {}\napply stopped there; {} setting(s) applied before it{}\n", r.failed_id,
                             r.error, r.applied.size(),
                             r.applied.empty() ? "" : " — `gpusqueeze tune rollback --yes` restores them");
    return static_cast<int>(ExitCode::findings);
  }
  if (r.applied.empty()) std::cout << "nothing to change\n";
  return print_checks(r.checks, o.profile, o.json);
}

int run_rollback(const TuneCliOptions& o) {
  auto h = open_machine(o);
  const auto state = tune::read_state(h.m);
  if (state["entries"].empty()) {
    std::cout << "nothing to roll back: no saved values in " << h.m.state_dir().string() << '\n';
    return 0;
  }
  if (!o.yes) {
    Table t{{"setting", "restores", "applied", "status"}, {}};
    for (const auto& e : state["entries"])
      t.rows.push_back({e.value("id", ""), e.value("previous", ""), e.value("target", ""), e.value("status", "")});
    std::cout << "# tune rollback: plan (dry run)\n\n"
              << t.markdown() << "\nNothing was written: run with --yes as root to restore these values.\n";
    return 0;
  }
  require_root(o, "rollback");
  const auto r = tune::rollback(h.m);
  for (const auto& id : r.restored) std::cout << "restored " << id << '\n';
  for (const auto& [id, why] : r.failed) std::cout << "FAILED   " << id << ": " << why << '\n';
  if (!r.failed.empty()) std::cout << "the values not restored stay saved; fix the cause and run rollback again\n";
  return r.failed.empty() ? 0 : static_cast<int>(ExitCode::findings);
}

int run_keys() {
  Table t{{"group", "key", "values", "lasts", "meaning"}, {}};
  for (const auto& k : tune::catalogue()) t.rows.push_back({k.group, k.key, k.values, k.lasts, k.meaning});
  std::cout << t.markdown();
  return 0;
}

}  // namespace

Action register_tune(CLI::App& app) {
  auto o = std::make_shared<TuneCliOptions>();
  auto* cmd = app.add_subcommand("tune", "Step 6: capture, verify, apply and roll back a tuning profile (TOML)");
  cmd->require_subcommand(1);
  cmd->footer(
      "A profile has [gpu] (all GPUs; [gpu.0] or [gpu.\"GPU-uuid\"] for one), [module.nvidia], [host], [env] and\n"
      "[framework] tables; [main] include = \"base.toml\" inherits (later keys win). `gpusqueeze tune keys` lists\n"
      "every key with how long it lasts: NVML settings are lost at reboot, driver reload and GPU reset (the boot\n"
      "unit deploy/systemd/gpusqueeze-tune.service re-applies and verifies); module options wait for the next load.\n"
      "Examples:\n"
      "  gpusqueeze tune capture -o now.toml          # this machine's values\n"
      "  gpusqueeze tune verify deploy/tune/h100-serving.toml\n"
      "  sudo gpusqueeze tune apply my.toml --yes     # without --yes: the plan only\n"
      "  sudo gpusqueeze tune rollback --yes          # restore what apply saved\n"
      "Exit codes: verify 1 when a setting failed; apply 1 when a write failed, 2 when the machine refuses a value.");
  auto root_opt = [&](CLI::App* c) {
    c->add_option("--root", o->root, "treat DIR as / for sysfs, procfs, /etc and /var/lib (tests, chroots)")
        ->group("Advanced");
  };
  auto* capture = cmd->add_subcommand("capture", "write this machine's current values as a profile");
  capture->add_option("-o,--output", o->output, "profile to write (default: stdout)");
  root_opt(capture);
  auto* verify = cmd->add_subcommand("verify", "check every setting of a profile: passed, failed, skipped, pending");
  verify->add_option("profile", o->profile, "profile (TOML)")->required();
  verify->add_option("--pid", o->pid, "check [env] in this running process's environment (/proc/PID/environ)");
  verify->add_flag("--json", o->json, "JSON instead of lines");
  root_opt(verify);
  auto* apply = cmd->add_subcommand("apply", "show the plan; --yes applies it as root, saving previous values");
  apply->footer(
      "Examples: gpusqueeze tune apply profile.toml        (the plan, nothing written)\n"
      "          sudo gpusqueeze tune apply profile.toml --yes");
  apply->add_option("profile", o->profile, "profile (TOML)")->required();
  apply->add_flag("--yes", o->yes, "really write (root); without it nothing is written");
  apply->add_flag("--json", o->json, "verify's result as JSON");
  root_opt(apply);
  auto* rollback = cmd->add_subcommand("rollback", "restore the values apply saved (--yes to write)");
  rollback->footer("Example: sudo gpusqueeze tune rollback --yes");
  rollback->add_flag("--yes", o->yes, "really write (root)");
  root_opt(rollback);
  auto* snippet = cmd->add_subcommand("snippet", "print the Python that sets and checks the [framework] flags");
  snippet->footer("Example: gpusqueeze tune snippet profile.toml > tune_flags.py");
  snippet->add_option("profile", o->profile, "profile (TOML)")->required();
  auto* keys = cmd->add_subcommand("keys", "every key a profile may hold, and the ones rejected with the reason");
  keys->footer("Example: gpusqueeze tune keys");
  return [=]() -> int {
    if (capture->parsed()) return run_capture(*o);
    if (verify->parsed()) {
      auto h = open_machine(*o);
      return print_checks(tune::verify(tune::read_profile(o->profile), h.m), o->profile, o->json);
    }
    if (apply->parsed()) return run_apply(*o);
    if (rollback->parsed()) return run_rollback(*o);
    if (snippet->parsed()) {
      std::cout << tune::framework_snippet(tune::read_profile(o->profile));
      return 0;
    }
    if (keys->parsed()) return run_keys();
    return static_cast<int>(ExitCode::bad_input);
  };
}

}  // namespace gsq::cli
