// `tune` on a temporary machine: a host tree in the formats of sysfs/procfs (SYNTHETIC files; the words are those the
// kernel prints, the values are made up) and the fake GPUs (SYNTHETIC, DCGM-injection style). No real setting is read
// or written by these tests.
#include "core/error.hpp"
#include "core/json_io.hpp"
#include "tune/engine.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

namespace gsq::tune {
namespace {

namespace fs = std::filesystem;

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text << '\n';
}
std::string get(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

class TuneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("gsq-tune-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
    put(root / "proc/sys/kernel/random/boot_id", "boot-1");
    put(root / "proc/sys/kernel/numa_balancing", "1");
    put(root / "sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never");
    put(root / "sys/kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise [madvise] never");
    put(root / "sys/module/pcie_aspm/parameters/policy", "[default] performance powersave powersupersave");
    for (int cpu = 0; cpu < 2; ++cpu) {
      const auto d = root / ("sys/devices/system/cpu/cpu" + std::to_string(cpu)) / "cpufreq";
      put(d / "scaling_governor", "powersave");
      put(d / "scaling_available_governors", "performance powersave");
    }
    put(root / "proc/driver/nvidia/params",
        "ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\nEnableStreamMemOPs: 0\nRegistryDwords: \"\"\n"
        "EnableGpuFirmware: 18");
    put(root / "proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04");
    put(root / "usr/sbin/irqbalance", "");
    put(root / "proc/4242/comm", "irqbalance");
    m.root = root;
    m.gpu = &fake;
    m.run = [this](const std::vector<std::string>& argv) {  // systemctl start|stop irqbalance, on the tree
      commands.push_back(argv);
      if (argv.at(1) == "start")
        put(root / "proc/4242/comm", "irqbalance");
      else
        fs::remove_all(root / "proc/4242");
      return ProcessOutput{0, "", ""};
    };
  }
  void TearDown() override { fs::remove_all(root); }

  Profile edited() const {
    return parse_profile(R"(
[gpu]
persistence_mode = false
power_limit_w = 550
gpu_locked_clocks = [1755, 1980]
memory_locked_clocks = [3201, 3201]
compute_mode = 1
[gpu.1]
power_limit_w = 500
[module.nvidia]
NVreg_RestrictProfilingToAdminUsers = 0
[host]
cpu_governor = "performance"
numa_balancing = 0
transparent_hugepage = "never"
transparent_hugepage_defrag = "defer+madvise"
pcie_aspm_policy = "performance"
irqbalance = "inactive"
[env]
CUDA_MODULE_LOADING = "LAZY"
PYTORCH_ALLOC_CONF = "expandable_segments:True"
)",
                         "edited.toml");
  }

  static std::map<std::string, std::string> values(const Profile& p) {
    std::map<std::string, std::string> out;
    for (const auto& s : p.settings) out[s.id] = s.value;
    return out;
  }

  fs::path root;
  FakeGpuControl fake{2};
  Machine m;
  std::vector<std::vector<std::string>> commands;
};

int count(const std::vector<Check>& checks, Status s) {
  return static_cast<int>(std::count_if(checks.begin(), checks.end(), [&](const Check& c) { return c.status == s; }));
}

