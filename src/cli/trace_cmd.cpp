// `gpusqueeze trace -- CMD`, `trace info FILE`, `trace export --chrome FILE`.
#include "cli/common.hpp"

#include "analyze/analysis.hpp"
#include "core/error.hpp"
#include "gpu/counters.hpp"
#include "monitor/watch.hpp"
#include "trace/format.hpp"
#include "trace/launcher.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>

#include <cstdlib>
#include <fstream>
#include <iostream>

namespace gsq::cli {

namespace {

// The NVML index of the first GPU the traced program sees: CUDA_VISIBLE_DEVICES's first entry where it is an index,
// else 0 (a UUID or MIG entry: the machine's GPUs are taken to be of one kind).
uint32_t visible_gpu() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  if (v == nullptr || *v < '0' || *v > '9') return 0;
  return static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
}
struct TraceOptions {
  trace::LaunchOptions launch;
  bool json = false;
  std::string info_file, export_in, export_out;
  bool chrome = true;
  int gpu_metrics_ms = 0;
  bool no_python_shim = false;
  uint32_t gpu_metrics_device = 0;
};

std::string human_summary(const trace::TraceFile& f) {
  const auto s = trace::summarize(f);
  std::string line = fmt::format(
      "{}: {} kernels ({} from CUDA graphs), {} copies ({} pageable, {} pinned, {:.1f} MB), {} memsets, {} syncs, "
      "{} CUDA calls, {} NVTX ranges over {:.3f} s",
      f.path.string(), s.kernels, s.graph_kernels, s.memcpys, s.pageable_copies, s.pinned_copies,
      static_cast<double>(s.copy_bytes) / 1e6, s.memsets, s.syncs, s.api_calls, s.ranges,
      static_cast<double>(s.span_ns) / 1e9);
  const uint64_t dropped =
      f.stats.value("cupti_dropped_records", uint64_t{0}) + f.stats.value("cpu_dropped_records", uint64_t{0});
  if (dropped) line += fmt::format("; {} records DROPPED (raise --buffer-mb)", dropped);
  if (!f.devices.empty() && f.devices.front().contains("name") && f.devices.front()["name"].is_string())
    line += "; GPU " + f.devices.front()["name"].get<std::string>();
  if (!f.counters.empty())
    line += fmt::format("; {} counter tracks ({}, {} samples each)", f.counters.size(), f.counters.front().source,
                        f.counters.front().values.size());
  if (f.stats.contains("cupti_overhead_ns"))
    line += fmt::format("; CUPTI overhead {:.2f} ms", f.stats.value("cupti_overhead_ns", 0.0) / 1e6);
  if (!f.complete)
    line += "; INCOMPLETE (the process did not exit normally" +
            (f.truncation.empty() ? std::string(")") : ": " + f.truncation + ")");
  return line;
}

[[noreturn]] void die_like(int sig) {
  // Pass the child's fatal signal on, without a second core dump from us.
  rlimit none{0, 0};
  setrlimit(RLIMIT_CORE, &none);
  signal(sig, SIG_DFL);
  raise(sig);
  std::_Exit(128 + sig);
}
}  // namespace

