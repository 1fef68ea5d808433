// `report -- CMD`'s parts on any machine: step times from NVTX ranges and from output lines, the warm-up split, the
// launcher passing the program's output through with line times, the budget's stop, and the allocator shim (against a
// stand-in `torch` package that records what the shim calls). Trace files here are synthetic (built in the test).
#include "program/run.hpp"
#include "program/steps.hpp"

#include "core/error.hpp"
#include "trace/launcher.hpp"
#include "trace/python_shim.hpp"

#include <fmt/format.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <random>
#include <thread>

namespace gsq::program {
namespace {

namespace fs = std::filesystem;

trace::Record range(uint32_t name, uint32_t tid, int64_t start, int64_t end) {
  trace::Record r;
  r.kind = static_cast<uint8_t>(trace::RecordKind::range);
  r.name = name;
  r.tid = tid;
  r.start_ns = start;
  r.end_ns = end;
  return r;
}

TEST(Steps, FromTheThreadWithMostMarkersStartToStart) {
  trace::TraceFile f;
  f.header = {{"pid", 42}};
  f.strings = {"", "ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2", "forward", "ProfilerStep#x"};
  // Thread 7: three steps 10 ms apart, each range 6 ms (the loop does 4 ms of its own between them).
  f.records = {range(1, 7, 0, 6'000'000),
               range(4, 7, 1'000'000, 2'000'000),
               range(2, 7, 10'000'000, 16'000'000),
               range(3, 7, 20'000'000, 26'000'000),
               range(1, 9, 0, 1),
               range(5, 7, 30'000'000, 31'000'000)};
  const auto s = steps_from_ranges({f}, std::regex(kDefaultStepRanges[0]), kDefaultStepRanges[0]);
  EXPECT_EQ(s.source, StepSource::markers);
  ASSERT_EQ(s.ns.size(), 2u);  // "ProfilerStep#x" does not match the whole pattern; "forward" is no step
  EXPECT_DOUBLE_EQ(s.ns[0], 10e6);
  EXPECT_DOUBLE_EQ(s.ns[1], 10e6);
  EXPECT_NE(s.how.find("thread 7 of pid 42"), std::string::npos) << s.how;

  const auto none = steps_from_ranges({f}, std::regex("train_step"), "train_step");
  EXPECT_TRUE(none.ns.empty());
  EXPECT_NE(none.how.find("no thread"), std::string::npos);
}

// Without ProfilerStep# ranges the shim's markers are steps: optimizer steps before DataLoader next() ranges.
TEST(Steps, TheFirstDefaultMarkerThatMarksStepsIsTaken) {
  trace::TraceFile f;
  f.header = {{"pid", 7}};
  f.strings = {"", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "Optimizer.step#AdamW.step"};
  for (int i = 0; i < 4; ++i) {
    f.records.push_back(range(1, 3, i * 20'000'000, i * 20'000'000 + 1'000'000));  // next() at the top of the loop
    f.records.push_back(range(2, 3, i * 20'000'000 + 15'000'000, i * 20'000'000 + 16'000'000));
  }
  const std::vector<std::string> chain(std::begin(kDefaultStepRanges), std::end(kDefaultStepRanges));
  auto s = steps_from_ranges({f}, chain);
  ASSERT_EQ(s.ns.size(), 3u);
  EXPECT_NE(s.how.find("Optimizer"), std::string::npos) << s.how;
  EXPECT_DOUBLE_EQ(s.ns[0], 20e6);
  f.strings[2] = "something else";  // inference: no optimizer, the DataLoader's next() marks the loop
  s = steps_from_ranges({f}, chain);
  ASSERT_EQ(s.ns.size(), 3u);
  EXPECT_NE(s.how.find("DataLoader"), std::string::npos) << s.how;
  f.strings[1] = "other";
  s = steps_from_ranges({f}, chain);
  EXPECT_TRUE(s.ns.empty());
  EXPECT_NE(s.how.find("ProfilerStep"), std::string::npos) << s.how;
}

// Two optimizers stepped once each per iteration (a GAN's): each marks the iteration, their ranges are not mixed.
TEST(Steps, TwoOptimizersOfOneLoopAreNotTwoStepsAnIteration) {
  trace::TraceFile f;
  f.strings = {"", "Optimizer.step#Adam.step", "Optimizer.step#SGD.step"};
  for (int i = 0; i < 5; ++i) {
    f.records.push_back(range(1, 3, i * 30'000'000 + 10'000'000, i * 30'000'000 + 11'000'000));
    f.records.push_back(range(2, 3, i * 30'000'000 + 25'000'000, i * 30'000'000 + 26'000'000));
  }
  const auto s = steps_from_ranges({f}, std::regex(kDefaultStepRanges[1]), kDefaultStepRanges[1]);
  ASSERT_EQ(s.ns.size(), 4u);
  for (double x : s.ns) EXPECT_DOUBLE_EQ(x, 30e6);
}

TEST(Steps, WarmupSplitOffEachRun) {
  // Two runs: the first with two slow steps at its start, the second flat.
  const std::vector<double> a = {80e6, 20e6, 10e6, 10.2e6, 9.9e6, 10.1e6, 10e6, 10e6};
  const std::vector<double> b = {10e6, 10.1e6, 9.8e6, 10e6, 10.3e6, 10e6};
  const auto s = summarize_steps({a, b});
  EXPECT_EQ(s.steps, a.size() + b.size());
  EXPECT_EQ(s.warmup, 2u);
  EXPECT_DOUBLE_EQ(s.warmup_ns, 100e6);
  EXPECT_EQ(s.steady.n, 12u);
  EXPECT_NEAR(s.steady.p50, 10e6, 0.1e6);
  EXPECT_LE(s.p50_ci.lo, s.steady.p50);
  EXPECT_GE(s.p50_ci.hi, s.steady.p50);
  // A slow step later in a run is no warm-up: it stays in the tail.
  const auto late = summarize_steps({{10e6, 10e6, 10e6, 10e6, 50e6, 10e6}});
  EXPECT_EQ(late.warmup, 0u);
  EXPECT_DOUBLE_EQ(late.steady.max, 50e6);
  // Too short to tell warm-up from steady: nothing is dropped.
  EXPECT_EQ(summarize_steps({{50e6, 10e6, 10e6}}).warmup, 0u);
  EXPECT_FALSE(summarize_steps({}).ok());
}

TEST(Steps, FromOutputLines) {
  const std::vector<int64_t> stamps = {100, 1'100, 2'100, 3'600};
  const auto s = steps_from_lines(stamps, "step");
  EXPECT_EQ(s.source, StepSource::output);
  EXPECT_EQ(s.ns, (std::vector<double>{1000, 1000, 1500}));
  EXPECT_TRUE(steps_from_lines(std::span<const int64_t>(stamps).first(1), "step").ns.empty());
}

fs::path temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / fmt::format("gsq-program-{}-{}", name, std::random_device{}());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

ProgramOptions cpu_options(const fs::path& dir, std::vector<std::string> cmd) {
  ProgramOptions o;
  o.command = std::move(cmd);
  o.dir = dir;
  o.sample_ms = 0;  // no NVML here
  o.trace = false;
  o.memory = false;
  o.tracer_library = fs::path(GSQ_BINARY).parent_path() / "lib" / "libgsqtrace.so";
  return o;
}

bool tracer_loads(const ProgramOptions& o) {
  try {
    (void)trace::check_tracer_loads(o.tracer_library);
    return true;
  } catch (const Error&) {
    return false;
  }
}

// A program without CUDA: its steps come from the lines it prints, which still reach the terminal.
TEST(RunProgram, StepsFromOutputLinesOfAProgramWithoutCuda) {
  const auto dir = temp_dir("lines");
  auto o = cpu_options(
      dir,
      {"python3", "-c", "import time\nfor i in range(12):\n    time.sleep(0.03)\n    print(f'step {i} loss 1.0')\n"});
  if (!tracer_loads(o)) GTEST_SKIP() << "the tracer library does not load here (no CUPTI)";
  o.step_regex = R"(^step \d+)";
  unsetenv("PYTHONUNBUFFERED");  // report sets it for the program: a piped Python would write its lines only at exit
  o.runs = 2;
  testing::internal::CaptureStdout();
  const auto r = run_program(o, [](const std::string&) {});
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("step 11 loss 1.0"), std::string::npos) << "the program's output must pass through";
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_FALSE(r.program_failed());
  EXPECT_EQ(r.source, StepSource::output);
  EXPECT_EQ(r.steps.steps, 22u);  // 11 steps a run
  EXPECT_GT(r.steps.steady.p50, 25e6);
  EXPECT_LT(r.steps.steady.p50, 200e6);
  fs::remove_all(dir);
}

TEST(RunProgram, AFailingProgramIsRunOnceAndSaidToFail) {
  const auto dir = temp_dir("fail");
  auto o = cpu_options(dir, {"python3", "-c", "import sys; sys.exit(3)"});
  if (!tracer_loads(o)) GTEST_SKIP() << "the tracer library does not load here (no CUPTI)";
  o.runs = 3;
  o.trace = true;
  const auto r = run_program(o, [](const std::string&) {});
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs[0].exit_code, 3);
  EXPECT_TRUE(r.program_failed());
  EXPECT_EQ(r.source, StepSource::process);
  fs::remove_all(dir);
}

TEST(RunProgram, StoppedAtTheBudgetIsNotAFailure) {
  const auto dir = temp_dir("budget");
  auto o = cpu_options(dir, {"sleep", "30"});
  if (!tracer_loads(o)) GTEST_SKIP() << "the tracer library does not load here (no CUPTI)";
  o.budget_s = 1;
  o.runs = 2;
  const auto r = run_program(o, [](const std::string&) {});
  ASSERT_EQ(r.runs.size(), 1u);  // the second run would not fit
  EXPECT_TRUE(r.runs[0].timed_out);
  EXPECT_EQ(r.runs[0].term_signal, SIGINT);
  EXPECT_LT(r.runs[0].wall_s, 10);
  EXPECT_FALSE(r.program_failed());
  EXPECT_FALSE(r.notes.empty());
  fs::remove_all(dir);
}

// A stop at the budget reaches what the program started too (a shell's child), not only the shell.
TEST(RunProgram, TheBudgetStopsTheWholeProcessTree) {
  const auto dir = temp_dir("tree");
  auto o = cpu_options(dir, {"bash", "-c", "sleep 31.25 & wait"});
  if (!tracer_loads(o)) GTEST_SKIP() << "the tracer library does not load here (no CUPTI)";
  o.budget_s = 1;
  const auto r = run_program(o, [](const std::string&) {});
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_TRUE(r.runs[0].timed_out);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  bool left = false;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    const std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    left = left || cmd == std::string(
                              "sleep\0"
                              "31.25\0",
                              12);
  }
  EXPECT_FALSE(left) << "the shell's child outlived the stop";
  fs::remove_all(dir);
}