TEST_F(TuneTest, CaptureApplyVerifyRollbackReturnsEverySettingToTheFirstCapture) {
  const auto first = capture(m);
  EXPECT_EQ(values(first).at("gpu.1.power_limit_w"), "700");
  EXPECT_EQ(values(first).at("host.cpu_governor"), "powersave");
  EXPECT_EQ(values(first).at("host.irqbalance"), "active");
  EXPECT_EQ(values(first).at("module.nvidia.RestrictProfilingToAdminUsers"), "1");
  EXPECT_TRUE(first.unsupported.count("gpu.0.gpu_locked_clocks"));  // no NVML getter: said, not invented
  const auto round = parse_profile(write_profile(first, "test"), "captured.toml");
  EXPECT_EQ(values(round), values(first));
  EXPECT_EQ(round.unsupported, first.unsupported);

  const auto r = apply(edited(), "edited.toml", m);
  ASSERT_EQ(r.failed_id, "") << r.error;
  for (const auto& c : r.checks) EXPECT_NE(c.status, Status::failed) << check_line(c);
  EXPECT_EQ(count(r.checks, Status::pending), 1);  // the module option waits for the next load
  EXPECT_EQ(fake.gpus[0].power_mw, 550000u);
  EXPECT_EQ(fake.gpus[1].power_mw, 500000u);                                 // the per-GPU table wins over [gpu]
  EXPECT_EQ(fake.gpus[0].compute_mode, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS);  // nvidia-smi's 1 is NVML's 3
  EXPECT_EQ((fake.gpus[1].locks.at(ClockDomain::graphics)), (std::pair<unsigned, unsigned>{1755, 1980}));
  EXPECT_EQ(get(root / "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor"), "performance");
  EXPECT_EQ(get(root / "proc/sys/kernel/numa_balancing"), "0");
  EXPECT_FALSE(fs::exists(root / "proc/4242"));
  EXPECT_NE(read_text_file(root / "etc/modprobe.d/gpusqueeze.conf").find("NVreg_RestrictProfilingToAdminUsers=0"),
            std::string::npos);
  // LAZY is the fake driver's default (CUDA 13.0): nothing to write for it; the allocator setting is written.
  EXPECT_EQ(read_text_file(root / "etc/gpusqueeze/tune.env").find("CUDA_MODULE_LOADING"), std::string::npos);
  EXPECT_NE(read_text_file(root / "etc/gpusqueeze/tune.env").find("PYTORCH_ALLOC_CONF=expandable_segments:True"),
            std::string::npos);

  const auto back = rollback(m);
  EXPECT_TRUE(back.failed.empty());
  EXPECT_EQ(back.restored.size(), r.applied.size());
  EXPECT_EQ(values(capture(m)), values(first));
  for (const auto& c : verify(first, m)) EXPECT_NE(c.status, Status::failed) << check_line(c);
  EXPECT_TRUE(fake.gpus[0].locks.empty());  // locks restored by the reset call
  EXPECT_FALSE(fs::exists(root / "etc/modprobe.d/gpusqueeze.conf"));
  EXPECT_FALSE(fs::exists(root / "etc/gpusqueeze/tune.env"));
  EXPECT_FALSE(fs::exists(m.state_dir() / "state.json"));
  EXPECT_EQ(commands.size(), 2u);  // systemctl stop, then start
}

TEST_F(TuneTest, VerifySaysFailedWithTheActualValueAndSkipsWhatIsMissingHere) {
  fs::remove_all(root / "sys/devices/system/cpu");  // a VM: no cpufreq
  fake.inject("persistence", NVML_ERROR_NOT_SUPPORTED, 2);
  const auto checks = verify(edited(), m);
  std::map<std::string, Check> by;
  for (const auto& c : checks) by[c.id] = c;
  EXPECT_EQ(by.at("host.cpu_governor").status, Status::skipped);
  EXPECT_NE(by.at("host.cpu_governor").detail.find("no cpufreq"), std::string::npos);
  EXPECT_EQ(by.at("gpu.0.persistence_mode").status, Status::skipped);
  EXPECT_NE(by.at("gpu.0.persistence_mode").detail.find("NOT_SUPPORTED"), std::string::npos);
  EXPECT_EQ(by.at("host.numa_balancing").status, Status::failed);
  EXPECT_EQ(by.at("host.numa_balancing").actual, "1");
  EXPECT_EQ(by.at("host.numa_balancing").expected, "0");
  EXPECT_EQ(by.at("gpu.1.power_limit_w").actual, "700");
  EXPECT_EQ(by.at("gpu.0.gpu_locked_clocks").status, Status::failed);  // no getter and no record: not assumed
  EXPECT_EQ(by.at("env.CUDA_MODULE_LOADING").actual, kUnset);
  EXPECT_EQ(fake.writes, 0);
}

TEST_F(TuneTest, RefusedValuesStopApplyBeforeAnythingIsWritten) {
  auto p = edited();
  p.set({"gpu.*.gpu_locked_clocks", "1234,1980", ValueKind::clock_pair, "x.toml:3:1"});
  p.set({"gpu.*.power_limit_w", "900", ValueKind::number, "x.toml:4:1"});
  p.set({"host.cpu_governor", "schedutil", ValueKind::text, "x.toml:5:1"});
  p.set({"module.nvidia.EnableGpuFirmware", "0", ValueKind::integer, "x.toml:6:1"});
  p.set({"module.nvidia.RestrictProfilingToAdminUser", "0", ValueKind::integer, "x.toml:7:1"});
  try {
    (void)apply(p, "x.toml", m);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(what.find("x.toml:3:1: gpu.0.gpu_locked_clocks: 1234 MHz is not a supported clock"), std::string::npos);
    EXPECT_NE(what.find("900 W is outside this card's range 200-700 W"), std::string::npos);
    EXPECT_NE(what.find("'schedutil' is not offered here"), std::string::npos);
    EXPECT_NE(what.find("open kernel modules require GSP"), std::string::npos);
    EXPECT_NE(what.find("x.toml:7:1: module.nvidia.RestrictProfilingToAdminUser: not a parameter of the loaded"),
              std::string::npos);
  }
  EXPECT_EQ(fake.writes, 0);
  EXPECT_FALSE(fs::exists(m.state_dir() / "state.json"));
  EXPECT_EQ(get(root / "proc/sys/kernel/numa_balancing"), "1");
}

