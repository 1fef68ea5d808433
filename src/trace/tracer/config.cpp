// The tracer's configuration from its environment (see config.hpp).
#include "trace/tracer/config.hpp"

#include "trace/format.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>

namespace gsq::trace::tracer {

namespace {

double env_double(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtod(v, nullptr) : fallback;
}

std::string env_string(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

std::string file_for_process(const std::string& requested, int pid) {
  if (env_string("GSQ_TRACE_ROOT_PID") == std::to_string(pid)) return requested;
  std::string stem = requested;
  if (stem.size() > 5 && stem.ends_with(".gsqt")) stem.resize(stem.size() - 5);
  std::string name = stem + ".pid" + std::to_string(pid);
  if (const std::string rank = env_string("RANK"); !rank.empty()) name += ".rank" + rank;
  return name + ".gsqt";
}

Config read_config(int pid) {
  Config c;
  c.file = env_string("GSQ_TRACE_FILE");
  if (c.file.empty()) c.file = "gpusqueeze.gsqt";
  c.file = file_for_process(c.file, pid);
  c.delay_s = env_double("GSQ_TRACE_DELAY", 0);
  c.duration_s = env_double("GSQ_TRACE_DURATION", 0);
  c.strict = env_int("GSQ_TRACE_STRICT", 0) != 0;
  c.on_demand = env_int("GSQ_TRACE_ON_DEMAND", 0) != 0;
  const std::string dir = env_string("GSQ_TRACE_CONTROL_DIR").empty() ? "/tmp" : env_string("GSQ_TRACE_CONTROL_DIR");
  c.control = dir + "/gsqtrace-" + std::to_string(pid) + ".ctl";
  c.done = dir + "/gsqtrace-" + std::to_string(pid) + ".done";
  const std::string cpu = env_string("GSQ_TRACE_CPU");
  c.cpu = cpu == "activity" ? CpuMode::activity : cpu == "none" ? CpuMode::none : CpuMode::callbacks;
  c.cpu_name = cpu.empty() ? "callbacks" : cpu;
  c.kernel_timestamps_asked = env_string("GSQ_TRACE_KERNEL_TIMESTAMPS");
  c.nvtx = env_int("GSQ_TRACE_NVTX", 0) != 0;
  c.markers_only = env_string("GSQ_TRACE_MODE") == "markers";
  if (c.markers_only) {  // nothing but NVTX ranges: no CPU side of CUDA calls either
    c.cpu = CpuMode::none;
    c.cpu_name = "none";
    c.kernel_timestamps_asked = "software";
  }
  const int mb = std::max(env_int("GSQ_TRACE_BUFFER_MB", 256), 16);
  c.max_buffers = std::max<size_t>(2, static_cast<size_t>(mb) * (1u << 20) / kBufferBytes);
  c.max_cpu_records = static_cast<size_t>(mb) * (1u << 20) / sizeof(Record);
  return c;
}

std::string read_cmdline() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (char& c : s)
    if (c == '\0') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace gsq::trace::tracer
