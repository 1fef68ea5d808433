// `gpusqueeze exporter` and `gpusqueeze rules generate`.
#include "cli/common.hpp"

#include "bench/runner.hpp"
#include "core/error.hpp"
#include "core/json_io.hpp"
#include "core/stats.hpp"
#include "monitor/exporter.hpp"
#include "monitor/rules.hpp"
#include "monitor/tune_metrics.hpp"
#include "monitor/watch.hpp"
#include "tune/engine.hpp"

#include <fmt/format.h>

#include <signal.h>

#include <cerrno>
#include <filesystem>
#include <iostream>
#include <optional>
#include <regex>

namespace gsq::cli {

namespace {
struct ExporterCliOptions {
  monitor::ExporterOptions server;
  std::string listen = "127.0.0.1:9835";
  std::string snapshot_file;
  bool once = false;
  monitor::WatchOptions watch;
  std::string tune_profile;
};

// Adds the tune profile's verify result to every collection (NVML opened once for it; the profile read each time, so
// an edited profile is seen without a restart).
monitor::Collector with_tune(monitor::Collector inner, const std::string& profile) {
  std::string missing;
  const std::shared_ptr<tune::GpuControl> gpu = tune::open_nvml_control(missing);
  return [inner, profile, gpu, missing]() {
    auto c = inner();
    tune::Machine m;
    m.gpu = gpu.get();
    m.gpu_missing = missing;
    const auto host = c.snapshot.host.hostname.value.value_or("");
    try {
      c.extra += monitor::render_tune_metrics(host, profile, tune::verify(tune::read_profile(profile), m));
    } catch (const Error& e) {
      c.extra += monitor::render_tune_metrics(host, profile, {}, e.what());
    }
    return c;
  };
}

// A recorded snapshot served as it is. An optional top-level "replay_counters" array (one object per GPU: energy_mj,
// xid_events, last_xid, and xid_events_per_collection: XIDs added at every collection, so that a replayed GPU has
// XIDs within any window) adds what only a running exporter counts, for fleet tests and demos.
monitor::Collector replay_collector(const std::string& file) {
  const auto j = read_json_file(file, gpu::kSnapshotSchema);
  auto snap = std::make_shared<gpu::Snapshot>(gpu::snapshot_from_json(j, file));
  auto counters = std::make_shared<std::vector<gpu::Counters>>();
  auto xid_steps = std::make_shared<std::vector<uint64_t>>();
  if (auto it = j.find("replay_counters"); it != j.end()) {
    if (!it->is_array()) throw_bad_input(file + ": replay_counters: expected an array, one object per GPU");
    for (const auto& c : *it) {
      if (!c.is_object()) throw_bad_input(file + ": replay_counters: expected an object per GPU");
      gpu::Counters k;
      auto read = [&](const char* key, Field<uint64_t>& f) {
        if (auto v = c.find(key); v != c.end()) {
          if (!v->is_number_unsigned())
            throw_bad_input(fmt::format("{}: replay_counters.{}: expected a count", file, key));
          f = Field<uint64_t>(v->get<uint64_t>());
        }
      };
      read("energy_mj", k.energy_mj);
      read("xid_events", k.xid_events);
      read("last_xid", k.last_xid);
      Field<uint64_t> step;
      read("xid_events_per_collection", step);
      if (step.ok() && !k.xid_events.ok()) k.xid_events = Field<uint64_t>(0);
      xid_steps->push_back(step.ok() ? *step : 0);
      counters->push_back(std::move(k));
    }
  }
  return [snap, counters, xid_steps]() {  // one collecting thread: no lock needed
    for (size_t i = 0; i < counters->size(); ++i)
      if ((*xid_steps)[i] > 0)
        (*counters)[i].xid_events = Field<uint64_t>(*(*counters)[i].xid_events + (*xid_steps)[i]);
    return monitor::Collection{*snap, *counters, {}};
  };
}
}  // namespace

Action register_exporter(CLI::App& app) {
  auto o = std::make_shared<ExporterCliOptions>();
  auto* cmd = app.add_subcommand("exporter", "Serve Prometheus metrics from NVML: /metrics and /health (step 7)");
  cmd->footer(
      "Collects every --interval seconds on a thread of its own; scrapes read the latest collection. Metrics: "
      "utilisation,\n"
      "memory, clocks, one series per clock-event reason, temperature and slowdown margin, power, energy, PCIe link,\n"
      "throughput and replays, ECC, remapped rows, NVLink errors, XID events, per-process memory, GPM on Hopper+ (SM\n"
      "activity and occupancy, DRAM bandwidth, tensor/FP pipes: NVML utilization only says *a* kernel ran, SM "
      "activity\n"
      "says how much of the GPU it used), and the exporter's own health (gsq_exporter_*). What the GPU cannot report\n"
      "is absent, never a sentinel. Binds 127.0.0.1 unless --listen says otherwise. A connection reaches one of the\n"
      "--threads workers only once its request headers are in (one epoll thread watches the rest), so clients that\n"
      "trickle their headers never hold a worker; a connection that takes longer than --request-deadline to send its\n"
      "headers, or to send its request and get the answer once a worker has it, is shut down\n"
      "(gsq_exporter_connections_cut_total counts them). Deploy:\n"
      "deploy/systemd/gpusqueeze-exporter.service, deploy/kubernetes/gpusqueeze-exporter.yaml.\n"
      "Examples:\n"
      "  gpusqueeze exporter                                  (http://127.0.0.1:9835/metrics)\n"
      "  gpusqueeze exporter --listen 0.0.0.0:9835 --interval 10\n"
      "  gpusqueeze exporter --watch-pid 4242 --watch-for 60 --capture-seconds 10\n"
      "                      (4242 runs under `gpusqueeze trace --on-demand`: findings land beside its trace)\n"
      "  gpusqueeze exporter --once | promtool check metrics  (one collection on stdout)");
  cmd->add_option("--listen", o->listen, "HOST:PORT to serve on (port 0: any free port, printed when it starts)")
      ->capture_default_str();
  cmd->add_option("--interval", o->server.interval_s, "Seconds between NVML collections")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  cmd->add_option("--threads", o->server.threads, "Requests served at once")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--timeout", o->server.timeout_s, "Read/write timeout per connection, seconds")
      ->check(CLI::Range(1.0, 300.0))
      ->capture_default_str();
  cmd->add_option("--request-deadline", o->server.request_deadline_s,
                  "Seconds a connection may take to send a request and get its answer; slower ones are cut")
      ->check(CLI::Range(0.5, 300.0))
      ->capture_default_str();
  cmd->add_flag("--once", o->once, "Print one collection in the exposition format and exit");
  cmd->add_option("--snapshot", o->snapshot_file, "Serve a recorded snapshot instead of the live GPUs")
      ->check(CLI::ExistingFile);
  auto* watch_pid = cmd->add_option("--watch-pid", o->watch.pid,
                                    "Watch this process (started with `gpusqueeze trace --on-demand`): when its GPUs "
                                    "stay under-used, capture and analyse a trace window")
                        ->check(CLI::PositiveNumber)
                        ->group("Watcher");
  cmd->add_option("--watch-below", o->watch.below,
                  "Under-used: SM activity (GPM; NVML utilization on older GPUs) below this fraction")
      ->check(CLI::Range(0.01, 1.0))
      ->capture_default_str()
      ->group("Watcher")
      ->needs(watch_pid);
  cmd->add_option("--watch-for", o->watch.for_s, "... for this many seconds")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str()
      ->group("Watcher")
      ->needs(watch_pid);
  cmd->add_option("--capture-seconds", o->watch.capture_s, "Length of the captured window")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str()
      ->group("Watcher")
      ->needs(watch_pid);
  cmd->add_option("--capture-cooldown", o->watch.cooldown_s, "Seconds after a capture before the next one")
      ->check(CLI::Range(0.0, 604800.0))
      ->capture_default_str()
      ->group("Watcher")
      ->needs(watch_pid);
  cmd->add_option("--tune-profile", o->tune_profile,
                  "export gsq_tune_verified and gsq_tune_drift{setting} for this tune profile (default: "
                  "/etc/gpusqueeze/tune.toml when it exists; `none` turns it off)");
  cmd->add_option("--control-dir", o->watch.control_dir, "Where the traced process's control file lives")
      ->capture_default_str()
      ->group("Watcher")
      ->needs(watch_pid);
  return [o]() {
    o->server.version = GSQ_VERSION;
    const auto colon = o->listen.rfind(':');
    if (colon == std::string::npos || colon == 0) throw_bad_input("--listen wants HOST:PORT, not " + o->listen);
    o->server.host = o->listen.substr(0, colon);
    try {
      o->server.port = std::stoi(o->listen.substr(colon + 1));
    } catch (...) {
      throw_bad_input("--listen: bad port in " + o->listen);
    }
    if (o->server.port < 0 || o->server.port > 65535) throw_bad_input("--listen: port out of range in " + o->listen);
    if (!o->once) (void)monitor::block_stop_signals();  // before NVML starts threads of its own
    monitor::Collector collect = o->snapshot_file.empty()
                                     ? monitor::live_collector([](const std::string& m) { note(m); })
                                     : replay_collector(o->snapshot_file);
    if (o->tune_profile.empty() && std::filesystem::exists(tune::Machine{}.installed_profile()))
      o->tune_profile = tune::Machine{}.installed_profile().string();
    if (!o->tune_profile.empty() && o->tune_profile != "none") {
      collect = with_tune(collect, o->tune_profile);
      note("exporting gsq_tune_verified / gsq_tune_drift for " + o->tune_profile);
    }
    if (o->once && o->watch.pid > 0) throw_bad_input("--watch-pid needs the daemon, not --once");
    if (o->once) {
      const auto c = collect();
      monitor::SelfStats s;
      s.version = o->server.version;
      s.collections = 1;
      std::cout << monitor::render_metrics(c.snapshot, c.counters, s) << c.extra;
      return 0;
    }
    std::optional<monitor::Watcher> watcher;
    if (o->watch.pid > 0) {
      if (::kill(o->watch.pid, 0) != 0 && errno == ESRCH)
        throw_bad_input(fmt::format("--watch-pid {}: no such process", o->watch.pid));
      watcher.emplace(o->watch);
      note(fmt::format("watching pid {}: capture {:.0f} s when busy < {:.0f}% for {:.0f} s (cooldown {:.0f} s)",
                       o->watch.pid, o->watch.capture_s, o->watch.below * 100, o->watch.for_s, o->watch.cooldown_s));
    }
    monitor::serve(
        o->server, collect, [](const std::string& m) { note(m); }, watcher ? &*watcher : nullptr);
    return 0;
  };
}

namespace {
struct RulesCliOptions {
  monitor::RulesOptions rules;
  std::string baseline_file, benchmark, output;
};

// The P99 (seconds) of one benchmark's first timing mode in a gpusqueeze.bench/1 run.
double p99_from_run(const std::string& file, const std::string& pattern, std::string& origin) {
  const bench::Run run = bench::load_run(file);
  const std::regex re(pattern.empty() ? ".*" : pattern);
  std::vector<const bench::Result*> hits;
  for (const auto& r : run.results)
    if (std::regex_search(bench::config_label(r), re) && !r.measurements.empty()) hits.push_back(&r);
  if (hits.size() != 1)
    throw_bad_input(
        fmt::format("{}: {} benchmarks match '{}'; pick one with --benchmark REGEX", file, hits.size(), pattern));
  const auto k = hits[0]->measurements[0].kept();
  if (k.empty()) throw_bad_input(file + ": the benchmark has no samples");
  origin = fmt::format("{} ({} {}, P99)", file, bench::config_label(*hits[0]), hits[0]->measurements[0].mode);
  return stats::percentile(k, 0.99) * 1e-9;
}
}  // namespace

Action register_rules(CLI::App& app) {
  auto o = std::make_shared<RulesCliOptions>();
  auto* cmd = app.add_subcommand("rules", "Prometheus alert rules for the exporter's metrics (step 7)");
  auto* gen = cmd->add_subcommand("generate", "Write a rule file: latency vs baseline, GPU, hardware, exporter");
  cmd->require_subcommand(1);
  gen->footer(
      "The baseline is the application's P99 latency: --baseline-p99 SECONDS, or --baseline FILE with a\n"
      "gpusqueeze.bench/1 run (--benchmark REGEX picks the configuration). The latency rule reads the app's histogram\n"
      "(--histogram NAME, Prometheus base name). Rules and their tests: deploy/prometheus/ (promtool test rules).\n"
      "Examples:\n"
      "  gpusqueeze rules generate --baseline-p99 0.050 -o gpusqueeze-rules.yml\n"
      "  gpusqueeze rules generate --baseline base.json --benchmark 'gemm.*8192' --histogram infer_latency_seconds");
  auto* p99 = gen->add_option("--baseline-p99", o->rules.baseline_p99_s, "Baseline P99 latency, seconds")
                  ->check(CLI::PositiveNumber);
  gen->add_option("--baseline", o->baseline_file, "A gpusqueeze.bench/1 run to take the P99 from")
      ->check(CLI::ExistingFile)
      ->excludes(p99);
  gen->add_option("--benchmark", o->benchmark, "Regex selecting one configuration of --baseline");
  gen->add_option("--histogram", o->rules.latency_histogram, "The app's latency histogram")->capture_default_str();
  gen->add_option("--factor", o->rules.latency_factor, "Alert above this × the baseline P99")
      ->check(CLI::Range(1.0001, 100.0))
      ->capture_default_str();
  gen->add_option("--job", o->rules.job, "Prometheus job of the exporters")->capture_default_str();
  gen->add_option("-o,--output", o->output, "Write to FILE instead of stdout");
  return [o]() {
    if (!o->baseline_file.empty())
      o->rules.baseline_p99_s = p99_from_run(o->baseline_file, o->benchmark, o->rules.baseline_origin);
    else if (o->rules.baseline_p99_s > 0)
      o->rules.baseline_origin = fmt::format("--baseline-p99 {:g}", o->rules.baseline_p99_s);
    else
      throw_bad_input("give the baseline: --baseline-p99 SECONDS or --baseline run.json");
    const std::string text = monitor::generate_rules(o->rules);
    if (o->output.empty()) {
      std::cout << text;
    } else {
      write_text_file(o->output, text);
      note("wrote " + o->output + "; check it with: promtool check rules " + o->output);
    }
    return 0;
  };
}

}  // namespace gsq::cli
