// `gpusqueeze jitter`: samples every GPU's clocks, clock-event reasons, throttle counters, temperatures and power at
// 10 Hz while a workload runs (or for --seconds), keeps the samples as counter tracks of a .gsqt file (Perfetto shows
// them: trace export --chrome), and says how much of the time each reason held the clock down; or reads such a file,
// or a bench run's raw samples to see whether its P99 outliers are the throttled ones.
#include "cli/common.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "core/process.hpp"
#include "core/table.hpp"
#include "gpu/counters.hpp"
#include "gpu/nvml.hpp"
#include "report/report.hpp"
#include "trace/format.hpp"
#include "triage/jitter.hpp"

#include <fmt/format.h>
#include <signal.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

namespace gsq::cli {

namespace {

struct JitterCliOptions {
  std::string file, bench, output = "gsq-jitter.gsqt";
  std::vector<std::string> command;
  double seconds = 0;
  int pid = 0;
  int interval_ms = 100;
  int gpu = -1;
  bool json = false;
};

std::string opt(const std::optional<double>& v, const char* fmtstr) {
  return v ? fmt::format(fmt::runtime(fmtstr), *v) : "n/a";
}

void print_report(const triage::JitterReport& r) {
  std::cout << fmt::format("# Clock jitter: {}\n", r.origin);
  for (const auto& g : r.gpus) {
    std::cout << fmt::format("\n## GPU {} ({}): {:.1f} s, {} samples ({} busy)\n\n", g.device, g.name, g.duration_s,
                             g.samples, g.busy_samples);
    Table t{{"reading", "value"}, {}};
    t.rows.push_back(
        {"SM clock while busy (min / P5 / P50 / max)",
         fmt::format("{} / {} / {} / {} MHz", opt(g.sm_clock_min_mhz, "{:.0f}"), opt(g.sm_clock_p5_mhz, "{:.0f}"),
                     opt(g.sm_clock_p50_mhz, "{:.0f}"), opt(g.sm_clock_max_mhz, "{:.0f}"))});
    t.rows.push_back({"memory clock (min / max)", fmt::format("{} / {} MHz", opt(g.mem_clock_min_mhz, "{:.0f}"),
                                                              opt(g.mem_clock_max_mhz, "{:.0f}"))});
    t.rows.push_back(
        {"GPU temperature (start / end / max; slowdown at)",
         fmt::format("{} / {} / {} °C; {} °C", opt(g.temperature_start_c, "{:.0f}"), opt(g.temperature_end_c, "{:.0f}"),
                     opt(g.temperature_max_c, "{:.0f}"), opt(g.temperature_slowdown_c, "{:.0f}"))});
    t.rows.push_back({"temperature trend", opt(g.temperature_slope_c_per_min, "{:+.2f} °C/min")});
    t.rows.push_back(
        {"memory temperature (max; limit)", fmt::format("{} °C; {} °C", opt(g.memory_temperature_max_c, "{:.0f}"),
                                                        opt(g.memory_temperature_limit_c, "{:.0f}"))});
    t.rows.push_back(
        {"power (mean / max; limit)", fmt::format("{} / {} W; {} W", opt(g.power_mean_w, "{:.0f}"),
                                                  opt(g.power_max_w, "{:.0f}"), opt(g.power_limit_w, "{:.0f}"))});
    for (const auto& s : g.reasons)
      t.rows.push_back({"held by " + s.reason, fmt::format("{:.2f}% of the time ({})", 100 * s.fraction, s.source)});
    std::cout << t.markdown();
  }
  if (!r.findings.empty()) std::cout << "\n## Findings\n\n" << report::findings_table(r.findings).markdown();
}

// Samples every GPU (or one) while the command runs or for the given seconds, and writes the .gsqt file.
void record(const JitterCliOptions& o) {
  uint32_t count = 0;
  {
    const auto nvml = gpu::Nvml::open();
    if (nvml.api().nvmlDeviceGetCount_v2(&count) != NVML_SUCCESS || count == 0)
      throw_no_gpu("no NVIDIA GPU: NVML lists no device");
  }
  std::vector<std::unique_ptr<gpu::CounterSampler>> samplers;
  for (uint32_t i = 0; i < count; ++i)
    if (o.gpu < 0 || static_cast<uint32_t>(o.gpu) == i)
      samplers.push_back(std::make_unique<gpu::CounterSampler>(i, o.interval_ms));
  if (samplers.empty()) throw_bad_input(fmt::format("--gpu {}: this machine has {} GPUs", o.gpu, count));
  const int64_t start = gpu::monotonic_ns();
  const auto realtime = std::chrono::system_clock::now().time_since_epoch();
  int rc = 0;
  if (!o.command.empty()) {
    note(fmt::format("sampling {} GPU(s) every {} ms while {} runs…", samplers.size(), o.interval_ms,
                     o.command.front()));
    rc = run_attached(o.command);
    if (rc != 0) note(fmt::format("{} exited with {}", o.command.front(), rc));
  } else if (o.pid > 0) {
    // A process already running (a server): sample until it exits, or for --seconds if given.
    note(fmt::format("sampling {} GPU(s) every {} ms while process {} runs…", samplers.size(), o.interval_ms, o.pid));
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(o.seconds > 0 ? o.seconds : 1e9);
    while (kill(o.pid, 0) == 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } else {
    note(fmt::format("sampling {} GPU(s) every {} ms for {:.0f} s…", samplers.size(), o.interval_ms, o.seconds));
    std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  }
  std::string command;
  for (const auto& a : o.command) command += (command.empty() ? "" : " ") + a;
  std::vector<nlohmann::json> payloads;
  for (auto& s : samplers) payloads.push_back(s->finish());
  triage::write_jitter_trace(
      o.output, command.empty() ? fmt::format("gpusqueeze jitter --seconds {}", o.seconds) : command, start,
      std::chrono::duration_cast<std::chrono::nanoseconds>(realtime).count(), rc, payloads);
  note("wrote " + o.output + " (gpusqueeze trace export --chrome shows the tracks in Perfetto)");
}

int run_jitter(JitterCliOptions o) {
  if (!o.bench.empty()) {
    const auto run = read_json_file(o.bench, "gpusqueeze.bench/1");
    const auto b = triage::bench_outliers(run);
    if (o.json) {
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& c : b.rows)
        rows.push_back({{"config", c.config},
                        {"mode", c.mode},
                        {"samples", c.samples},
                        {"p99_ns", c.p99_ns},
                        {"outliers", c.outliers},
                        {"throttled_among_outliers", c.throttled_among_outliers},
                        {"throttled_overall", c.throttled_overall}});
      std::cout
          << nlohmann::json{{"schema", "gpusqueeze.jitter-bench/1"}, {"rows", rows}, {"findings", b.findings}}.dump(2)
          << '\n';
    } else {
      Table t{{"configuration", "mode", "samples", "P99", "throttled above P99", "throttled overall"}, {}};
      for (const auto& c : b.rows)
        t.rows.push_back({c.config, c.mode, std::to_string(c.samples), fmt::format("{:.0f} ns", c.p99_ns),
                          fmt::format("{:.1f}% of {}", 100 * c.throttled_among_outliers, c.outliers),
                          fmt::format("{:.1f}%", 100 * c.throttled_overall)});
      std::cout << "# Are the P99 outliers the throttled samples?\n\n" << t.markdown();
      if (b.rows.empty()) note("no measurement with 100 or more raw samples in " + o.bench + " (bench -o keeps them)");
      if (!b.findings.empty()) std::cout << "\n" << report::findings_table(b.findings).markdown();
    }
    return 0;
  }
  if (o.file.empty()) {
    record(o);
    o.file = o.output;
  }
  const auto t = trace::read_trace(o.file);
  const auto r = triage::analyze_jitter(t);
  if (r.gpus.empty()) throw_bad_input(o.file + ": no clock or temperature tracks (record them with gpusqueeze jitter)");
  if (o.json)
    std::cout << triage::to_json(r).dump(2) << '\n';
  else
    print_report(r);
  return worst(r.findings) == Severity::fail ? static_cast<int>(ExitCode::findings) : 0;
}

}  // namespace

Action register_jitter(CLI::App& app) {
  auto o = std::make_shared<JitterCliOptions>();
  auto* cmd = app.add_subcommand(
      "jitter", "Sample clocks, throttle reasons, temperatures and power while a workload runs: why P99 moves");
  cmd->footer(
      "Samples each GPU every --interval-ms (≥ 100) with NVML: SM and memory clocks, the clock-event reasons, NVML's\n"
      "cumulative throttle counters (ns held by power cap, SW/HW thermal slowdown, HW power brake, sync boost), GPU\n"
      "and memory temperature, power. Reports the fraction of time each reason held the clock (from the counters\n"
      "where the driver has them, else from the reasons seen at each sample), the busy clock's spread, the\n"
      "temperature trend and the margins to the slowdown temperature and the power limit. Thresholds are fractions\n"
      "of time (1% thermal, 5% power cap), never any non-zero count. Data-center GPUs have no 'Dynamic Boost' to\n"
      "set with nvidia-settings; locking clocks trades peak for steadiness: measure both with bench.\n"
      "Exit codes: 0 ok, 1 a fail-level finding (thermal or hardware slowdown), 2 bad input, 3 no GPU.\n"
      "Examples:\n"
      "  gpusqueeze jitter -- python serve.py --steps 2000     sample while it runs; writes gsq-jitter.gsqt\n"
      "  gpusqueeze jitter --seconds 60                        sample whatever runs now\n"
      "  gpusqueeze jitter --pid 4242                          sample until that server process exits\n"
      "  gpusqueeze jitter run.gsqt                            read a recording (jitter -o, trace --gpu-metrics)\n"
      "  gpusqueeze jitter --bench run.json                    are the P99 outliers the throttled samples?");
  cmd->add_option("file", o->file, "A .gsqt with counter tracks to read instead of sampling");
  cmd->add_option("--bench", o->bench, "A bench run (bench -o) whose raw samples to check");
  cmd->add_option("--seconds", o->seconds, "Sample for this long when no command is given")
      ->check(CLI::Range(0.5, 86400.0));
  cmd->add_option("--interval-ms", o->interval_ms, "Sampling interval")
      ->check(CLI::Range(100, 60000))
      ->capture_default_str();
  cmd->add_option("--pid", o->pid, "Sample while this running process lives (with --seconds: at most that long)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--gpu", o->gpu, "Only this GPU (NVML index); default: all");
  cmd->add_option("-o,--output", o->output, "Where to write the samples")->capture_default_str();
  cmd->add_flag("--json", o->json, "Print gpusqueeze.jitter/1 JSON");
  cmd->add_option("command", o->command, "The workload, after --")->allow_extra_args();
  return [o] {
    // CLI11 hands the first word after `--` to the `file` positional: a "file" that is no recording is the command's
    // first word (`jitter -- python serve.py` must sample python, not read a file called python).
    if (!o->file.empty() && (!o->command.empty() || !std::filesystem::is_regular_file(o->file)) &&
        !o->file.ends_with(".gsqt")) {
      o->command.insert(o->command.begin(), o->file);
      o->file.clear();
    }
    const int given = !o->file.empty() + !o->bench.empty() + !o->command.empty() + (o->pid > 0) +
                      (o->seconds > 0 && o->pid == 0 && o->command.empty());
    if (given != 1)
      throw_bad_input(
          "jitter: give one of FILE, --bench RUN.json, --pid PID, --seconds N or -- COMMAND (see jitter --help)");
    if (o->pid > 0 && kill(o->pid, 0) != 0) throw_bad_input(fmt::format("--pid {}: no such process", o->pid));
    return run_jitter(*o);
  };
}

}  // namespace gsq::cli
