// The gpusqueeze binary end to end: exit codes, messages, replayed snapshots, and the no-GPU fallback.
#include "support/fixtures.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace gsq {
namespace {

namespace fs = std::filesystem;

struct Result {
  int rc;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result run(const std::string& args, const std::string& env = "") {
  const fs::path dir = fs::temp_directory_path() / ("gsq-cli-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string cmd = env + " " + GSQ_BINARY + " " + args + " >" + (dir / "out").string() + " 2>" + (dir / "err").string();
  const int status = std::system(cmd.c_str());
  Result r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "out"), slurp(dir / "err")};
  fs::remove_all(dir);
  return r;
}

bool has_nvidia_driver() { return fs::exists("/proc/driver/nvidia/version"); }

std::string temp_file(const std::string& name, const std::string& content) {
  const fs::path p = fs::temp_directory_path() / name;
  std::ofstream(p) << content;
  return p.string();
}

const std::string kFixture = test::fixture("h200-snapshot.json").string();

TEST(Cli, EveryCommandHasHelp) {
  for (const char* cmd : {"", "env ", "doctor ", "report "}) {
    const auto r = run(std::string(cmd) + "--help");
    EXPECT_EQ(r.rc, 0) << cmd;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << cmd;
  }
}

TEST(Cli, UnknownFlagIsUsageError) {
  const auto r = run("doctor --frobnicate");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("frobnicate"), std::string::npos) << r.err;
}

TEST(Cli, NoSubcommandIsUsageError) { EXPECT_EQ(run("").rc, 2); }

TEST(Cli, DoctorWithoutDriverExits3WithReason) {
  if (has_nvidia_driver()) GTEST_SKIP() << "an NVIDIA driver is loaded here; this checks the no-driver path";
  const auto r = run("doctor");
  EXPECT_EQ(r.rc, 3);
  EXPECT_NE(r.err.find("no NVIDIA driver"), std::string::npos) << r.err;
}

TEST(Cli, DoctorOnRecordedH200Passes) {
  const auto r = run("doctor --all --snapshot " + kFixture);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("0 fail, 0 warn"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PCIe link reaches gen 5 under load"), std::string::npos) << r.out;
}

TEST(Cli, DoctorFailLevelFindingExits1) {
  auto j = test::h200_snapshot_json();
  j["gpus"][0]["pcie_width_current"] = 8;
  const auto r = run("doctor --json --snapshot " + temp_file("gsq-x8.json", j.dump()));
  EXPECT_EQ(r.rc, 1);
  const auto out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["worst"], "fail");
}

TEST(Cli, CorruptSnapshotsExit2NamingTheProblem) {
  const std::string text = test::h200_snapshot_json().dump();
  const auto truncated = run("doctor --snapshot " + temp_file("gsq-trunc.json", text.substr(0, 1000)));
  EXPECT_EQ(truncated.rc, 2);
  EXPECT_NE(truncated.err.find("truncated"), std::string::npos) << truncated.err;

  auto j = test::h200_snapshot_json();
  j["schema"] = "gpusqueeze.snapshot/9";
  const auto schema = run("env --snapshot " + temp_file("gsq-schema.json", j.dump()));
  EXPECT_EQ(schema.rc, 2);
  EXPECT_NE(schema.err.find("gpusqueeze.snapshot/9"), std::string::npos) << schema.err;

  const auto missing = run("doctor --snapshot /nonexistent/snap.json");
  EXPECT_EQ(missing.rc, 2);
}

TEST(Cli, EnvCheckListsDriftAndExits1) {
  auto j = test::h200_snapshot_json();
  j["host"]["driver_version"] = "570.86.15";
  j["host"]["env"]["CUDA_MODULE_LOADING"] = "EAGER";
  const auto r = run("env --snapshot " + temp_file("gsq-drift.json", j.dump()) + " --check " +
                     test::fixture("h200-env.json").string());
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.out.find("2 field(s) drifted"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("host.driver_version"), std::string::npos);
  EXPECT_NE(r.out.find("570.86.15"), std::string::npos);
  EXPECT_EQ(run("env --snapshot " + kFixture + " --check " + test::fixture("h200-env.json").string()).rc, 0);
}

TEST(Cli, ReportFromSnapshotWritesTheFolder) {
  const fs::path dir = fs::temp_directory_path() / "gsq-cli-report";
  fs::remove_all(dir);
  const auto r = run("report --snapshot " + kFixture + " -o " + dir.string());
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "index.html"));
  EXPECT_NE(slurp(dir / "report.md").find("NVIDIA H200"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Cli, ReportWithoutGpuSaysSoAndShowsTheBundledH200) {
  if (has_nvidia_driver()) GTEST_SKIP() << "an NVIDIA driver is loaded here; this checks the no-GPU fallback";
  const fs::path dir = fs::temp_directory_path() / "gsq-cli-report-fallback";
  fs::remove_all(dir);
  const auto r = run("report -o " + dir.string());
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("no NVIDIA driver"), std::string::npos) << r.err;
  EXPECT_NE(slurp(dir / "index.html").find("NOT THIS MACHINE"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gsq
