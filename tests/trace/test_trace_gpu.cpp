// GPU tests (label `gpu`) of `gpusqueeze trace`: a program with a known amount of work is traced, and the trace
// holds exactly that work; a crashing or killed program leaves a readable trace and its status passes through.
#include "trace/format.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

extern char** environ;

namespace gsq::trace {
namespace {

namespace fs = std::filesystem;

bool has_gpu(std::string& why) {
  if (!fs::exists("/proc/driver/nvidia/version")) {
    why = "no NVIDIA driver (/proc/driver/nvidia/version missing)";
    return false;
  }
  return true;
}

fs::path dir() {
  const fs::path d = fs::temp_directory_path() / ("gsq-trace-gpu-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// Starts `gpusqueeze trace -o OUT -- trace_target ARGS...`; returns the launcher's pid.
pid_t start(const fs::path& out, std::vector<std::string> target_args, bool on_demand = false) {
  std::vector<std::string> args = {GSQ_BINARY, "trace", "-o", out.string()};
  if (on_demand) args.push_back("--on-demand");
  args.insert(args.end(), {"--", GSQ_TRACE_TARGET});
  args.insert(args.end(), target_args.begin(), target_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ), 0);
  return pid;
}

int wait_status(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

struct Counts {
  size_t kernels = 0, graph_kernels = 0, pageable_htod = 0, pinned_htod = 0, stream_syncs = 0, ranges = 0;
  size_t launch_calls = 0, graph_launch_calls = 0;
};

Counts count(const TraceFile& t) {
  Counts c;
  for (const Record& r : t.records) {
    switch (static_cast<RecordKind>(r.kind)) {
      case RecordKind::kernel:
        ++c.kernels;
        c.graph_kernels += (r.flags & kFromGraph) != 0;
        EXPECT_EQ(t.name(r), "bump(float*, int)");
        EXPECT_EQ(r.block[0], 256);
        EXPECT_EQ(r.grid[0], 1024);
        EXPECT_GT(r.registers, 0);
        break;
      case RecordKind::memcpy:
        EXPECT_EQ(r.bytes, 1u << 20);
        EXPECT_EQ(r.copy_kind, 1) << "HtoD";
        c.pageable_htod += r.src_kind == 1;
        c.pinned_htod += r.src_kind == 2;
        break;
      case RecordKind::sync:
        c.stream_syncs += r.sync_type == 3;
        break;
      case RecordKind::range:
        c.ranges += t.name(r) == "gsq-test-range";
        break;
      case RecordKind::api:
        c.launch_calls += t.name(r) == "cudaLaunchKernel";
        c.graph_launch_calls += t.name(r) == "cudaGraphLaunch";
        break;
      default:
        break;
    }
  }
  return c;
}

TEST(TraceGpu, RecordsExactlyTheWorkThatWasDone) {
  std::string why;
  if (!has_gpu(why)) GTEST_SKIP() << why;
  const fs::path out = dir() / "exact.gsqt";
  const int status = wait_status(start(out, {"20", "3", "4", "5"}));
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  const TraceFile t = read_trace(out);
  ASSERT_EQ(t.header.value("status", ""), "tracing") << t.header.dump();
  EXPECT_TRUE(t.complete);
  // Hardware kernel timestamps where CUPTI has them (Blackwell), software ones with the reason elsewhere.
  const std::string stamps = t.stats.value("kernel_timestamps", "");
  EXPECT_TRUE(stamps == "hardware (HES)" || stamps.starts_with("software (")) << stamps;
  std::cout << "kernel timestamps: " << stamps << '\n';
  const Counts c = count(t);
  EXPECT_EQ(c.kernels, 21u);  // 20 launched + 1 from the graph
  EXPECT_EQ(c.graph_kernels, 1u);
  EXPECT_EQ(c.pageable_htod, 3u);
  EXPECT_EQ(c.pinned_htod, 4u);
  EXPECT_EQ(c.stream_syncs, 5u);
  EXPECT_EQ(c.ranges, 1u);
  EXPECT_EQ(c.launch_calls, 21u);  // the captured launch is a call too
  EXPECT_EQ(c.graph_launch_calls, 1u);
  EXPECT_EQ(t.stats.value("cupti_dropped_records", 1), 0);
  EXPECT_EQ(t.stats.value("cpu_dropped_records", 1), 0);
  // Every kernel's launch call is in the trace and precedes it.
  std::unordered_map<uint64_t, const Record*> calls;
  for (const Record& r : t.records)
    if (r.kind == static_cast<uint8_t>(RecordKind::api)) calls[r.correlation] = &r;
  for (const Record& r : t.records) {
    if (r.kind != static_cast<uint8_t>(RecordKind::kernel)) continue;
    const auto it = calls.find(r.correlation);
    ASSERT_NE(it, calls.end()) << "kernel without its call, correlation " << r.correlation;
    EXPECT_LE(it->second->start_ns, r.start_ns);
  }
}

TEST(TraceGpu, AbortingProgramLeavesAReadableTraceAndItsSignal) {
  std::string why;
  if (!has_gpu(why)) GTEST_SKIP() << why;
  const fs::path out = dir() / "abort.gsqt";
  const int status = wait_status(start(out, {"7", "1", "1", "1", "abort"}));
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
  const TraceFile t = read_trace(out);
  EXPECT_EQ(count(t).kernels, 8u);
  EXPECT_EQ(t.stats.value("ended_by", ""), "SIGABRT");
}

TEST(TraceGpu, KilledProgramLeavesTheFlushedPart) {
  std::string why;
  if (!has_gpu(why)) GTEST_SKIP() << why;
  const fs::path out = dir() / "killed.gsqt", pid_file = dir() / "target.pid";
  setenv("GSQ_TARGET_PID_FILE", pid_file.c_str(), 1);
  const pid_t launcher = start(out, {"9", "0", "0", "1", "hang"});
  pid_t target = 0;
  for (int i = 0; i < 300 && !target; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream(pid_file) >> target;
  }
  ASSERT_GT(target, 0) << "the target never reported its pid";
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // > the tracer's 1 s flush + 0.5 s sweep
  kill(target, SIGKILL);
  const int status = wait_status(launcher);
  unsetenv("GSQ_TARGET_PID_FILE");
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  const TraceFile t = read_trace(out);
  EXPECT_FALSE(t.complete);
  EXPECT_EQ(count(t).kernels, 10u) << "everything before the kill had been flushed";
}

TEST(TraceGpu, OnDemandRecordsOnlyTheCapturedWindow) {
  std::string why;
  if (!has_gpu(why)) GTEST_SKIP() << why;
  const fs::path out = dir() / "ondemand.gsqt", pid_file = dir() / "loop.pid";
  setenv("GSQ_TARGET_PID_FILE", pid_file.c_str(), 1);
  const pid_t launcher = start(out, {"5", "0", "0", "0", "loop"}, /*on_demand=*/true);
  pid_t target = 0;
  for (int i = 0; i < 300 && !target; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream(pid_file) >> target;
  }
  unsetenv("GSQ_TARGET_PID_FILE");
  ASSERT_GT(target, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // idle tracer: nothing may be recorded yet
  EXPECT_EQ(summarize(read_trace(out)).kernels, 0u);
  const std::string cmd = std::string(GSQ_BINARY) + " capture " + std::to_string(target) + " --seconds 1 --json > " +
                          (dir() / "capture.json").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  const auto analysis = nlohmann::json::parse(std::ifstream(dir() / "capture.json"));
  EXPECT_GT(analysis.at("top_kernels").at(0).at("count").get<int>(), 50) << "about 5 kernels every 10 ms for 1 s";
  kill(target, SIGTERM);
  wait_status(launcher);
  const TraceFile t = read_trace(out);
  ASSERT_EQ(t.stats.at("capture_windows").size(), 1u);
  EXPECT_GT(summarize(t).kernels, 50u);
}

}  // namespace
}  // namespace gsq::trace