TEST(RunProgram, RefusesWhatCannotRun) {
  auto o = cpu_options(fs::temp_directory_path(), {});
  EXPECT_THROW((void)run_program(o, [](const std::string&) {}), Error);
  o.command = {"true"};
  o.step_regex = "(";
  EXPECT_THROW((void)run_program(o, [](const std::string&) {}), Error);
  o.step_regex.clear();
  o.command = {"/nonexistent/gsq-program"};  // not there: bad input, nothing run after it
  if (tracer_loads(o)) {
    try {
      (void)run_program(o, [](const std::string&) {});
      ADD_FAILURE() << "a program that is not there was run";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::bad_input);
      EXPECT_NE(std::string(e.what()).find("/nonexistent/gsq-program"), std::string::npos) << e.what();
    }
  }
}

// The shim against a stand-in torch: each DataLoader next() is an NVTX range named as torch.profiler names it; history
// is switched on at CUDA's first use (not at import), the snapshot written at exit, one file per process; an
// environment's own sitecustomize still runs.
TEST(PythonShim, MarksDataLoaderNextAndRecordsMemoryFromFirstCudaUseAndDumpsAtExit) {
  const auto dir = temp_dir("shim");
  trace::write_python_shim(dir / "shim");
  fs::create_directories(dir / "site" / "torch");
  std::ofstream(dir / "site" / "torch" / "__init__.py") << R"PY(
import os, types
calls = []
class _Memory:
    def _record_memory_history(self, max_entries=0):
        calls.append(("record", cuda.is_initialized()))
    def _dump_snapshot(self, path):
        open(path, "w").write(repr(calls))
class _Cuda:
    def __init__(self):
        self.memory = _Memory()
        self._on = False
    def is_initialized(self):
        return self._on
    def _lazy_init(self):
        self._on = True
cuda = _Cuda()
ranges = []
class _Nvtx:
    def range_push(self, name):
        ranges.append("push " + name)
    def range_pop(self):
        ranges.append("pop")
cuda.nvtx = _Nvtx()
_C = types.SimpleNamespace(_nvtx=object())  # NVTX built in (a CPU-only build has none)
)PY";
  fs::create_directories(dir / "site" / "torch" / "utils" / "data");
  std::ofstream(dir / "site" / "torch" / "utils" / "__init__.py") << "";
  std::ofstream(dir / "site" / "torch" / "utils" / "data" / "__init__.py") << "";
  std::ofstream(dir / "site" / "torch" / "utils" / "data" / "dataloader.py") << R"PY(
