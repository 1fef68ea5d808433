// The injected tracer's configuration, read from the environment the launcher sets (GSQ_TRACE_*), and the facts of
// the traced process it records in the header. No CUPTI: testable anywhere.
#pragma once

#include <cstddef>
#include <string>

namespace gsq::trace::tracer {

inline constexpr size_t kBufferBytes = 8u << 20;  // one CUPTI activity buffer

enum class CpuMode { callbacks, activity, none };

struct Config {
  std::string file;
  double delay_s = 0, duration_s = 0;  // duration 0 = until exit
  bool strict = false;
  bool on_demand = false;     // idle until `gpusqueeze capture PID` asks for a window through the control file
  std::string control, done;  // control file the capture command writes; reply the tracer writes when a window ends
  CpuMode cpu = CpuMode::callbacks;
  std::string cpu_name = "callbacks";   // as asked (GSQ_TRACE_CPU), for the header
  std::string kernel_timestamps_asked;  // GSQ_TRACE_KERNEL_TIMESTAMPS: "", "auto", "software"
  bool nvtx = false;                    // GSQ_TRACE_NVTX: point NVTX at the libcupti in use
  // GSQ_TRACE_MODE=markers: NVTX ranges only (no GPU activity, no CPU side of CUDA calls), the near-free recording
  // `report -- CMD` times the program's steps with.
  bool markers_only = false;
  size_t max_buffers = 32;            // CUPTI activity buffers in flight (× 8 MiB)
  size_t max_cpu_records = 2u << 20;  // CPU records queued for the writer (× 96 B)
};

// Reads GSQ_TRACE_FILE, _ROOT_PID, _DELAY, _DURATION, _STRICT, _ON_DEMAND, _CONTROL_DIR, _CPU, _BUFFER_MB,
// _KERNEL_TIMESTAMPS, _NVTX and _MODE; `pid` names this process's control files and, unless it is the launched process,
// its trace file.
[[nodiscard]] Config read_config(int pid);

// Per-process file name: the launched process (GSQ_TRACE_ROOT_PID) writes the path it was given; any other traced
// process (a torchrun worker, a subprocess) writes STEM.pidPID[.rankR].gsqt beside it (RANK from the environment).
[[nodiscard]] std::string file_for_process(const std::string& requested, int pid);

[[nodiscard]] int env_int(const char* name, int fallback);
[[nodiscard]] std::string read_cmdline();  // /proc/self/cmdline with spaces between the arguments

}  // namespace gsq::trace::tracer