Action register_trace(CLI::App& app) {
  auto o = std::make_shared<TraceOptions>();
  auto* cmd = app.add_subcommand(
      "trace", "Run a program with the CUPTI tracer injected; write a trace that `analyze` reads (step 2)");
  cmd->footer(
      "Runs CMD unchanged with libgsqtrace.so loaded through CUDA_INJECTION64_PATH (C++ CUDA programs, PyTorch, any\n"
      "CUDA process). Records kernels, copies, memsets, syncs, the CPU side of CUDA calls and NVTX ranges, with\n"
      "CUPTI's dropped-record and overhead counts. The child's exit code (or signal) is passed through.\n"
      "Each further traced process (torchrun workers, subprocesses) writes STEM.pidPID[.rankR].gsqt beside -o.\n"
      "If another CUPTI tool is attached (Nsight, torch.profiler started first) the program runs untraced and\n"
      "the file says why; --strict refuses instead (exit 2). Do not combine with torch.profiler in the program:\n"
      "one process has one CUPTI subscriber, and the one that starts first wins.\n"
      "A Python program gets a sitecustomize shim first on PYTHONPATH (the environment's own still runs after it): "
      "each\n"
      "PyTorch DataLoader next() and optimizer step becomes the NVTX range torch.profiler would record.\n"
      "--no-python-shim turns it off.\n"
      "Examples:\n"
      "  gpusqueeze trace -o run.gsqt -- python infer.py --batch 8\n"
      "  gpusqueeze trace --delay 30 --duration 10 -o steady.gsqt -- ./server\n"
      "  gpusqueeze trace --on-demand -o srv.gsqt -- python serve.py   then: gpusqueeze capture PID --seconds 5\n"
      "  gpusqueeze analyze run.gsqt\n"
      "  gpusqueeze trace export --chrome run.gsqt -o run.json     (open in ui.perfetto.dev)");
  auto& l = o->launch;
  cmd->add_option("-o,--output", l.output, "Trace file to write")->capture_default_str();
  cmd->add_option("--delay", l.delay_s, "Seconds after CUDA starts before recording begins")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--duration", l.duration_s, "Seconds to record, then stop (0 = until the program exits)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--strict", l.strict, "Refuse to run untraced when another CUPTI tool is attached (exit 2)");
  cmd->add_flag("--on-demand", l.on_demand,
                "Record nothing until `gpusqueeze capture PID --seconds N` asks (the idle tracer polls one file "
                "every 200 ms)");
  cmd->add_option("--cpu-api", l.cpu_api,
                  "CPU side of CUDA calls: callbacks (selected calls, cheapest), activity (CUPTI RUNTIME/DRIVER "
                  "records of every call), none")
      ->check(CLI::IsMember({"callbacks", "activity", "none"}))
      ->capture_default_str();
  cmd->add_option("--kernel-timestamps", l.kernel_timestamps,
                  "auto: from the GPU's Hardware Event System where CUPTI offers it (Blackwell; no per-launch "
                  "instrumentation), else CUPTI's software timestamps; software: always the latter")
      ->check(CLI::IsMember({"auto", "software"}))
      ->capture_default_str();
  cmd->add_option("--gpu-metrics", o->gpu_metrics_ms,
                  "Also sample the GPU every MS milliseconds (≥ 100; 0 = off): NVML GPM on Hopper+ (SM activity and "
                  "occupancy, DRAM bandwidth, tensor/FP activity, PCIe/NVLink), SM clock, power, temperature, "
                  "clock-event reasons; appended to each trace as counter tracks")
      ->check(CLI::Range(0, 60000))
      ->capture_default_str();
  cmd->add_option("--gpu-metrics-device", o->gpu_metrics_device, "NVML index of the GPU --gpu-metrics samples")
      ->capture_default_str();
  cmd->add_option("--buffer-mb", l.buffer_mb,
                  "Memory cap for records in flight; past it records are dropped "
                  "and counted")
      ->check(CLI::Range(16, 65536))
      ->capture_default_str();
  cmd->add_option("--library", l.library, "Tracer library to inject (default: lib/libgsqtrace.so beside gpusqueeze)");
  cmd->add_flag("--no-python-shim", o->no_python_shim,
                "Leave PYTHONPATH alone: no sitecustomize shim marking each PyTorch DataLoader next() and optimizer "
                "step as NVTX ranges (those torch.profiler records, so `analyze` sees the loop waiting for input)");
  cmd->add_flag("--json", o->json, "Print a gpusqueeze.trace-info/1 summary of each file written");
  cmd->add_option("command", l.command, "The program and its arguments, after --");

  auto* info = cmd->add_subcommand("info", "Summarise a trace file: counts, dropped records, overhead, status");
  info->footer("Example: gpusqueeze trace info run.gsqt --json");
  info->add_option("file", o->info_file, "Trace file (.gsqt)")->required()->check(CLI::ExistingFile);
  info->add_flag("--json", o->json, "Print gpusqueeze.trace-info/1 JSON");

  auto* exp = cmd->add_subcommand("export", "Convert a trace to Chrome trace-event JSON (ui.perfetto.dev)");
  exp->add_flag("--chrome", o->chrome, "Chrome/Perfetto JSON (the only format, and the default)");
  exp->add_option("file", o->export_in, "Trace file (.gsqt)")->required()->check(CLI::ExistingFile);
  exp->add_option("-o,--output", o->export_out, "Output file (default: FILE with .json)");

  return [o, info, exp]() {
    if (info->parsed()) {
      const auto f = trace::read_trace(o->info_file);
      if (o->json)
        std::cout << trace::summary_json(f).dump(2) << '\n';
      else
        std::cout << human_summary(f) << '\n'
                  << fmt::format("status: {}{}\n", f.header.value("status", "?"),
                                 f.header.contains("reason") ? " — " + f.header.value("reason", "") : "")
                  << (f.stats.contains("kernel_timestamps")
                          ? fmt::format("kernel timestamps: {}\n", f.stats.value("kernel_timestamps", ""))
                          : "");
      return 0;
    }
    if (exp->parsed()) {
      const auto f = trace::read_trace(o->export_in);
      std::string out = o->export_out;
      if (out.empty()) {
        out = o->export_in;
        if (out.ends_with(".gsqt")) out.resize(out.size() - 5);
        out += ".json";
      }
      std::ofstream os(out);
      if (!os) throw_bad_input("cannot write " + out);
      trace::write_chrome(f, os);
      if (!os.flush()) throw_bad_input("cannot write " + out);
      note(fmt::format("wrote {} ({} records); open it in ui.perfetto.dev or chrome://tracing", out, f.records.size()));
      if (!f.truncation.empty()) note("the trace was cut short; exported up to the last intact chunk");
      return 0;
    }
    std::unique_ptr<gpu::CounterSampler> sampler;
    if (o->gpu_metrics_ms > 0) {
      try {
        sampler = std::make_unique<gpu::CounterSampler>(o->gpu_metrics_device, o->gpu_metrics_ms);
        if (!sampler->gpm_supported()) note("--gpu-metrics: " + sampler->gpm_reason() + "; sampling NVML only");
      } catch (const Error& e) {
        note(std::string("--gpu-metrics: no counters (") + e.what() + ")");
      }
    }
    o->launch.python_shim = !o->no_python_shim;
    const auto r = trace::launch(o->launch, note);
    // The counters, or at least the GPU's name and limits (the analyzer's transfer rates and roofline go by its kind).
    nlohmann::json counters;
    if (sampler) {
      counters = sampler->finish();
    } else if (!r.files.empty()) {
      try {
        const uint32_t index = visible_gpu();
        counters = {{"source", "nvml"},
                    {"device", index},
                    {"device_info", gpu::device_info(index)},
                    {"tracks", nlohmann::json::array()}};
      } catch (const Error&) {  // no NVML here: the file says nothing of the GPU, as before
      }
    }
    if (!counters.is_null())
      for (const auto& file : r.files) {
        try {
          trace::append_counters(file, counters);
        } catch (const Error& e) {
          note(e.what());
        }
      }
    if (!r.exec_error.empty()) note(r.exec_error);
    if (!r.traced) note("NOT TRACED: " + r.untraced_reason);
    for (const auto& file : r.files) {
      try {
        const auto f = trace::read_trace(file);
        if (o->json)
          std::cout << trace::summary_json(f).dump(2) << '\n';
        else
          note(human_summary(f));
        if (f.header.value("status", "") != "tracing")
          note(fmt::format("{}: {} — {}", file.string(), f.header.value("status", "?"), f.header.value("reason", "")));
        if (f.header.value("status", "") == "refused") return static_cast<int>(ExitCode::bad_input);
      } catch (const Error& e) {
        note(e.what());
      }
    }
    if (!r.files.empty() && r.traced) note("next: gpusqueeze analyze " + r.files.front().string());
    if (r.term_signal) {
      note(fmt::format("the program was killed by signal {} ({})", r.term_signal, strsignal(r.term_signal)));
      std::cout.flush();
      die_like(r.term_signal);
    }
    return r.exit_code;
  };
}