class _BaseDataLoaderIter:
    def __next__(self):
        return 7
class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    pass
)PY";
  fs::create_directories(dir / "site" / "torch" / "optim");
  std::ofstream(dir / "site" / "torch" / "optim" / "__init__.py") << "";
  std::ofstream(dir / "site" / "torch" / "optim" / "optimizer.py") << R"PY(
_pre, _post = [], []
def register_optimizer_step_pre_hook(h):
    _pre.append(h)
def register_optimizer_step_post_hook(h):
    _post.append(h)
class SGD:
    def step(self):
        for h in _pre:
            h(self, (), {})
        for h in _post:
            h(self, (), {})
)PY";
  std::ofstream(dir / "site" / "sitecustomize.py") << "import os\nos.environ['GSQ_SITE_RAN'] = '1'\n";
  fs::create_directories(dir / "out");
  const std::string cmd = fmt::format(
      "cd {} && PYTHONPATH={}:{} GSQ_MEMORY_SNAPSHOT_DIR={} GSQ_NVTX_MARKERS=1 python3 -c "
      "\"import os, torch; assert os.environ.get('GSQ_SITE_RAN') == '1'; assert not torch.calls; "
      "torch.cuda._lazy_init(); torch.cuda._lazy_init(); print(torch.calls); "
      "from torch.utils.data import dataloader; assert next(dataloader._MultiProcessingDataLoaderIter()) == 7; "
      "from torch.optim import optimizer; optimizer.SGD().step(); "
      "assert torch.ranges == ['push enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__', 'pop', "
      "'push Optimizer.step#SGD.step', 'pop'], torch.ranges\"",
      dir.string(), (dir / "shim").string(), (dir / "site").string(), (dir / "out").string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  // A CPU-only PyTorch (no NVTX built in: its nvtx functions raise) runs as it would without the shim.
  fs::create_directories(dir / "cpu-only");
  fs::copy(dir / "site" / "torch", dir / "cpu-only" / "torch", fs::copy_options::recursive);
  std::ofstream(dir / "cpu-only" / "torch" / "__init__.py", std::ios::app)
      << "del _C\ndef _raise(*a):\n    raise RuntimeError('NVTX functions not installed')\n"
         "cuda.nvtx.range_push = _raise\ncuda.nvtx.range_pop = _raise\n";
  const std::string cpu_only = fmt::format(
      "cd {} && PYTHONPATH={}:{} GSQ_NVTX_MARKERS=1 python3 -c \"import torch; from torch.utils.data import "
      "dataloader; from torch.optim import optimizer; assert next(dataloader._MultiProcessingDataLoaderIter()) == 7; "
      "optimizer.SGD().step()\"",
      dir.string(), (dir / "shim").string(), (dir / "cpu-only").string());
  EXPECT_EQ(std::system(cpu_only.c_str()), 0) << cpu_only;
  // Without a sitecustomize of the environment's own, nothing is said on stderr (the program's output is its own).
  const std::string alone = fmt::format(
      "cd {} && PYTHONPATH={} GSQ_NVTX_MARKERS=1 python3 -c 'import sys; print(sys.modules[\"sitecustomize\"])' "
      ">{} 2>{}",
      dir.string(), (dir / "shim").string(), (dir / "alone.out").string(), (dir / "alone.err").string());
  ASSERT_EQ(std::system(alone.c_str()), 0) << alone;
  std::ifstream err(dir / "alone.err");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>()), "");
  std::vector<fs::path> dumps;
  for (const auto& e : fs::directory_iterator(dir / "out")) dumps.push_back(e.path());
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_TRUE(dumps[0].filename().string().starts_with("memory."));
  std::ifstream in(dumps[0]);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "[('record', True)]");  // once, after CUDA was initialised
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gsq::program
