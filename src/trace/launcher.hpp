// `gpusqueeze trace -- CMD`: runs CMD unchanged with the tracer injected (CUDA_INJECTION64_PATH) and reports how
// it ended. The launcher itself never loads CUPTI into its own address space beyond a load check.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gsq::trace {

struct LaunchOptions {
  std::vector<std::string> command;  // argv of the program to trace
  std::filesystem::path output = "gpusqueeze.gsqt";
  double delay_s = 0, duration_s = 0;      // trace window; duration 0 = until the program exits
  bool strict = false;                     // refuse to run untraced when another CUPTI tool is attached
  bool on_demand = false;                  // record nothing until `gpusqueeze capture PID --seconds N`
  std::string cpu_api = "callbacks";       // callbacks | activity | none
  std::string kernel_timestamps = "auto";  // auto (hardware events where CUPTI has them: Blackwell) | software
  int buffer_mb = 256;                     // memory cap for records in flight
  std::filesystem::path library;           // the tracer library; empty = found beside the executable
  bool markers_only = false;               // record NVTX ranges only (GSQ_TRACE_MODE=markers): the near-free run
  std::vector<std::string> env;            // NAME=VALUE set for the program besides the tracer's own
  // Put gpusqueeze's Python shim first on PYTHONPATH (trace/python_shim.hpp) with its NVTX markers on; a
  // GSQ_MEMORY_SNAPSHOT_DIR in `env` also records the allocator's history. Only while the program is traced.
  bool python_shim = false;
  double timeout_s = 0;  // > 0: SIGINT after this long, SIGTERM 5 s later, SIGKILL 5 s after that
  // Set: the program's stdout and stderr pass through pipes, each line handed here with the steady-clock time it
  // arrived (ns) before it is written on to this process's stdout or stderr. Unset: the program writes to them itself.
  std::function<void(std::string_view line, int64_t steady_ns)> on_line;
};

struct LaunchResult {
  int exit_code = 0;       // the child's exit status when it exited
  int term_signal = 0;     // the signal that ended it, 0 if it exited
  bool traced = true;      // false when the program ran untraced (another profiler attached, tracer unavailable)
  std::string exec_error;  // "cannot run CMD: reason" when the command could not be started (exit code 127 or 126)
  std::string untraced_reason;
  std::vector<std::filesystem::path> files;  // trace files this run wrote (one per traced process)
  double wall_s = 0;                         // from the start of the program to its end
  bool timed_out = false;                    // ended by LaunchOptions::timeout_s
  int interrupted_by = 0;  // a SIGINT/SIGTERM/SIGHUP this process got and passed on to the program (0: none)
};

// Finds libgsqtrace.so: $GSQ_TRACE_LIB, then lib/ beside the executable, then ../lib/gpusqueeze/. Throws
// Error(no_gpu) naming the places looked in.
[[nodiscard]] std::filesystem::path find_tracer_library();

// Checks the tracer library loads (CUPTI resolves) and returns the path of the libcupti it pulled in, which also
// serves as the NVTX injection library. Throws Error(no_gpu) with the loader's message and what to install.
[[nodiscard]] std::filesystem::path check_tracer_loads(const std::filesystem::path& library);

// A profiler that already claims CUPTI through the environment (Nsight Systems/Compute set CUDA_INJECTION64_PATH),
// or "" if none.
[[nodiscard]] std::string conflicting_tool(const std::filesystem::path& our_library);

// Runs the command, forwarding SIGINT/SIGTERM/SIGHUP to it, and waits. Throws Error(bad_input) for an empty
// command and Error(no_gpu) when the tracer cannot load. `note` receives progress lines for the user.
LaunchResult launch(const LaunchOptions& o, const std::function<void(const std::string&)>& note);

}  // namespace gsq::trace