namespace {
struct CaptureOptions {
  int pid = 0;
  double seconds = 5, grace_s = 15;
  std::string control_dir = "/tmp";
  bool json = false;
};
}  // namespace

Action register_capture(CLI::App& app) {
  auto o = std::make_shared<CaptureOptions>();
  auto* cmd = app.add_subcommand(
      "capture", "Trace N seconds of a process started with `gpusqueeze trace --on-demand`, then analyse them");
  cmd->footer(
      "Writes the window length to the process's control file (/tmp/gsqtrace-PID.ctl), waits for its tracer to\n"
      "record and flush the window into its trace file, then analyses just that window and keeps the findings next\n"
      "to the trace (TRACE.captureSTART.analysis.json). Exit 2 if the process is not traced on demand.\n"
      "Example: gpusqueeze capture 4242 --seconds 10");
  cmd->add_option("pid", o->pid, "Process id (the traced program, not the gpusqueeze launcher)")->required();
  cmd->add_option("--seconds", o->seconds, "Window length")->check(CLI::Range(0.1, 3600.0))->capture_default_str();
  cmd->add_option("--grace", o->grace_s, "Extra seconds to wait for the tracer's reply")->capture_default_str();
  cmd->add_option("--control-dir", o->control_dir, "Where control files live (GSQ_TRACE_CONTROL_DIR of the process)")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print gpusqueeze.analysis/1 JSON");
  return [o]() {
    const auto r = monitor::capture_and_analyze(o->pid, o->seconds, o->control_dir, o->grace_s, note);
    const auto& a = r.analysis;
    note(fmt::format("window of {:.3f} s: {} records in {}", static_cast<double>(r.end_ns - r.start_ns) / 1e9,
                     r.records, r.trace.string()));
    const std::string out = r.analysis_file.string();
    note("findings kept in " + out);
    if (o->json)
      std::cout << analyze::to_json(a).dump(2) << '\n';
    else
      std::cout << analyze::render_markdown(a);
    return 0;
  };
}

}  // namespace gsq::cli