TEST_F(TuneTest, AnInjectedNvmlErrorStopsApplyAndRollbackRestoresWhatWasWritten) {
  for (const auto rc : {NVML_ERROR_NO_PERMISSION, NVML_ERROR_GPU_IS_LOST}) {
    fake.inject("set_power_limit", rc);
    const auto r = apply(edited(), "edited.toml", m);
    EXPECT_EQ(r.failed_id, "gpu.0.power_limit_w");
    EXPECT_NE(r.error.find(rc == NVML_ERROR_NO_PERMISSION ? "run as root" : "fell off the bus"), std::string::npos)
        << r.error;
    EXPECT_TRUE(r.checks.empty());
    const auto state = read_state(m);
    for (const auto& e : state["entries"]) {  // only what was really written is kept to restore
      EXPECT_EQ(e["status"], "written") << e.dump();
      EXPECT_NE(e["id"], "gpu.0.power_limit_w");
    }
    EXPECT_EQ(fake.gpus[0].power_mw, 700000u);
    const auto back = rollback(m);
    EXPECT_TRUE(back.failed.empty());
    EXPECT_EQ(back.restored.size(), r.applied.size());
    EXPECT_EQ(get(root / "proc/sys/kernel/numa_balancing"), "1");
    EXPECT_FALSE(fs::exists(m.state_dir() / "state.json"));
  }
}

TEST_F(TuneTest, ACrashBetweenTwoWritesStillLetsRollbackRestoreEverything) {
  fake.crash_after("set_power_limit");  // the process dies right after this write, before marking it done
  EXPECT_THROW((void)apply(edited(), "edited.toml", m), FakeGpuControl::SimulatedCrash);
  EXPECT_EQ(fake.gpus[0].power_mw, 550000u);
  const auto state = read_state(m);
  ASSERT_FALSE(state["entries"].empty());
  EXPECT_EQ(state["entries"].back()["id"], "gpu.0.power_limit_w");
  EXPECT_EQ(state["entries"].back()["status"], "writing");

  Machine fresh = m;  // a new process: nothing but the journal on disk
  const auto back = rollback(fresh);
  EXPECT_TRUE(back.failed.empty());
  EXPECT_EQ(fake.gpus[0].power_mw, 700000u);
  EXPECT_EQ(get(root / "proc/sys/kernel/numa_balancing"), "1");
  EXPECT_EQ(get(root / "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"), "powersave");
}

TEST_F(TuneTest, AFailedRestoreStaysSavedForTheNextRollback) {
  ASSERT_EQ(apply(edited(), "edited.toml", m).failed_id, "");
  fake.inject("set_power_limit", NVML_ERROR_NO_PERMISSION);
  const auto first = rollback(m);
  ASSERT_EQ(first.failed.size(), 1u);
  EXPECT_EQ(first.failed[0].first, "gpu.1.power_limit_w");
  EXPECT_EQ(read_state(m)["entries"].size(), 1u);
  const auto second = rollback(m);
  EXPECT_TRUE(second.failed.empty());
  EXPECT_EQ(fake.gpus[1].power_mw, 700000u);
}

TEST_F(TuneTest, ClockLocksAreVerifiedFromTheRecordAndTheObservedClock) {
  const auto p = parse_profile("[gpu.0]\ngpu_locked_clocks = [1500, 1500]\n", "lock.toml");
  EXPECT_EQ(verify(p, m).at(0).status, Status::failed);
  ASSERT_EQ(apply(p, "lock.toml", m).failed_id, "");
  auto c = verify(p, m).at(0);
  EXPECT_EQ(c.status, Status::passed) << check_line(c);
  EXPECT_NE(c.detail.find("1500 MHz"), std::string::npos);

  fake.gpus[0].locks.clear();  // a GPU reset undid the lock behind our back
  c = verify(p, m).at(0);
  EXPECT_EQ(c.status, Status::failed);
  EXPECT_EQ(c.actual, "1980 MHz observed");

  ASSERT_EQ(apply(p, "lock.toml", m).failed_id, "");
  put(root / "proc/sys/kernel/random/boot_id", "boot-2");  // rebooted: the record no longer proves anything
  EXPECT_EQ(verify(p, m).at(0).status, Status::failed);
}

