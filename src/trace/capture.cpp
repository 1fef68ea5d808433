#include "trace/capture.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <thread>

namespace gsq::trace {

namespace fs = std::filesystem;

CaptureWindow request_capture(int pid, double seconds, const fs::path& control_dir, double grace_s,
                              const std::function<void(const std::string&)>& note) {
  if (!fs::exists(fmt::format("/proc/{}", pid))) throw_bad_input(fmt::format("no process {}", pid));
  if (!(seconds > 0)) throw_bad_input("--seconds must be positive");
  const fs::path ctl = control_dir / fmt::format("gsqtrace-{}.ctl", pid);
  const fs::path done = control_dir / fmt::format("gsqtrace-{}.done", pid);
  std::error_code ec;
  fs::remove(done, ec);
  {
    const fs::path tmp = ctl.string() + ".tmp";
    std::ofstream(tmp) << seconds << '\n';
    fs::rename(tmp, ctl, ec);  // atomic: the tracer never reads half a number
    if (ec) throw_bad_input(fmt::format("cannot write {}: {}", ctl.string(), ec.message()));
  }
  note(fmt::format("asked process {} for {} s of trace; waiting", pid, seconds));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds + grace_s);
  while (!fs::exists(done)) {
    if (std::chrono::steady_clock::now() > deadline) {
      fs::remove(ctl, ec);
      throw_bad_input(fmt::format(
          "process {} did not answer within {:.0f} s: it does not run under `gpusqueeze trace --on-demand` (or "
          "its CUDA has not started yet); control file was {}",
          pid, seconds + grace_s, ctl.string()));
    }
    if (!fs::exists(fmt::format("/proc/{}", pid)))
      throw_bad_input(fmt::format("process {} ended during the capture", pid));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const auto j = parse_json_text(read_text_file(done), done.string(), "gpusqueeze.capture-window/1");
  fs::remove(done, ec);
  CaptureWindow w;
  try {
    w.trace = j.at("trace").get<std::string>();
    w.start_ns = j.at("window").at("start_ns").get<int64_t>();
    w.end_ns = j.at("window").at("end_ns").get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw_bad_input(fmt::format("{}: {}", done.string(), e.what()));
  }
  return w;
}

TraceFile window_of(TraceFile t, int64_t start_ns, int64_t end_ns) {
  std::erase_if(t.records, [&](const Record& r) {
    return r.start_ns <= 0 || r.end_ns < r.start_ns || r.end_ns < start_ns || r.start_ns > end_ns;
  });
  return t;
}

}  // namespace gsq::trace
