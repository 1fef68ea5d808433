// The user's program run for `report -- CMD`: baseline, traced, memory (see run.hpp).
#include "program/run.hpp"

#include "analyze/gsqt.hpp"
#include "core/error.hpp"
#include "gpu/counters.hpp"
#include "trace/launcher.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>

namespace gsq::program {

namespace fs = std::filesystem;

namespace {

std::string one_line(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    const bool plain = !a.empty() && a.find_first_of(" \t\"'\\$`*?;&|<>()") == std::string::npos;
    s += (s.empty() ? "" : " ") + (plain ? a : "'" + a + "'");
  }
  return s;
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool looks_like_python(const ProgramOptions& o, const RunOutcome& first) {
  const std::string exe = fs::path(o.command.front()).filename().string();
  return exe.starts_with("python") || exe.starts_with("torchrun") || exe.ends_with(".py") || exe == "accelerate" ||
         exe == "deepspeed" || first.python;
}

struct Phase {
  std::string name;
  bool markers_only = true;
  fs::path output;
  std::vector<std::string> env;
  double timeout_s = 0;
};

RunOutcome run_phase(const ProgramOptions& o, const Phase& p, const std::function<void(const std::string&)>& note) {
  trace::LaunchOptions l;
  l.command = o.command;
  l.output = p.output;
  l.markers_only = p.markers_only;
  l.env = p.env;
  l.timeout_s = p.timeout_s;
  l.library = o.tracer_library;
  l.python_shim = true;  // DataLoader ranges in every run; the allocator's history in the memory run
  std::vector<int64_t> stamps;
  std::optional<std::regex> line_re;
  if (!o.step_regex.empty()) {
    // A line's time is when it reaches us: Python must write each line as it prints it, not when its buffer fills.
    l.env.push_back("PYTHONUNBUFFERED=1");
    line_re.emplace(o.step_regex);
    l.on_line = [&](std::string_view line, int64_t t) {
      if (std::regex_search(line.begin(), line.end(), *line_re)) stamps.push_back(t);
    };
  }
  const auto r = trace::launch(l, [&](const std::string& s) { note(p.name + ": " + s); });
  RunOutcome out;
  static_cast<trace::LaunchResult&>(out) = r;
  out.phase = p.name;
  // Each file read once: whether a traced process was Python (for the memory run), and the steps of its ranges.
  std::vector<trace::TraceFile> files;
  for (const auto& f : r.files) {
    try {
      files.push_back(trace::read_trace(f));
      const auto& h = files.back().header;
      out.python = out.python || (h.is_object() && h.value("command", "").find("python") != std::string::npos);
    } catch (const Error& e) {
      note(fmt::format("{}: {} not read: {}", p.name, f.filename().string(), e.what()));
    }
  }
  if (line_re)
    out.steps = steps_from_lines(stamps, o.step_regex);
  else
    out.steps = steps_from_ranges(files, o.step_range.empty() ? std::vector<std::string>(std::begin(kDefaultStepRanges),
                                                                                         std::end(kDefaultStepRanges))
                                                              : std::vector<std::string>{o.step_range});
  return out;
}

std::string ended(const RunOutcome& r) {
  return fmt::format("{} after {:.1f} s, {} steps", r.how_it_ended(), r.wall_s, r.steps.ns.size());
}

}  // namespace

std::string RunOutcome::how_it_ended() const {
  return timed_out             ? "stopped at the budget"
         : !exec_error.empty() ? exec_error
         : term_signal         ? fmt::format("killed by signal {}", term_signal)
                               : fmt::format("exit {}", exit_code);
}

bool ProgramResult::program_failed() const {
  return interrupted_by == 0 &&
         std::any_of(runs.begin(), runs.end(), [](const RunOutcome& r) { return r.failed() && !r.timed_out; });
}

ProgramResult run_program(const ProgramOptions& o, const std::function<void(const std::string&)>& note) {
  if (o.command.empty())
    throw_bad_input("report --: give the program to run after --, e.g. report -- python3 train.py");
  if (o.runs < 1 || o.runs > 100) throw_bad_input(fmt::format("--runs must be 1 to 100, not {}", o.runs));
  try {
    if (!o.step_range.empty()) (void)std::regex(o.step_range);
    if (!o.step_regex.empty()) (void)std::regex(o.step_regex);
  } catch (const std::regex_error& e) {
    throw_bad_input(fmt::format("--step-range/--step-regex: not a regular expression: {}", e.what()));
  }
  const auto t0 = std::chrono::steady_clock::now();
  ProgramResult res;
  res.command = one_line(o.command);
  const fs::path dir = o.dir / "program";
  fs::create_directories(dir);
  const auto left = [&] { return o.budget_s - since(t0); };

  // 1. Baseline: NVTX ranges only, the GPU sampled throughout.
  std::unique_ptr<gpu::CounterSampler> sampler;
  if (o.sample_ms > 0) {
    try {
      sampler = std::make_unique<gpu::CounterSampler>(o.gpu, o.sample_ms);
    } catch (const Error& e) {
      res.notes.push_back(std::string("clocks and power not sampled: ") + e.what());
    }
  }
  std::vector<std::vector<double>> baseline_steps;
  for (int i = 1; i <= o.runs; ++i) {
    if (i > 1 && left() < 1.2 * res.runs.front().wall_s) {
      res.notes.push_back(
          fmt::format("baseline runs {}-{} skipped: each takes about {:.0f} s and {:.0f} s of the "
                      "budget are left (--budget)",
                      i, o.runs, res.runs.front().wall_s, std::max(0.0, left())));
      break;
    }
    note(fmt::format("baseline run {}/{} (NVTX ranges only): {}", i, o.runs, res.command));
    auto r =
        run_phase(o, {"baseline", true, dir / fmt::format("baseline-{}.gsqt", i), {}, std::max(1.0, left())}, note);
    if (!r.exec_error.empty()) throw_bad_input(r.exec_error);  // the program is not there: nothing more to run
    note(fmt::format("baseline run {}/{}: {}", i, o.runs, ended(r)));
    res.runs.push_back(std::move(r));
    if ((res.interrupted_by = res.runs.back().interrupted_by) != 0) {  // the user stopped it: stop here
      res.elapsed_s = since(t0);
      return res;
    }
    if (res.runs.back().failed() && !res.runs.back().timed_out) break;  // the same program will fail again
  }
  if (sampler) {
    const nlohmann::json counters = sampler->finish();
    const auto& first = res.runs.front();
    if (!first.files.empty()) {
      try {
        trace::append_counters(first.files.front(), counters);
        res.clocks = first.files.front();
      } catch (const Error& e) {
        res.notes.push_back(std::string("clocks not kept: ") + e.what());
      }
    } else {
      res.notes.push_back("clocks not kept: the program wrote no trace file (it made no CUDA call)");
    }
  }
  const RunOutcome first = res.runs.front();  // a copy: later runs are appended to res.runs
  const bool have_steps =
      std::all_of(res.runs.begin(), res.runs.end(), [](const RunOutcome& r) { return r.steps.ns.size() >= 1; });
  if (have_steps) {
    res.source = first.steps.source;
    res.how = first.steps.how;
    for (const auto& r : res.runs) baseline_steps.push_back(r.steps.ns);
  } else {
    res.source = StepSource::process;
    res.how = fmt::format(
        "whole runs, start to exit ({}; mark steps with NVTX ranges named ProfilerStep#N, or pass --step-range or "
        "--step-regex)",
        first.steps.how);
    for (const auto& r : res.runs)  // a run stopped at the budget has no whole-run time
      if (!r.failed() && !r.timed_out) baseline_steps.push_back({r.wall_s * 1e9});
  }
  res.steps = summarize_steps(baseline_steps);
  if (res.program_failed()) {
    res.notes.push_back(fmt::format("the program failed ({}); nothing more was run", ended(res.runs.back())));
    res.elapsed_s = since(t0);
    return res;
  }
  double longest = 0;
  for (const auto& r : res.runs) longest = std::max(longest, r.wall_s);

  // 2. Traced and analysed, calibrated to the baseline.
  if (o.trace) {
    if (left() < 1.5 * longest) {
      res.notes.push_back(fmt::format(
          "traced run skipped: a baseline run took {:.0f} s, a traced one takes longer, and {:.0f} s of the budget are "
          "left (--budget)",
          longest, std::max(0.0, left())));
    } else {
      note("traced run (gpusqueeze trace): " + res.command);
      auto r = run_phase(o, {"traced", false, dir / "traced.gsqt", {}, left()}, note);
      note("traced run: " + ended(r));
      if ((res.interrupted_by = r.interrupted_by) != 0) {
        res.runs.push_back(std::move(r));
        res.elapsed_s = since(t0);
        return res;
      }
      if (r.traced && !r.files.empty()) {
        res.trace_file = r.files.front();
        // The same steps timed the same way in both runs, warm-up split off alike: their ratio is the recorder's.
        const auto traced = summarize_steps({r.steps.ns});
        res.traced_p50_ns = traced.ok() ? traced.steady.p50 : 0.0;
        if (res.source != StepSource::process && res.traced_p50_ns > 0 && res.steps.ok())
          res.factor = res.steps.steady.p50 / res.traced_p50_ns;
        try {
          const auto trace = analyze::load_trace(*res.trace_file);
          auto a = analyze::analyze(trace);
          const auto recorded = a.critical_path.recorded_step_p50_ns;
          if (res.factor > 0 && recorded > 0) {
            res.untraced_step_ns = static_cast<int64_t>(static_cast<double>(recorded) * res.factor);
            analyze::Thresholds th;
            th.untraced_step_ns = res.untraced_step_ns;
            a = analyze::analyze(trace, th);
          } else {
            res.notes.push_back(
                "the analysis takes the recorder's cost out by the corpus default, not by this program's own untraced "
                "steps (" +
                std::string(res.source == StepSource::process ? "the baseline has no steps"
                                                              : "the traced run's steps were not found") +
                ")");
          }
          std::string all;
          for (const auto& f : analyze::kNamedFixes) all += (all.empty() ? "" : ",") + std::string(f.name);
          res.what_if = analyze::what_if(trace, analyze::parse_fixes(all), a.replay_graph);
          a.origin = "report -- " + res.command;
          res.analysis = std::move(a);
        } catch (const Error& e) {
          res.notes.push_back(std::string("the traced run was not analysed: ") + e.what());
        }
      } else {
        res.notes.push_back("the traced run wrote no trace: " +
                            (r.untraced_reason.empty() ? ended(r) : r.untraced_reason));
      }
      res.runs.push_back(std::move(r));
    }
  }

  // 3. The allocator's history of a PyTorch program.
  if (o.memory && res.program_failed()) {
    res.notes.push_back("memory run skipped: the program failed in its traced run");
  } else if (o.memory && looks_like_python(o, first)) {
    if (left() < 1.5 * longest) {
      res.notes.push_back(
          fmt::format("memory run skipped: a baseline run took {:.0f} s and {:.0f} s of the budget are left (--budget)",
                      longest, std::max(0.0, left())));
    } else {
      const fs::path snaps = dir / "memory";
      fs::create_directories(snaps);
      for (const auto& e : fs::directory_iterator(snaps))
        if (e.path().extension() == ".pickle") fs::remove(e.path());
      note("memory run (allocator history through the Python shim): " + res.command);
      auto r = run_phase(
          o, {"memory", true, dir / "memory.gsqt", {"GSQ_MEMORY_SNAPSHOT_DIR=" + fs::absolute(snaps).string()}, left()},
          note);
      note("memory run: " + ended(r));
      res.interrupted_by = r.interrupted_by;
      for (const auto& e : fs::directory_iterator(snaps))
        if (e.path().extension() == ".pickle") res.memory_snapshots.push_back(e.path());
      std::sort(res.memory_snapshots.begin(), res.memory_snapshots.end());
      if (res.memory_snapshots.empty())
        res.notes.push_back(
            "the memory run wrote no allocator snapshot (no process used CUDA through PyTorch, a PyTorch older than "
            "2.1, or the program ended through os._exit)");
      res.runs.push_back(std::move(r));
    }
  }
  res.elapsed_s = since(t0);
  return res;
}

nlohmann::json to_json(const ProgramResult& r) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& x : r.runs) {
    nlohmann::json files = nlohmann::json::array();
    for (const auto& f : x.files) files.push_back(f.filename().string());
    runs.push_back({{"phase", x.phase},
                    {"exit_code", x.exit_code},
                    {"signal", x.term_signal},
                    {"wall_s", x.wall_s},
                    {"timed_out", x.timed_out},
                    {"traced", x.traced},
                    {"untraced_reason", x.untraced_reason},
                    {"exec_error", x.exec_error},
                    {"files", files},
                    {"steps", x.steps.ns.size()},
                    {"step_p50_ns", summarize_steps({x.steps.ns}).steady.p50},  // as the page's runs table
                    {"steps_how", x.steps.how}});
  }
  nlohmann::json j = {{"command", r.command},
                      {"runs", runs},
                      {"source", to_string(r.source)},
                      {"how", r.how},
                      {"steps", to_json(r.steps)},
                      {"traced_step_p50_ns", r.traced_p50_ns},
                      {"untraced_over_traced", r.factor},
                      {"untraced_step_ns_told", r.untraced_step_ns},
                      {"notes", r.notes},
                      {"elapsed_s", r.elapsed_s},
                      {"program_failed", r.program_failed()}};
  nlohmann::json snaps = nlohmann::json::array();
  for (const auto& f : r.memory_snapshots) snaps.push_back(f.filename().string());
  j["memory_snapshots"] = snaps;
  if (r.analysis) j["analysis"] = analyze::to_json(*r.analysis);
  if (r.what_if) j["what_if"] = analyze::to_json(*r.what_if);
  return j;
}

}  // namespace gsq::program