TEST_F(TuneTest, EnvironmentIsCheckedInARunningProcess) {
  const auto p = parse_profile("[env]\nCUDA_MODULE_LOADING = \"LAZY\"\nNCCL_DEBUG = \"WARN\"\n", "env.toml");
  const char environ[] = "PATH=/bin\0CUDA_MODULE_LOADING=EAGER\0NCCL_DEBUG=WARN\0";
  fs::create_directories(root / "proc/77");
  std::ofstream(root / "proc/77/environ", std::ios::binary).write(environ, sizeof environ - 1);
  m.pid = 77;
  const auto checks = verify(p, m);
  EXPECT_EQ(checks.at(0).status, Status::failed);
  EXPECT_EQ(checks.at(0).actual, "EAGER");
  EXPECT_EQ(checks.at(1).status, Status::passed);
}

// A setting left unset has its documented default: a profile naming that default holds (the false "env.
// CUDA_MODULE_LOADING is (unset), the profile says LAZY" of issue 49), on a driver where it is the default only.
TEST_F(TuneTest, AnUnsetSettingHoldsWhereItsDocumentedDefaultIsTheProfilesValue) {
  const auto p = parse_profile(
      "[env]\nCUDA_MODULE_LOADING = \"LAZY\"\nCUDA_DEVICE_MAX_CONNECTIONS = \"8\"\nCUDA_LAUNCH_BLOCKING = \"1\"\n",
      "env.toml");
  fake.cuda_driver = 12020;  // CUDA 12.2: lazy loading is the default
  std::map<std::string, Check> by;
  for (const auto& c : verify(p, m)) by[c.id] = c;
  EXPECT_EQ(by.at("env.CUDA_MODULE_LOADING").status, Status::passed) << check_line(by.at("env.CUDA_MODULE_LOADING"));
  EXPECT_EQ(by.at("env.CUDA_MODULE_LOADING").actual, kUnset);
  EXPECT_NE(by.at("env.CUDA_MODULE_LOADING").detail.find("unset is LAZY on this driver (CUDA 12.2"), std::string::npos)
      << by.at("env.CUDA_MODULE_LOADING").detail;
  EXPECT_EQ(by.at("env.CUDA_DEVICE_MAX_CONNECTIONS").status, Status::passed);
  EXPECT_EQ(by.at("env.CUDA_LAUNCH_BLOCKING").status, Status::failed);  // unset is 0, the profile wants 1
  std::map<std::string, Step::Action> planned;
  for (const auto& s : plan(p, m)) planned[s.id] = s.action;
  EXPECT_EQ(planned.at("env.CUDA_MODULE_LOADING"), Step::Action::unchanged);  // apply writes what verify wants only
  EXPECT_EQ(planned.at("env.CUDA_LAUNCH_BLOCKING"), Step::Action::change);

  fake.cuda_driver = 12010;  // CUDA 12.1 loads eagerly unless told
  for (const auto& c : verify(p, m)) by[c.id] = c;
  EXPECT_EQ(by.at("env.CUDA_MODULE_LOADING").status, Status::failed);
  for (const auto& s : plan(p, m)) planned[s.id] = s.action;
  EXPECT_EQ(planned.at("env.CUDA_MODULE_LOADING"), Step::Action::change);
  fake.cuda_driver = 13000;
  const auto eager = parse_profile("[env]\nCUDA_MODULE_LOADING = \"EAGER\"\n", "eager.toml");
  EXPECT_EQ(verify(eager, m).at(0).status, Status::failed);  // the default is LAZY, not what this profile wants
}

TEST_F(TuneTest, ACorruptJournalIsAClearError) {
  put(m.state_dir() / "state.json", "{\"schema\": \"gpusqueeze.tune-state/1\", \"entries\": [{\"id\": 3}]}");
  try {
    (void)rollback(m);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("lacks id or previous"), std::string::npos);
  }
  put(m.state_dir() / "state.json", "{\"schema\": \"gpusqueeze.tune-st");
  EXPECT_THROW((void)rollback(m), Error);
}

std::string parse_error(const std::string& text) {
  try {
    (void)parse_profile(text, "p.toml");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    return e.what();
  }
  return "";
}

