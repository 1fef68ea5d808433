// `gpusqueeze coldstart -- python serve.py`: each phase of a PyTorch program in a fresh process with its own cache
// folders (eager, cold compile, warm local, warm portable), timed to the first result with the compile caches' hit and
// miss counters; `coldstart prepare -o cache.bundle -- CMD` saves the portable Mega-Cache artifact with a manifest, and
// `--bundle` refuses a bundle made for another PyTorch, Triton, CUDA or GPU.
#include "cli/common.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "core/process.hpp"
#include "core/table.hpp"
#include "report/report.hpp"
#include "triage/coldstart.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

namespace gsq::cli {

namespace {

namespace fs = std::filesystem;

struct ColdstartOptions {
  std::vector<std::string> command;
  std::string python = "python3", keep, bundle, output, phases = "eager,cold,warm-local,warm-portable";
  bool module = false, json = false;
};

struct Runner {
  const ColdstartOptions& o;
  fs::path work, harness;
  std::vector<std::string> interpreter_and_script() const {
    if (o.module) return {o.python};
    const auto name = fs::path(o.command.at(0)).filename().string();
    if (name.find("python") == std::string::npos)
      throw_bad_input(
          fmt::format("coldstart runs Python programs: -- python SCRIPT [ARGS] (got '{}'); or --module "
                      "for the built-in model",
                      o.command.at(0)));
    if (o.command.size() < 2) throw_bad_input("coldstart: -- python SCRIPT [ARGS]: the script is missing");
    return o.command;
  }

