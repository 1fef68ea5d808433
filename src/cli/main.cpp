// gpusqueeze entry point: parses the command line once and maps every error to the documented exit code.
#include "cli/common.hpp"

#include "core/error.hpp"
#include "cuda/check.hpp"
#include "gpu/cost.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace {

// Levenshtein distance, for "did you mean" on a mistyped command or option.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The closest of `known` to `word` when it is a likely typo (at most two edits, and fewer than the word's length).
std::string closest(std::string_view word, const std::vector<std::string>& known) {
  std::string best;
  size_t best_d = 3;
  for (const auto& k : known)
    if (const size_t d = edit_distance(word, k); d < best_d && d < word.size()) best = k, best_d = d;
  return best;
}

// CLI11's parse error said as every other error is ("gpusqueeze: …"), with the command's help to read and, for a
// mistyped command or option, the one meant.
int parse_error(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  std::vector<std::string> commands;
  for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) commands.push_back(sub->get_name());
  const CLI::App* cmd = &app;
  std::string path;
  for (int i = 1; i < argc; ++i) {  // the deepest subcommand named on the line
    const std::string arg = argv[i];
    if (arg.starts_with("-")) continue;
    const CLI::App* next = nullptr;
    for (const auto* sub : cmd->get_subcommands([](const CLI::App*) { return true; }))
      if (sub->get_name() == arg) next = sub;
    if (next == nullptr) break;
    cmd = next, path += " " + arg;
  }
  std::string hint;
  for (int i = 1; i < argc && hint.empty(); ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.starts_with("--")) {
      std::vector<std::string> options;
      std::vector<const CLI::App*> scopes{cmd};  // the command and its option groups ("source" of fleet)
      for (const auto* sub : cmd->get_subcommands([](const CLI::App*) { return true; }))
        if (dynamic_cast<const CLI::Option_group*>(sub) != nullptr) scopes.push_back(sub);
      for (const auto* scope : scopes)
        for (const auto* opt : scope->get_options())
          for (const auto& name : opt->get_lnames()) options.push_back("--" + name);
      const std::string flag = arg.substr(0, arg.find('='));
      if (std::find(options.begin(), options.end(), flag) == options.end())
        if (auto m = closest(flag, options); !m.empty()) hint = " (did you mean " + m + "?)";
    } else if (cmd == &app && i == 1 && std::find(commands.begin(), commands.end(), arg) == commands.end()) {
      const auto m = closest(arg, commands);
      std::fprintf(stderr, "gpusqueeze: unknown command '%s'%s\nRun 'gpusqueeze --help' for the commands.\n",
                   arg.c_str(), m.empty() ? "" : (" (did you mean '" + m + "'?)").c_str());
      return static_cast<int>(gsq::ExitCode::bad_input);
    }
  }
  std::fprintf(stderr, "gpusqueeze: %s%s\nRun 'gpusqueeze%s --help' for the options and examples.\n", e.what(),
               hint.c_str(), path.c_str());
  return static_cast<int>(gsq::ExitCode::bad_input);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gpusqueeze — measure, diagnose and tune NVIDIA data-center GPUs (H100/H200 first)"};
  app.set_version_flag("--version", GSQ_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Steps: env/doctor (0 machine) · bench/compare (1 baseline) · trace/analyze/diff (2 locate) · probe (3, 5 "
      "ceilings) · "
      "kernels/occupancy (3, 4) · topo/nccl (5 multi-GPU) · tune (6 persist) · memory/jitter/trt/coldstart (field "
      "triage) · "
      "report (all steps on "
      "one page).\n"
      "Exit codes: 0 ok · 1 findings at fail level or regression · 2 bad usage or input · 3 no NVIDIA driver/GPU · 70 "
      "internal or CUDA error.\n"
      "Run `gpusqueeze COMMAND --help` for each command's options and examples.");
  const std::vector<std::pair<const char*, gsq::cli::Action>> actions{
      {"env", gsq::cli::register_env(app)},
      {"doctor", gsq::cli::register_doctor(app)},
      {"bench", gsq::cli::register_bench(app)},
      {"compare", gsq::cli::register_compare(app)},
      {"probe", gsq::cli::register_probe(app)},
      {"analyze", gsq::cli::register_analyze(app)},
      {"diff", gsq::cli::register_diff(app)},
      {"report", gsq::cli::register_report(app)},
      {"trace", gsq::cli::register_trace(app)},
      {"exporter", gsq::cli::register_exporter(app)},
      {"rules", gsq::cli::register_rules(app)},
      {"capture", gsq::cli::register_capture(app)},
      {"kernels", gsq::cli::register_kernels(app)},
      {"occupancy", gsq::cli::register_occupancy(app)},
      {"memory", gsq::cli::register_memory(app)},
      {"jitter", gsq::cli::register_jitter(app)},
      {"trt", gsq::cli::register_trt(app)},
      {"nccl", gsq::cli::register_nccl(app)},
      {"topo", gsq::cli::register_topo(app)},
      {"tune", gsq::cli::register_tune(app)},
      {"coldstart", gsq::cli::register_coldstart(app)},
      {"fleet", gsq::cli::register_fleet(app)},
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return parse_error(app, e, argc, argv);
  }
  int rc = static_cast<int>(gsq::ExitCode::bad_input);
  try {
    for (const auto& [name, action] : actions)
      if (app.got_subcommand(name)) rc = action();
  } catch (const gsq::Error& e) {
    std::fprintf(stderr, "gpusqueeze: %s\n", e.what());
    rc = static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpusqueeze: internal error: %s\n", e.what());
    rc = static_cast<int>(gsq::ExitCode::internal);
  }
  // Errors that destructors could not throw (freeing a buffer after a failed launch, say) are said, not lost.
  if (const auto swallowed = gsq::cuda::swallowed_errors(); swallowed.count > 0)
    std::fprintf(stderr, "gpusqueeze: %llu CUDA error(s) while releasing resources; the first: %s\n",
                 static_cast<unsigned long long>(swallowed.count), swallowed.first.c_str());
  if (const auto costs = gsq::gpu::collection_costs(); !costs.empty()) {
    std::fprintf(stderr, "NVML collection cost (GSQ_NVML_PROFILE):\n%-28s %8s %12s %12s\n", "section", "calls",
                 "wall ms/call", "cpu ms/call");
    for (const auto& r : costs)
      std::fprintf(stderr, "%-28s %8llu %12.3f %12.3f\n", r.section.c_str(), static_cast<unsigned long long>(r.calls),
                   static_cast<double>(r.wall_ns) / 1e6 / static_cast<double>(r.calls),
                   static_cast<double>(r.cpu_ns) / 1e6 / static_cast<double>(r.calls));
  }
  return rc;
}
