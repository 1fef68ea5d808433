// `gpusqueeze capture PID --seconds N`: asks a process running under `gpusqueeze trace --on-demand` for a window of
// N seconds through its control file, waits for the tracer's reply, and returns where the window is.
#pragma once

#include "trace/format.hpp"

#include <filesystem>
#include <functional>
#include <string>

namespace gsq::trace {

struct CaptureWindow {
  std::filesystem::path trace;  // the file the window was appended to
  int64_t start_ns = 0, end_ns = 0;
};

// Throws Error(bad_input) when PID is not running or does not answer within seconds + `grace_s` (it is not traced
// on demand, or its tracer is stuck), naming the control file it wrote.
[[nodiscard]] CaptureWindow request_capture(int pid, double seconds, const std::filesystem::path& control_dir,
                                            double grace_s, const std::function<void(const std::string&)>& note);

// `t` keeping only the records that overlap [start, end].
[[nodiscard]] TraceFile window_of(TraceFile t, int64_t start_ns, int64_t end_ns);

}  // namespace gsq::trace