  // One phase in a fresh process: caches under `cache`, the harness's JSON read back.
  triage::Phase run(const std::string& phase, const fs::path& cache, const std::vector<std::string>& extra) const {
    fs::create_directories(cache);
    ::setenv("TORCHINDUCTOR_CACHE_DIR", (cache / "inductor").c_str(), 1);
    ::setenv("TRITON_CACHE_DIR", (cache / "triton").c_str(), 1);
    if (phase == "eager")
      ::setenv("TORCHDYNAMO_DISABLE", "1", 1);
    else
      ::unsetenv("TORCHDYNAMO_DISABLE");
    const auto out = work / (phase + ".json");
    const auto cmd = interpreter_and_script();
    std::vector<std::string> argv{cmd[0], harness.string(), "--phase", phase, "--out", out.string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    if (o.module)
      argv.emplace_back("--module");
    else
      argv.insert(argv.end(), cmd.begin() + 1, cmd.end());
    note(fmt::format("coldstart: {} phase (a fresh process; caches in {})…", phase, cache.string()));
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = run_process(argv);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    write_text_file(work / (phase + ".log"), r.out + r.err);
    if (!fs::exists(out))
      throw_bad_input(fmt::format("the {} phase wrote no result (exit {}); its output: {}\n{}", phase, r.exit_code,
                                  (work / (phase + ".log")).string(),
                                  r.err.size() > 2000 ? r.err.substr(r.err.size() - 2000) : r.err));
    auto p = triage::read_phase(read_any_json(out), out.string());
    p.process_s = wall;
    return p;
  }
  static nlohmann::json read_any_json(const fs::path& f) { return parse_any_json(read_text_file(f), f.string()); }

  std::map<std::string, std::string> probe() const {
    const auto out = work / "probe.json";
    const auto r = run_process({interpreter_and_script()[0], harness.string(), "--probe", "--out", out.string()});
    if (!fs::exists(out)) throw_bad_input("coldstart: PyTorch could not be imported: " + r.err);
    std::map<std::string, std::string> env;
    const auto probe = read_any_json(out);  // named: items() must not outlive it
    for (const auto& [k, v] : probe.at("environment").items()) env[k] = v.get<std::string>();
    return env;
  }
};

fs::path harness_path() {
  if (const auto p = data_file("gsq_coldstart.py")) return *p;
  throw_no_gpu("coldstart: its harness gsq_coldstart.py is not installed beside gpusqueeze (share/gpusqueeze)");
}

void check_bundle(const Runner& run, const std::string& file) {
  const auto bundle = read_json_file(file, triage::kColdstartBundleSchema);
  const auto mismatches = triage::bundle_mismatches(bundle, run.probe());
  if (!mismatches.empty()) {
    std::string text = fmt::format("{}: this bundle cannot serve this machine:", file);
    for (const auto& m : mismatches) text += "\n  " + m;
    throw_bad_input(text + "\n(prepare one here: gpusqueeze coldstart prepare -o cache.bundle -- CMD)");
  }
}

void print(const triage::ColdstartReport& r) {
  std::cout << "# Cold start: " << r.program << "\n\n";
  Table t{{"phase", "first result", "process", "compile (Dynamo)", "FX graph cache hit/miss", "AOTAutograd hit/miss",
           "artifact"},
          {}};
  for (const auto& p : r.phases) {
    auto c = [&](const char* k) { return p.counters.count(k) ? p.counters.at(k) : 0LL; };
    t.rows.push_back({p.name, fmt::format("{:.2f} s", p.first_result_s), fmt::format("{:.2f} s", p.process_s),
                      p.compile_s ? fmt::format("{:.2f} s", *p.compile_s) : "-",
                      fmt::format("{}/{}", c("inductor.fxgraph_cache_hit"), c("inductor.fxgraph_cache_miss")),
                      fmt::format("{}/{}", c("aot_autograd.autograd_cache_hit"), c("aot_autograd.autograd_cache_miss")),
                      p.artifact_saved_bytes    ? fmt::format("saved {} KiB", p.artifact_saved_bytes / 1024)
                      : p.artifact_loaded_bytes ? fmt::format("loaded {} KiB", p.artifact_loaded_bytes / 1024)
                                                : ""});
  }
  std::cout << t.markdown();
  if (!r.phases.empty()) {
    const auto& env = r.phases.front().environment;
    auto get = [&](const char* k) { return env.count(k) ? env.at(k) : std::string("?"); };
    std::cout << fmt::format("\nPyTorch {} · Triton {} · CUDA {} · device {}\n", get("torch"),
                             get("triton").empty() ? "none" : get("triton"), get("cuda").empty() ? "none" : get("cuda"),
                             get("device"));
  }
  for (const auto& n : r.notes) std::cout << "note: " << n << '\n';
  if (!r.findings.empty()) std::cout << '\n' << report::findings_table(r.findings).markdown();
}

int run_coldstart(const ColdstartOptions& o, bool prepare) {
  if (!o.module && o.command.empty())
    throw_bad_input("coldstart: give the program after -- (python SCRIPT [ARGS]) or --module for the built-in model");
  std::unique_ptr<fs::path, void (*)(fs::path*)> cleanup(nullptr, [](fs::path* p) {
    std::error_code ec;
    fs::remove_all(*p, ec);
    delete p;
  });
  fs::path work = o.keep;
  if (work.empty()) {
    work = fs::temp_directory_path() / fmt::format("gsq-coldstart-{}", ::getpid());
    cleanup.reset(new fs::path(work));
  }
  fs::create_directories(work);
  const char* user_cache = std::getenv("TORCHINDUCTOR_CACHE_DIR");  // before the phases set their own
  const std::string user_cache_dir = user_cache ? user_cache : "";
  Runner run{o, work, harness_path()};
  const std::string program = o.module ? "--module (built-in model)" : o.command.at(1);
  if (prepare) {
    if (o.output.empty()) throw_bad_input("coldstart prepare: -o cache.bundle is required");
    auto p = run.run("cold", work / "cache-prepare", {"--save-bundle", fs::absolute(o.output).string()});
    if (p.artifact_saved_bytes == 0)
      throw_bad_input("coldstart prepare: the program compiled nothing, so there is no artifact to save");
    std::cout << fmt::format(
        "wrote {} ({} KiB artifact; manifest: PyTorch {}, device {}); load it with: gpusqueeze "
        "coldstart --bundle {} -- CMD, or torch.compiler.load_cache_artifacts in the program\n",
        o.output, p.artifact_saved_bytes / 1024, p.environment["torch"], p.environment["device"], o.output);
    return 0;
  }
  if (!o.bundle.empty()) check_bundle(run, o.bundle);  // refused before anything runs
  std::vector<triage::Phase> phases;
  const auto wanted = "," + o.phases + ",";
  auto want = [&](const char* name) { return wanted.find(std::string(",") + name + ",") != std::string::npos; };
  const auto shared_cache = work / "cache-local";
  const auto bundle = o.bundle.empty() ? (work / "cold.bundle").string() : fs::absolute(o.bundle).string();
  if (want("eager")) phases.push_back(run.run("eager", work / "cache-eager", {}));
  if (want("cold"))
    phases.push_back(
        run.run("cold", shared_cache,
                o.bundle.empty() ? std::vector<std::string>{"--save-bundle", bundle} : std::vector<std::string>{}));
  if (want("warm-local")) phases.push_back(run.run("warm-local", shared_cache, {}));
  if (want("warm-portable") && fs::exists(bundle))
    phases.push_back(run.run("warm-portable", work / "cache-portable", {"--load-bundle", bundle}));
  auto r = triage::analyze_coldstart(program, std::move(phases));
  for (auto& f : triage::cache_folder_findings(work)) r.findings.push_back(std::move(f));
  if (!user_cache_dir.empty())
    r.notes.push_back(
        fmt::format("TORCHINDUCTOR_CACHE_DIR={} in your environment was replaced per phase", user_cache_dir));
  r.notes.push_back("one process per phase: single runs, so differences under about half a second are noise");
  if (!o.bundle.empty()) r.notes.push_back("warm-portable loaded " + o.bundle);
  if (!o.keep.empty()) r.notes.push_back("phase files, logs and caches kept in " + o.keep);
  if (o.json)
    std::cout << triage::to_json(r).dump(2) << '\n';
  else
    print(r);
  return worst(r.findings) == Severity::fail ? static_cast<int>(ExitCode::findings) : 0;
}

}  // namespace

Action register_coldstart(CLI::App& app) {
  auto o = std::make_shared<ColdstartOptions>();
  auto* cmd =
      app.add_subcommand("coldstart", "Field triage: what torch.compile's caches save at start, phase by phase");
  cmd->footer(
      "Each phase runs in a fresh process with its own cache folders (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR):\n"
      "eager (TORCHDYNAMO_DISABLE=1), cold (empty caches), warm-local (the caches cold filled), warm-portable (empty\n"
      "caches + the Mega-Cache artifact of torch.compiler.save_cache_artifacts()). The program is a script that\n"
      "compiles and serves its first request, then exits; --module runs a small built-in model instead.\n"
      "What the article gets wrong: there is no triton.compile(..., int4=True) or warmup=True. Ahead-of-time Triton\n"
      "compilation is kernel.warmup(args, grid=...); for torch.compile the supported cold-start path is its caches\n"
      "(local folders, or the portable artifact this command prepares), or AOTInductor.\n"
      "Examples:\n"
      "  gpusqueeze coldstart --module                       # the built-in model (works on a CPU: Inductor's C++)\n"
      "  gpusqueeze coldstart -- python serve.py --warmup-only\n"
      "  gpusqueeze coldstart prepare -o cache.bundle -- python serve.py\n"
      "  gpusqueeze coldstart --bundle cache.bundle -- python serve.py   # refused if made for another GPU or PyTorch");
  cmd->add_flag("--module", o->module, "Run the built-in test-sized model instead of a script");
  cmd->add_option("--python", o->python, "Interpreter for --module")->capture_default_str();
  cmd->add_option("--phases", o->phases, "Comma-separated phases to run")->capture_default_str();
  cmd->add_option("--bundle", o->bundle, "Warm-portable loads this bundle (checked against this machine first)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--keep", o->keep, "Keep phase files, logs and caches in DIR (default: a temporary folder)");
  cmd->add_flag("--json", o->json, "gpusqueeze.coldstart/1 JSON instead of tables");
  cmd->add_option("command", o->command, "python SCRIPT [ARGS], after --");
  auto* prepare = cmd->add_subcommand("prepare", "Run cold once and save the portable cache artifact with a manifest");
  prepare->add_option("-o,--output", o->output, "Bundle to write")->required();
  prepare->add_flag("--module", o->module, "The built-in model");
  prepare->add_option("--python", o->python, "Interpreter for --module");
  prepare->add_option("--keep", o->keep, "Keep the phase file, log and caches in DIR");
  prepare->add_option("command", o->command, "python SCRIPT [ARGS], after --");
  return [o, prepare]() { return run_coldstart(*o, prepare->parsed()); };
}

}  // namespace gsq::cli