TEST(TuneProfile, ErrorsNameTheLineTheColumnAndTheRealAlternative) {
  EXPECT_NE(parse_error("[host]\nnuma = 0\n")
                .find("p.toml:2:8: host.numa: unknown setting (known in [host]: "
                      "cpu_governor"),
            std::string::npos);
  EXPECT_NE(parse_error("[env]\nCUDA_MALLOC_PER_BLOCK = \"1\"\n").find("PYTORCH_ALLOC_CONF"), std::string::npos);
  EXPECT_NE(parse_error("[gpu]\napplication_clocks = [1, 2]\n").find("gpu_locked_clocks"), std::string::npos);
  EXPECT_NE(parse_error("[gpu]\ndynamic_boost = true\n").find("notebook"), std::string::npos);
  EXPECT_NE(parse_error("[env]\nCUDA_DEVICE_MAX_CONNECTIONS = \"64\"\n").find("1 to 32"), std::string::npos);
  EXPECT_NE(parse_error("[env]\nPYTORCH_ALLOC_CONF = \"expandable:True\"\n").find("not an allocator option"),
            std::string::npos);
  EXPECT_NE(parse_error("[env]\nLD_PRELOAD = \"x\"\n").find("GPU stack"), std::string::npos);
  EXPECT_NE(parse_error("[env]\nNCCL_SOCKET_TIMEOUT = \"600\"\n").find("does not exist"), std::string::npos);
  EXPECT_NE(parse_error("[env]\nNCCL_MIN_NCHANNELS = \"8\"\n").find("NCCL_MIN_CTAS"), std::string::npos);
  EXPECT_NE(parse_error("[env]\nNCCL_ASYNC_ERROR_HANDLING = \"1\"\n").find("TORCH_NCCL_ASYNC_ERROR_HANDLING"),
            std::string::npos);
  EXPECT_EQ(parse_error("[env]\nNCCL_IB_DISABLE = \"0\"\nNCCL_MIN_CTAS = \"8\"\n"), "");  // real knobs
  EXPECT_NE(parse_error("[host]\ntransparent_hugepage = \"sometimes\"\n").find("not one of: always, madvise, never"),
            std::string::npos);
  EXPECT_NE(parse_error("[gpu]\ngpu_locked_clocks = [1980, 1500]\n").find("min <= max"), std::string::npos);
  EXPECT_NE(parse_error("[gpu]\ncompute_mode = \"exclusive_thread\"\n").find("removed"), std::string::npos);
  EXPECT_NE(parse_error("[host]\nnuma_balancing = \n").find("p.toml:2:"), std::string::npos);  // toml++'s own error
  EXPECT_NE(parse_error("[gpu.x]\npower_limit_w = 1\n").find("index or its UUID"), std::string::npos);
  EXPECT_NE(parse_error("[tuned]\n").find("unknown group"), std::string::npos);
  // Found by the fuzzer: a quoted key with a dot read as one setting and wrote back as another.
  EXPECT_NE(parse_error("[module.nvidia]\n'host.cpu_governor' = 'x'\n").find("letters, digits and _"),
            std::string::npos);
  EXPECT_NE(parse_error("[env]\n\"A B\" = \"x\"\n").find("letters, digits and _"), std::string::npos);
  // Found by the fuzzer: toml++ 3.3 reached __builtin_unreachable on these; TOML forbids them outside strings.
  EXPECT_NE(parse_error("\xef\xbb\xb7").find("p.toml:1:1: a non-ASCII character outside a string"), std::string::npos);
  EXPECT_NE(parse_error("[host]\nnuma_balancing = 0 \xc2\xa1\n").find("p.toml:2:20:"), std::string::npos);
  EXPECT_NE(parse_error("[main]\nsummary = \"\\\xc5\xa0\"\n").find("after a backslash"), std::string::npos);
  EXPECT_NE(parse_error("[main]\nsummary = \"\"\"a\\  \n  \xc5\xa0\"\"\"\n").find("after a backslash"),
            std::string::npos);
  EXPECT_EQ(parse_error("# caf\xc3\xa9 \xef\xbb\xb7\n[main]\nsummary = \"caf\xc3\xa9 \xef\xbb\xb7\"\n"), "");
  EXPECT_EQ(parse_error("[env]\nPYTORCH_ALLOC_CONF = \"roundup_power2_divisions:[256:1,512:2],backend:native\"\n"), "");
}

TEST(TuneProfile, IncludesResolveRelativeToTheFileAndLaterKeysWin) {
  const auto dir = fs::temp_directory_path() / ("gsq-tune-inc-" + std::to_string(::getpid()));
  fs::create_directories(dir / "base");
  put(dir / "base/base.toml", "[main]\nsummary = \"base\"\n[gpu.0]\npower_limit_w = 500\n[host]\nnuma_balancing = 1\n");
  put(dir / "child.toml",
      "[main]\ninclude = \"base/base.toml\"\nsummary = \"child\"\n[gpu]\npower_limit_w = 600\n"
      "[host]\nnuma_balancing = 0\n");
  const auto p = read_profile(dir / "child.toml");
  EXPECT_EQ(p.summary, "child");
  EXPECT_EQ(p.files.size(), 2u);
  EXPECT_EQ(p.find("host.numa_balancing")->value, "0");
  EXPECT_EQ(p.find("gpu.0.power_limit_w"), nullptr);  // the child's [gpu] overrides the parent's [gpu.0]
  EXPECT_EQ(p.find("gpu.*.power_limit_w")->value, "600");
  put(dir / "base/base.toml", "[main]\ninclude = \"../child.toml\"\n");
  try {
    (void)read_profile(dir / "child.toml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("includes itself"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(TuneProfile, TheSnippetSetsAndChecksEveryFrameworkFlag) {
  const auto p = parse_profile(
      "[framework]\nfloat32_matmul_precision = \"high\"\ncudnn_benchmark = true\n"
      "[env]\nPYTORCH_ALLOC_CONF = \"expandable_segments:True\"\n",
      "f.toml");
  const auto s = framework_snippet(p);
  EXPECT_NE(s.find("torch.set_float32_matmul_precision(\"high\")"), std::string::npos);
  EXPECT_NE(s.find("torch.backends.cudnn.benchmark = True"), std::string::npos);
  EXPECT_NE(s.find("_check(\"cudnn_benchmark\", torch.backends.cudnn.benchmark, True)"), std::string::npos);
  EXPECT_NE(s.find("PyTorch 2.9.1 ignored"), std::string::npos);
}

}  // namespace
}  // namespace gsq::tune

namespace gsq::tune {
namespace {

TEST(TuneProfile, TheShippedProfilesReadAndVerifyOnAMachineWithoutThem) {
  const auto dir = std::filesystem::path(GSQ_SOURCE_DIR) / "deploy/tune";
  for (const char* name : {"gpu-server-base.toml", "inference-serving.toml", "steady-clocks-benchmark.toml"}) {
    const auto p = read_profile(dir / name);
    EXPECT_FALSE(p.summary.empty()) << name;
    EXPECT_NE(p.find("host.numa_balancing"), nullptr) << name << " includes the base";
    Machine empty;  // a tree with nothing: every setting skipped, none failed, no driver
    empty.root = std::filesystem::temp_directory_path() / "gsq-tune-empty-root";
    empty.gpu_missing = "no NVIDIA driver (test)";
    for (const auto& c : verify(p, empty)) {
      if (c.id.rfind("env.", 0) == 0) continue;  // unset in a missing env file: failed, as it should be
      EXPECT_EQ(c.status, Status::skipped) << check_line(c);
    }
  }
}

}  // namespace
}  // namespace gsq::tune

namespace gsq::tune {
namespace {

// Captured by `tune capture` on the lent H200 (bench/results/2026-12-05-h200-session): it reads back unchanged.
TEST(TuneProfile, TheH200CaptureReadsBackAndWritesTheSameSettings) {
  const auto p = read_profile(std::filesystem::path(GSQ_FIXTURE_DIR) / "h200-tune-capture.toml");
  EXPECT_EQ(p.settings.size(), 13u);
  EXPECT_EQ(p.find("gpu.0.power_limit_w")->value, "700");
  EXPECT_EQ(p.find("module.nvidia.RestrictProfilingToAdminUsers")->value, "0");
  EXPECT_EQ(p.find("module.nvidia.UsePageAttributeTable")->value, "4294967295");
  EXPECT_EQ(p.unsupported.size(), 4u);
  EXPECT_NE(p.unsupported.at("gpu.0.gpu_locked_clocks").find("no getter"), std::string::npos);
  const auto again = parse_profile(write_profile(p, "x"), "again.toml");
  ASSERT_EQ(again.settings.size(), p.settings.size());
  for (const auto& s : p.settings) EXPECT_EQ(again.find(s.id)->value, s.value) << s.id;
}

}  // namespace
}  // namespace gsq::tune
