// The gpusqueeze binary end to end: exit codes, messages, replayed snapshots, and the no-GPU fallback.
#include "core/finding.hpp"
#include "support/fixtures.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cmath>
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
  const std::string cmd =
      env + " " + GSQ_BINARY + " " + args + " >" + (dir / "out").string() + " 2>" + (dir / "err").string();
  const int status = std::system(cmd.c_str());
  Result r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "out"), slurp(dir / "err")};
  fs::remove_all(dir);
  return r;
}

bool has_nvidia_driver() {
  return fs::exists("/proc/driver/nvidia/version");
}

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

TEST(Cli, NoSubcommandIsUsageError) {
  EXPECT_EQ(run("").rc, 2);
}

TEST(Cli, AMistypedCommandOrOptionIsNamedWithTheOneMeant) {
  auto r = run("repot");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("gpusqueeze: unknown command 'repot' (did you mean 'report'?)"), std::string::npos) << r.err;
  r = run("fleet --prometeus http://p:9090");  // an option of an option group
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("(did you mean --prometheus?)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Run 'gpusqueeze fleet --help'"), std::string::npos) << r.err;
  r = run("doctor --frobnicate");  // nothing close: no guess
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.rfind("gpusqueeze: ", 0), 0u) << "said as every other error is: " << r.err;
}

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

// Exit codes (issue 49): 0 with no fail-level finding on the page, 1 with one (the page is still written), 2 for a file
// refused — before anything is measured: the live GPU's measurements run only after every file reads.
TEST(CliReport, ExitsOneWithAFailLevelFindingOnThePageAndZeroWithout) {
  const fs::path dir = fs::temp_directory_path() / ("gsq-cli-report-exit-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const auto clean = run("report --snapshot " + kFixture + " -o " + dir.string());
  ASSERT_EQ(clean.rc, 0) << clean.err;
  for (const auto& [name, f] : nlohmann::json::parse(slurp(dir / "report.json"))["sections"].items())
    for (const auto& x : f.value("findings", nlohmann::json::array()))
      EXPECT_NE(x.value("severity", ""), "fail") << name;  // what 0 promises
  const auto timeout = temp_file(  // SYNTHETIC: PyTorch's watchdog on one collective, a fail-level NCCL finding
      "gsq-watchdog.log",
      "[rank0]:[E ProcessGroupNCCL.cpp:1] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, "
      "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600023 milliseconds before timing out.\n");
  const auto failing = run("report --snapshot " + kFixture + " -o " + dir.string() + " --nccl " + timeout);
  EXPECT_EQ(failing.rc, 1) << failing.err;
  EXPECT_NE(failing.out.find("fail-level finding(s) on the page (exit 1)"), std::string::npos) << failing.out;
  EXPECT_TRUE(fs::exists(dir / "index.html"));
  const auto j = nlohmann::json::parse(slurp(dir / "report.json"));
  EXPECT_EQ(j["verdict"][0]["finding"]["severity"], "fail");
  const auto help = run("report --help");
  EXPECT_NE(help.out.find("Exit codes: 0 the page is written and holds no fail-level finding; 1"), std::string::npos);
  fs::remove_all(dir);
}

// A file report cannot use is refused as its own command refuses it, with the same message and exit code, and before
// any live measurement: on a machine with a GPU the run stops at once (the budget is never spent), without one it
// stops before the bundled page is written.
TEST(CliReport, RefusesACorruptFileAsItsCommandDoesBeforeMeasuringAnything) {
  const fs::path dir = fs::temp_directory_path() / ("gsq-cli-report-refuse-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string cut = temp_file("gsq-report-trt-cut.log",  // SYNTHETIC: a log cut inside its run
                                    "&&&& RUNNING TensorRT.trtexec [TensorRT v101601] # trtexec --onnx=m.onnx\n"
                                    "[07/07/2026-02:10:45] [I] === Build Opt");
  const auto owner = run("trt audit " + cut);
  ASSERT_EQ(owner.rc, 2);
  const auto inside = run("report -o " + dir.string() + " --budget 600 --trt " + cut);
  EXPECT_EQ(inside.rc, owner.rc) << inside.err;
  const auto why = owner.err.substr(owner.err.find("truncated"));
  EXPECT_NE(inside.err.find(why), std::string::npos) << inside.err << "\nvs\n" << owner.err;
  EXPECT_EQ(inside.err.find("measuring"), std::string::npos) << inside.err;  // refused before the first measurement
  EXPECT_FALSE(fs::exists(dir / "index.html"));
  const std::string trace = temp_file("gsq-report-cut-trace.json", R"({"traceEvents": [{"ph": "X", "name": )");
  const auto analyze = run("analyze " + trace), bad_trace = run("report -o " + dir.string() + " --trace " + trace);
  EXPECT_EQ(bad_trace.rc, 2) << bad_trace.err;
  EXPECT_EQ(bad_trace.rc, analyze.rc);
  EXPECT_EQ(bad_trace.err.find("measuring"), std::string::npos) << bad_trace.err;
  EXPECT_FALSE(fs::exists(dir / "index.html"));
  fs::remove_all(dir);
}

// Files from another machine say so: an A100's trtexec log on the H200's page is labelled with its GPU in its title
// and in each of its verdict lines.
// One allocator snapshot of a process on three GPUs: each GPU's figures, never their sum (issue 49 saw "109318 MiB
// reserved", GPUs 0, 1 and 2 added up).
TEST(CliReport, GivesAnAllocatorSnapshotsFiguresPerGpu) {
  const fs::path snapshot = test::shared_data("pytorch-snapshots/csun_multigpu_expandable_oom.pickle");
  if (!fs::exists(snapshot)) GTEST_SKIP() << snapshot << " is not here";
  const fs::path dir = fs::temp_directory_path() / ("gsq-cli-report-alloc-" + std::to_string(::getpid()));
  const auto r = run("report --snapshot " + kFixture + " -o " + dir.string() + " --memory " + snapshot.string());
  ASSERT_LE(r.rc, 1) << r.err;
  const std::string headline = nlohmann::json::parse(slurp(dir / "report.json"))["steps"][8]["headlines"][0];
  EXPECT_EQ(headline,
            "allocator: GPU 0 8146.0 MiB reserved, 0.0% fragmented; GPU 1 80302.0 MiB reserved, 0.0% fragmented; GPU 2 "
            "20870.0 MiB reserved, 0.0% fragmented");
  EXPECT_EQ(headline.find("109318"), std::string::npos);
  fs::remove_all(dir);
}

// The bundled H200 page names no path of the machine that recorded its files (GSQ_KERNELS_LIBRARY was one).
TEST(CliReport, TheBundledPageNamesNoPathOfTheRecordingMachine) {
  if (has_nvidia_driver()) GTEST_SKIP() << "an NVIDIA driver is loaded here; the bundled page is the no-GPU fallback";
  const fs::path dir = fs::temp_directory_path() / ("gsq-cli-report-paths-" + std::to_string(::getpid()));
  ASSERT_EQ(run("report -o " + dir.string()).rc, 0);
  const auto j = nlohmann::json::parse(slurp(dir / "report.json"));
  const auto& env = j["sections"]["bench-kernels"]["env_fields"];
  ASSERT_TRUE(env.contains("host.env.GSQ_KERNELS_LIBRARY")) << env.dump();
  EXPECT_EQ(env["host.env.GSQ_KERNELS_LIBRARY"], "libgsqkernels.so");
  for (const auto& file : {"report.json", "report.md", "index.html"})
    EXPECT_EQ(slurp(dir / file).find("/work/"), std::string::npos) << file;
  // The tune profile is checked against the machine running report, so it is not on another machine's page.
  EXPECT_FALSE(j["sections"].contains("tune"));
  fs::remove_all(dir);
}

TEST(CliReport, LabelsAFileRecordedOnAnotherGpu) {
  const fs::path dir = fs::temp_directory_path() / ("gsq-cli-report-label-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string log = temp_file(  // SYNTHETIC: a complete trtexec run on an A100 with a 1 MiB workspace
      "gsq-report-a100.log",
      "&&&& RUNNING TensorRT.trtexec [TensorRT v100100] # trtexec --onnx=m.onnx --memPoolSize=workspace:1\n"
      "[07/07/2026-02:10:45] [I] TensorRT version: 10.1.0\n"
      "[07/07/2026-02:10:45] [I] Selected Device: NVIDIA A100-SXM4-80GB\n"
      "&&&& PASSED TensorRT.trtexec [TensorRT v100100] # trtexec --onnx=m.onnx --memPoolSize=workspace:1\n");
  const auto r = run("report --snapshot " + kFixture + " -o " + dir.string() + " --trt " + log);
  ASSERT_LE(r.rc, 1) << r.err;
  const auto j = nlohmann::json::parse(slurp(dir / "report.json"));
  const std::string md = slurp(dir / "report.md");
  EXPECT_NE(md.find("TensorRT: gsq-report-a100.log (recorded on NVIDIA A100-SXM4-80GB)"), std::string::npos);
  size_t labelled = 0;
  for (const auto& v : j["verdict"])
    if (v["section"] == "trt") {
      EXPECT_EQ(v["recorded_on"], "NVIDIA A100-SXM4-80GB");
      ++labelled;
    } else {
      EXPECT_EQ(v["recorded_on"], "");  // the H200's own findings are not labelled
    }
  EXPECT_GT(labelled, 0u) << j["verdict"].dump();
  fs::remove_all(dir);
}

// report -- CMD: files are judged before the program runs, and the program runs only on this machine's GPU.
TEST(CliReport, RunsTheProgramOnlyAfterEveryFileIsAcceptedAndOnlyOnThisMachine) {
  const fs::path marker = fs::temp_directory_path() / "gsq-cli-report-program-ran";
  fs::remove(marker);
  const std::string corrupt = temp_file("gsq-cli-corrupt-trace.json", "{\"traceEvents\": [");
  // A replayed snapshot is another machine: asking to run the program with it is bad usage.
  auto r = run("report --snapshot " + kFixture + " -o " + (fs::temp_directory_path() / "gsq-cli-rp").string() +
               " -- touch " + marker.string());
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("--snapshot"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(marker));
  if (has_nvidia_driver()) {  // a GPU here: a refused file stops everything before the program starts
    r = run("report -o " + (fs::temp_directory_path() / "gsq-cli-rp").string() + " --trace " + corrupt + " -- touch " +
            marker.string());
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_FALSE(fs::exists(marker)) << "the program ran although a file was refused";
  }
  r = run("report --budget 0 -- touch " + marker.string());
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_FALSE(fs::exists(marker));
  if (!has_nvidia_driver()) {  // no GPU: refused before anything, never the bundled page
    r = run("report -o " + (fs::temp_directory_path() / "gsq-cli-rp").string() + " -- touch " + marker.string());
    EXPECT_EQ(r.rc, 3) << r.err;
    EXPECT_FALSE(fs::exists(marker));
  }
  fs::remove_all(fs::temp_directory_path() / "gsq-cli-rp");
}

// A folder where a file is expected is bad input (exit 2, said as such) for every command that reads one, never an
// internal error.
TEST(Cli, AFolderForAFileIsBadInputEverywhere) {
  const fs::path dir = fs::temp_directory_path() / ("gsq-cli-a-folder-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const std::string cmd : {"memory", "analyze", "nccl analyze", "trt audit", "topo --from", "trace info",
                                "compare", "diff", "report --trace"}) {
    const std::string args =
        cmd == "compare" || cmd == "diff" ? " " + dir.string() + " " + dir.string() : " " + dir.string();
    const auto r = run(cmd + args +
                       (cmd.starts_with("report") ? " --snapshot " + kFixture + " -o " + dir.string() + "/page" : ""));
    EXPECT_EQ(r.rc, 2) << cmd << ": " << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << cmd << ": " << r.err;
  }
  fs::remove_all(dir);
}

// `trace` puts its Python shim on PYTHONPATH (the program sees GSQ_NVTX_MARKERS) unless --no-python-shim; the shim's
// folder is gone when the run ends. Needs the tracer to load (CUPTI), not a GPU.
TEST(Cli, TraceGivesAPythonProgramItsShimUnlessAskedNot) {
  const std::string out = (fs::temp_directory_path() / "gsq-cli-shim.gsqt").string();
  const std::string prog =
      " -- python3 -c \"import os; print(os.environ.get('GSQ_NVTX_MARKERS'), "
      "os.environ.get('PYTHONPATH', '').split(':')[0])\"";
  auto r = run("trace -o " + out + prog);
  if (r.err.find("cannot load the tracer") != std::string::npos || r.err.find("was not found") != std::string::npos)
    GTEST_SKIP() << "the tracer does not load here: " << r.err;
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("1 ")) << r.out;
  const std::string shim_dir = r.out.substr(2, r.out.find('\n') - 2);
  EXPECT_NE(shim_dir.find("gsq-pyshim"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(shim_dir)) << "the shim's folder outlived the run";
  r = run("trace --no-python-shim -o " + out + prog);
  EXPECT_TRUE(r.out.starts_with("None")) << r.out;
}

TEST(Cli, ReportRefusesATorchComparisonWithFieldsOfTheWrongType) {
  const auto bad = temp_file("gsq-bad-torch.json",
                             R"({"schema": "gpusqueeze.torch_compare/1", "rows": [{"op": 3, "ours_gbps": "fast"}]})");
  const auto r =
      run("report -o " + (fs::temp_directory_path() / "gsq-bad-torch-report").string() + " --budget 0 --torch " + bad);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("not a gpusqueeze.torch_compare/1 document"), std::string::npos) << r.err;
  fs::remove_all(fs::temp_directory_path() / "gsq-bad-torch-report");
}

// report --p2p: a saved probe p2p document (one H100, recorded by bench/device/multigpu.sh) becomes step 5's P2P
// section with its four heat maps; a truncated or foreign document is refused with exit 2.
TEST(Cli, ReportDrawsASavedP2pDocument) {
  const fs::path dir = fs::temp_directory_path() / ("gsq-cli-report-p2p-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string p2p = test::fixture("h100-p2p-one-gpu.json").string();
  const auto r = run("report -o " + dir.string() + " --budget 0 --p2p " + p2p);
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(slurp(dir / "report.json"));
  ASSERT_TRUE(j["sections"].contains("p2p")) << j["sections"].dump().substr(0, 300);
  EXPECT_EQ(j["sections"]["p2p"]["schema"], "gpusqueeze.p2p/1");
  EXPECT_NE(j["steps"][5]["status"], "not measured");
  const std::string html = slurp(dir / "index.html");
  for (const char* title : {"P2P copy engine, one way (GB/s)", "P2P copy engine, both ways (GB/s)",
                            "P2P SM copy kernel, one way (GB/s)", "P2P store latency, SM ping-pong, one way (µs)"})
    EXPECT_NE(html.find(title), std::string::npos) << title;
  EXPECT_EQ(run("report -o " + dir.string() + " --p2p " + temp_file("gsq-cut-p2p.json", slurp(p2p).substr(0, 200))).rc,
            2);
  EXPECT_EQ(run("report -o " + dir.string() + " --p2p " + test::fixture("h200-bench-d2d.json").string()).rc,
            2);  // a bench run, not P2P
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
  // The bundled H200 files cover steps 0-4 and field triage; the rest say what would measure them.
  const auto j = nlohmann::json::parse(slurp(dir / "report.json"));
  EXPECT_FALSE(j["this_machine"].get<bool>());
  for (const int step : {0, 1, 2, 3, 4, 8}) EXPECT_NE(j["steps"][step]["status"], "not measured") << step;
  EXPECT_TRUE(j["sections"].contains("bench-mem"));
  EXPECT_TRUE(j["sections"].contains("bench-kernels"));
  EXPECT_TRUE(j["sections"].contains("torch"));  // ours against PyTorch, recorded on the H200
  // Step 4 headlines the kernels against cudaMemcpy measured in the same run (not one kernel's share of HBM).
  const std::string step4 = j["steps"][4].dump();
  EXPECT_NE(step4.find("× cudaMemcpy in the same run (lowest: kernels."), std::string::npos) << step4;
  EXPECT_EQ(j["steps"][5]["status"], "not measured");
  EXPECT_NE(j["steps"][5]["hint"].get<std::string>().find("--topo"), std::string::npos);
  // Every chart on the page has a title and labels (axes' values, a legend or the values themselves).
  const std::string html = slurp(dir / "index.html");
  size_t charts = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    const std::string svg = html.substr(at, html.find("</svg>", at) - at);
    size_t texts = 0;
    for (size_t t = svg.find("<text"); t != std::string::npos; t = svg.find("<text", t + 1)) ++texts;
    EXPECT_GE(texts, 3u) << svg.substr(0, 200);  // a title and at least two labels
    ++charts;
  }
  EXPECT_GE(charts, 30u);
  for (const char* title : {"Critical path of the launching thread", "Top kernels against the roofs",
                            "Ours against PyTorch", "Measured ceilings against the theoretical ones"})
    EXPECT_NE(html.find(title), std::string::npos) << title;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gsq

namespace gsq {
namespace {

const std::string kBenchD2d = test::fixture("h200-bench-d2d.json").string();
const std::string kTorchD2d = test::fixture("h200-torch-d2d.json").string();

TEST(CliCompare, HarnessAndTorchTimingOfTheSameCopyAgree) {
  // Both recorded in one device call: gpusqueeze's cold samples and the Python helper's torch.cuda.Event samples.
  const auto r = run("compare " + kBenchD2d + " " + kTorchD2d + " --json");
  EXPECT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["rows"].empty());
  for (const auto& row : j["rows"]) {
    EXPECT_EQ(row["verdict"], "SAME") << row.dump();
    EXPECT_NEAR(row["ratio"].get<double>(), 1.0, 0.01);
  }
  EXPECT_FALSE(j["regression"].get<bool>());
}

TEST(CliCompare, ARecordedRunAgainstItsHalvedCopyIsARegression) {
  // The recorded eighth-grid copy run against the same run with every sample halved: SLOWER, exit 1.
  auto slow = read_json_file(test::fixture("h200-bench-copy-eighth.json"), "gpusqueeze.bench/1");
  auto quick = slow;
  for (auto& res : quick["results"])
    for (auto& m : res["measurements"])
      for (auto& x : m["samples_ns"]) x = x.get<double>() / 2;  // the same run, every sample halved
  const auto r = run("compare " + temp_file("gsq-quick.json", quick.dump()) + " " +
                     test::fixture("h200-bench-copy-eighth.json").string());
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("SLOWER"), std::string::npos);
}

TEST(CliCompare, BadFilesExit2) {
  EXPECT_EQ(run("compare " + kBenchD2d + " " + kFixture).rc, 2);  // a snapshot is not a bench run
  const std::string text = read_text_file(kBenchD2d);
  EXPECT_EQ(run("compare " + kBenchD2d + " " + temp_file("gsq-half.json", text.substr(0, text.size() / 2))).rc, 2);
}

TEST(CliAnalyze, VerdictAndDiffFromRecordedTraces) {
  const auto a = run("analyze --json " + test::fixture("torch-host-slow.json.gz").string());
  EXPECT_EQ(a.rc, 0) << a.err;
  EXPECT_EQ(nlohmann::json::parse(a.out)["verdict"]["class"], "host-bound");
  const auto d = run("diff " + test::fixture("torch-host-slow.json.gz").string() + " " +
                     test::fixture("torch-host-fixed.json.gz").string());
  EXPECT_EQ(d.rc, 0) << d.err;
  EXPECT_NE(d.out.find("findings gone: pageable-copy, sync-copy"), std::string::npos) << d.out;
}

TEST(CliAnalyze, RooflineFromATraceRecordedWithGpuMetrics) {
  const std::string f = test::fixture("h200-hw-memory.gsqt").string();
  const auto md = run("analyze --roofline " + f);
  ASSERT_EQ(md.rc, 0) << md.err;
  EXPECT_NE(md.out.find("### Roofline (NVIDIA H200, DRAM peak 4814 GB/s)"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("| memory"), std::string::npos) << md.out;
  const auto j = nlohmann::json::parse(run("analyze --json --roofline " + f).out);
  EXPECT_EQ(j["verdict"]["subclass"], "memory");
  EXPECT_EQ(j["roofline"]["points"][0]["bound"], "memory");
  EXPECT_FALSE(nlohmann::json::parse(run("analyze --json " + f).out).contains("roofline"));
  const auto none = run("analyze --roofline " + test::fixture("h200-torch-host.gsqt").string());
  EXPECT_NE(none.out.find("no GPM counters in this trace"), std::string::npos);
  EXPECT_EQ(run("analyze --roofline --roofline-fill 0.2 " + f).rc, 2);
}

TEST(CliExporter, WatcherOptionsAreCheckedBeforeAnythingStarts) {
  EXPECT_EQ(run("exporter --watch-for 10").rc, 2);  // needs --watch-pid
  const auto gone = run("exporter --snapshot " + kFixture + " --watch-pid 999999999");
  EXPECT_EQ(gone.rc, 2);
  EXPECT_NE(gone.err.find("no such process"), std::string::npos) << gone.err;
  EXPECT_EQ(run("exporter --snapshot " + kFixture + " --once --watch-pid 1").rc, 2);
}

TEST(CliAnalyze, BadTracesExit2) {
  EXPECT_EQ(run("analyze " + temp_file("gsq-empty.json", "")).rc, 2);
  EXPECT_EQ(run("analyze " + kFixture).rc, 2);  // a snapshot, not a trace
  const auto r = run("analyze " + temp_file("gsq-cut.json", read_text_file(kBenchD2d).substr(0, 100)));
  EXPECT_EQ(r.rc, 2);
}

// probe nccl --mpi under a real mpirun (Debian's Open MPI): rank 0's ncclGetUniqueId reaches every rank through
// MPI_Bcast (each rank notes the id's first 16 hex digits), then each rank finds no GPU and the job ends with our code.
TEST(CliProbe, MpiHandsRankZerosNcclIdToEveryRank) {
  if (has_nvidia_driver()) GTEST_SKIP() << "a GPU is here: the probe would run (bench/device/multigpu.sh)";
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun (Debian: openmpi-bin)";
  const fs::path plugin = fs::path(GSQ_BINARY).parent_path() / "lib" / "libgsqmpi.so";
  if (!fs::exists(plugin)) GTEST_SKIP() << "built without MPI (Debian: libopenmpi-dev): " << plugin;
  if (run("probe nccl --nccl-library").rc != 0) GTEST_SKIP() << "no NCCL here to make an id";
  const auto r = run("probe nccl --mpi --ops all_reduce",
                     "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader "
                     "mpirun --oversubscribe -np 3");
  EXPECT_EQ(r.rc, 3) << r.err;
  std::set<std::string> ids, ranks;
  for (size_t at = r.err.find("bootstrap id "); at != std::string::npos; at = r.err.find("bootstrap id ", at + 1))
    ids.insert(r.err.substr(at + 13, 16));
  for (size_t at = r.err.find("probe nccl --mpi: rank "); at != std::string::npos;
       at = r.err.find("probe nccl --mpi: rank ", at + 1))
    ranks.insert(r.err.substr(at + 23, 6));
  EXPECT_EQ(ranks.size(), 3U) << r.err;  // "0 of 3", "1 of 3", "2 of 3"
  ASSERT_EQ(ids.size(), 1U) << r.err;    // one id, the same on every rank
  EXPECT_EQ(ids.begin()->find_first_not_of("0123456789abcdef"), std::string::npos) << *ids.begin();
  EXPECT_NE(r.err.find("no CUDA device"), std::string::npos) << r.err;
  // Not with the other ways of forming a job.
  EXPECT_EQ(run("probe nccl --mpi --procs 2").rc, 2);
}

// A copy of the program without its lib/ folder has no MPI plugin: --mpi says so and how to get it.
TEST(CliProbe, MpiWithoutThePluginSaysHowToBuildIt) {
  const fs::path dir = fs::temp_directory_path() / ("gsq-nompi-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(GSQ_BINARY, dir / "gpusqueeze", fs::copy_options::overwrite_existing);
  const std::string cmd =
      (dir / "gpusqueeze").string() + " probe nccl --mpi 2>" + (dir / "err").string() + " >/dev/null";
  const int status = std::system(cmd.c_str());
  const std::string err = slurp(dir / "err");
  fs::remove_all(dir);
  if (err.find("NCCL") == std::string::npos && WEXITSTATUS(status) == 3) {
    EXPECT_NE(err.find("looked in"), std::string::npos) << err;  // NCCL itself missing: said first
    return;
  }
  EXPECT_EQ(WEXITSTATUS(status), 3) << err;
  EXPECT_NE(err.find("no MPI plugin (libgsqmpi.so)"), std::string::npos) << err;
  EXPECT_NE(err.find("libopenmpi-dev"), std::string::npos) << err;
  EXPECT_NE(err.find("--nccl-id-file"), std::string::npos) << err;
}

TEST(CliProbe, MultiGpuProbesFindNcclAndSayWhatTheyNeed) {
  if (has_nvidia_driver()) GTEST_SKIP() << "a GPU is here: the probes would run (bench/device/multigpu.sh)";
  const auto p2p = run("probe p2p");
  EXPECT_EQ(p2p.rc, 3);
  EXPECT_NE(p2p.err.find("no CUDA device"), std::string::npos) << p2p.err;
  // NCCL is found without a GPU (the CUDA toolkit's, Debian's or PyPI's), or its absence is said with the places.
  const auto lib = run("probe nccl --nccl-library");
  if (lib.rc == 0) {
    EXPECT_NE(lib.out.find("NCCL 2."), std::string::npos) << lib.out;
    EXPECT_EQ(run("probe nccl").rc, 3);  // found, but no GPU to drive
  } else {
    EXPECT_EQ(lib.rc, 3);
    EXPECT_NE(lib.err.find("looked in"), std::string::npos) << lib.err;
  }
  const auto missing = run("probe nccl --nccl-library", "GSQ_NCCL_LIBRARY=/nonexistent/libnccl.so.2");
  EXPECT_EQ(missing.rc, 3);
  EXPECT_NE(missing.err.find("/nonexistent/libnccl.so.2: not there"), std::string::npos) << missing.err;
  const auto not_nccl =
      run("probe nccl --nccl-library",
          "GSQ_NCCL_LIBRARY=" + std::string(GSQ_BINARY).substr(0, std::string(GSQ_BINARY).rfind('/')) +
              "/lib/libgsqkernels.so");
  EXPECT_EQ(not_nccl.rc, 3);
  EXPECT_NE(not_nccl.err.find("no ncclGetVersion (not NCCL)"), std::string::npos) << not_nccl.err;
  // The env sweep runs its baseline in a child process first; without a GPU it stops there and says why.
  const auto sweep = run("probe nccl --sweep-env --trials 2");
  EXPECT_EQ(sweep.rc, 3);
  EXPECT_NE(sweep.err.find("the baseline did not run"), std::string::npos) << sweep.err;
  EXPECT_EQ(sweep.err.find("trial 1 of 2…\ngpusqueeze: probe nccl --sweep-env: all_reduce NCCL_ALGO"),
            std::string::npos);  // nothing after the baseline failed
  EXPECT_EQ(run("probe nccl --sweep-env --env NCCL_SOCKET_TIMEOUT=5").rc, 2);
  if (lib.rc == 0) {
    // One process per GPU: the parent's ncclGetUniqueId needs no GPU; each child gets the id and fails at the device.
    const auto procs = run("probe nccl --procs 2");
    EXPECT_EQ(procs.rc, 3);
    EXPECT_NE(procs.err.find("rank 0: exit 3"), std::string::npos) << procs.err;
    EXPECT_NE(procs.err.find("rank 1: exit 3"), std::string::npos) << procs.err;
    const auto bad_id = run("probe nccl --rank 0 --nranks 2 --nccl-id 00ff");
    EXPECT_EQ(bad_id.rc, 2);
    EXPECT_NE(bad_id.err.find("expected 256 hex digits"), std::string::npos) << bad_id.err;
    // Under a launcher: rank 0 writes the id where every rank reads it.
    const auto file = std::filesystem::temp_directory_path() / ("gsq-nccl-id-" + std::to_string(::getpid()));
    const auto rank0 = run("probe nccl --nccl-id-file " + file.string(), "RANK=0 WORLD_SIZE=2");
    EXPECT_EQ(rank0.rc, 3);
    std::string id;
    std::ifstream(file) >> id;
    EXPECT_EQ(id.size(), 256u);
    std::filesystem::remove(file);
    const auto no_launcher = run("probe nccl --nccl-id-file " + file.string(),
                                 "env -u RANK -u WORLD_SIZE -u SLURM_PROCID -u PMI_RANK -u OMPI_COMM_WORLD_RANK");
    EXPECT_EQ(no_launcher.rc, 2);
    EXPECT_NE(no_launcher.err.find("no launcher rank"), std::string::npos) << no_launcher.err;
    EXPECT_FALSE(std::filesystem::exists(file));
  }
  EXPECT_EQ(run("probe nccl --sweep-env --ops all_reduce,all_gather").rc, 2);
}

TEST(CliTrace, PassesTheChildsExitCodeAndSignalThrough) {
  EXPECT_EQ(run("trace -o /tmp/gsq-cli-untraced.gsqt -- sh -c 'exit 7'").rc, 7);
  const fs::path dir = fs::temp_directory_path() / ("gsq-cli-sig-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string cmd =
      std::string(GSQ_BINARY) + " trace -o " + (dir / "t.gsqt").string() + " -- sh -c 'kill -TERM $$' 2>/dev/null";
  const int status = std::system(("exec " + cmd).c_str());
  // The launcher re-raises the child's signal, so the shell sees it killed by SIGTERM (128 + 15).
  EXPECT_TRUE((WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) ||
              (WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM))
      << status;
  fs::remove_all(dir);
}

TEST(CliTrace, UsageErrorsAndConflictingProfilers) {
  auto r = run("trace");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("give the command after --"), std::string::npos) << r.err;
  r = run("trace -- /nonexistent/program");
  EXPECT_EQ(r.rc, 127);
  EXPECT_NE(r.err.find("cannot run /nonexistent/program"), std::string::npos) << r.err;
  r = run("trace --strict -o /tmp/gsq-cli-strict.gsqt -- true", "CUDA_INJECTION64_PATH=/opt/other-tool.so");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("refusing to run untraced"), std::string::npos) << r.err;
  r = run("trace -o /tmp/gsq-cli-lenient.gsqt -- true", "CUDA_INJECTION64_PATH=/opt/other-tool.so");
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.err.find("untraced"), std::string::npos) << r.err;
  r = run("trace --cpu-api everything -- true");
  EXPECT_EQ(r.rc, 2);
  r = run("trace info /etc/hostname");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("not a gpusqueeze trace"), std::string::npos) << r.err;
}

TEST(CliTrace, CaptureOfAnUntracedProcessExplainsAndExits2) {
  const pid_t child = fork();
  if (child == 0) {
    execlp("sleep", "sleep", "30", nullptr);
    _exit(127);
  }
  const auto r = run(fmt::format("capture {} --seconds 0.2 --grace 0.5 --control-dir /tmp", child));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("does not run under `gpusqueeze trace --on-demand`"), std::string::npos) << r.err;
  EXPECT_EQ(run("capture 999999999 --seconds 1").rc, 2);
}

}  // namespace
}  // namespace gsq

namespace gsq {
namespace {

TEST(CliOccupancy, ReadsOurLibraryWithoutAGpuAndRejectsBadInput) {
  EXPECT_EQ(run("occupancy /no/such/file").rc, 2);
  const auto bad = run("occupancy " + temp_file("gsq-not-cuda.txt", "plain text") + " --json");
  EXPECT_NE(bad.rc, 0);
  EXPECT_FALSE(bad.err.empty());
  EXPECT_EQ(run("occupancy " + kFixture + " --block-size 2048").rc, 2);  // CLI11 range check
  const std::string lib = (fs::path(GSQ_BINARY).parent_path() / "lib" / "libgsqkernels.so").string();
  const auto r = run("occupancy " + lib + " row_kernel_wide --json");
  if (r.rc == 3) GTEST_SKIP() << "cuobjdump not found: " << r.err;
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "gpusqueeze.occupancy/1");
  ASSERT_FALSE(j["kernels"].empty());
  for (const auto& k : j["kernels"]) {
    EXPECT_NE(k["kernel"].get<std::string>().find("row_kernel_wide"), std::string::npos);
    EXPECT_EQ(k["local_bytes"], 0);
    EXPECT_GT(k["occupancy"]["blocks_per_sm"].get<int>(), 0);
  }
  EXPECT_EQ(run("occupancy " + lib + " 'no_kernel_by_this_name'").rc, 2);
}

TEST(CliKernels, ListsBothSuitesAndSaysWhenThereIsNoGpu) {
  const auto list = run("kernels --list");
  EXPECT_EQ(list.rc, 0);
  EXPECT_NE(list.out.find("kernels.softmax_dropout"), std::string::npos);
  const auto quant = run("kernels --suite quant --list");
  EXPECT_NE(quant.out.find("quant.w4a16"), std::string::npos);
  EXPECT_EQ(run("kernels --suite nope").rc, 2);
  if (!has_nvidia_driver()) {
    const auto r = run("kernels -b softmax");
    EXPECT_EQ(r.rc, 3) << r.err;
    EXPECT_NE(r.err.find("no NVIDIA GPU"), std::string::npos);
  }
}

TEST(CliTriage, MemoryRefusesWhatIsNotASnapshotAndCodeInAPickle) {
  EXPECT_EQ(run("memory " + temp_file("gsq-empty.pickle", "")).rc, 2);
  const auto code = run("memory " + temp_file("gsq-code.pickle", "cos\nsystem\n(S'true'\ntR."));  // SYNTHETIC
  EXPECT_EQ(code.rc, 2);
  EXPECT_NE(code.err.find("GLOBAL"), std::string::npos) << code.err;
  EXPECT_EQ(run("memory " + kFixture).rc, 2);  // JSON, not a pickle
}

// A pasted OOM error from the OOM corpus (tests/data/oom/, huggingface/trl #4237: test workers sharing one GPU): read
// by `memory` and by `report --memory`, exit 1 for the failure it records; text without one is refused.
TEST(CliTriage, MemoryReadsAPastedOomErrorAndReportCarriesIt) {
  const std::string oom = (fs::path(GSQ_SOURCE_DIR) / "tests/data/oom/trl4237_ci_xdist_workers_one_gpu.log").string();
  const auto r = run("memory " + oom + " --json");
  EXPECT_EQ(r.rc, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "gpusqueeze.oom/1");
  EXPECT_EQ(j["findings"][0]["id"], "oom-other-process");
  EXPECT_EQ(run("memory " + temp_file("gsq-not-oom.txt", "loss 0.31 step 10\n")).rc, 2);
  const fs::path out = fs::temp_directory_path() / ("gsq-rep-oom-" + std::to_string(::getpid()));
  const auto rep = run("report --snapshot " + kFixture + " -o " + out.string() + " --memory " + oom);
  EXPECT_EQ(rep.rc, 1) << rep.err;  // a fail-level finding on the page
  const auto page = nlohmann::json::parse(read_text_file(out / "report.json"));
  EXPECT_TRUE(page["sections"].contains("memory")) << page["sections"].dump().substr(0, 400);
  fs::remove_all(out);
}

TEST(CliTriage, ReportCarriesJitterAndMemorySections) {
  const fs::path out = fs::temp_directory_path() / ("gsq-rep-triage-" + std::to_string(::getpid()));
  std::string args = "report --snapshot " + kFixture + " -o " + out.string() + " --jitter " +
                     test::fixture("h200-hw-matmul.gsqt").string();
  const fs::path snapshot = test::shared_data("pytorch-snapshots/magma27_cached_90pct_inactive.pickle");
  const bool with_memory = fs::exists(snapshot);
  if (with_memory) args += " --memory " + snapshot.string();
  const auto r = run(args);
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string md = slurp(out / "report.md");
  // Named without an absolute path: by its file name, or relative to the directory the test runs in.
  const auto jitter = md.find("clock jitter: ");
  ASSERT_NE(jitter, std::string::npos);
  const std::string named = md.substr(jitter + 14, md.find_first_of(" \n", jitter + 14) - jitter - 14);
  EXPECT_TRUE(named.ends_with("h200-hw-matmul.gsqt") && !named.starts_with("/")) << named;
  EXPECT_NE(md.find("sw_power_cap"), std::string::npos);
  if (with_memory) {
    EXPECT_NE(md.find("PyTorch allocator: magma27"), std::string::npos);
  }
  fs::remove_all(out);
}

TEST(CliTriage, TrtAuditExitsOneOnTheTinyWorkspaceAndTwoOnWhatIsNotALog) {
  const fs::path log = test::shared_data("trtexec/nvidia-cookbook-result-02.log");
  if (fs::exists(log)) {
    const auto r = run("trt audit " + log.string());
    EXPECT_EQ(r.rc, 1) << r.err;
    EXPECT_NE(r.out.find("trt-workspace-tiny"), std::string::npos);
  }
  EXPECT_EQ(run("trt audit " + kFixture).rc, 2);        // JSON, not a log
  const std::string cut = temp_file("gsq-trt-cut.log",  // SYNTHETIC: a log cut inside its run
                                    "&&&& RUNNING TensorRT.trtexec [TensorRT v101601] # trtexec --onnx=m.onnx\n"
                                    "[07/07/2026-02:10:45] [I] === Build Opt");
  const auto truncated = run("trt audit " + cut);
  EXPECT_EQ(truncated.rc, 2);
  EXPECT_NE(truncated.err.find("truncated"), std::string::npos) << truncated.err;
  EXPECT_EQ(run("trt audit --partial " + cut).rc, 0);
  EXPECT_EQ(run("trt").rc, 2);
}

TEST(CliTopo, PastedMatrixIsReadAndWhatIsNotOneIsRefused) {
  const std::string pasted = temp_file("gsq-topo.txt",  // SYNTHETIC: two GPUs on two sockets
                                       "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tSYS\t0-7\nGPU1\tSYS\t X \t8-15\n");
  const auto r = run("topo --from " + pasted);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("topo-cross-socket"), std::string::npos);
  if (!has_nvidia_driver()) {
    const auto live = run("topo");  // the live topology needs the driver's NVML: exit 3 with the reason
    EXPECT_EQ(live.rc, 3);
    EXPECT_NE(live.err.find("no NVIDIA driver"), std::string::npos) << live.err;
  }
  EXPECT_EQ(run("topo --from " + kFixture).rc, 2);
}

TEST(CliTriage, JitterReadsARecordingAndWantsExactlyOneSource) {
  const auto r = run("jitter --json " + test::fixture("h200-hw-matmul.gsqt").string());
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("\"power-capped\""), std::string::npos);
  EXPECT_EQ(run("jitter").rc, 2);
  EXPECT_EQ(run("jitter --seconds 1 " + test::fixture("h200-hw-matmul.gsqt").string()).rc, 2);
  EXPECT_EQ(run("jitter " + kFixture).rc, 2);  // not a trace
  // `-- COMMAND`: the command's first word is not a file to read (the device run found `jitter -- python3 …` refused).
  if (!has_nvidia_driver()) {
    for (const char* cmd : {"jitter -o /tmp/gsq-j.gsqt -- sleep 1", "jitter -- python3 -c pass", "jitter -- true"}) {
      const auto j = run(cmd);
      EXPECT_EQ(j.rc, 3) << cmd << ": " << j.err;  // it got as far as opening NVML to sample
      EXPECT_NE(j.err.find("NVIDIA driver"), std::string::npos) << j.err;
    }
  }
}

}  // namespace
}  // namespace gsq

namespace gsq {
namespace {

TEST(CliReport, OpensWithARankedVerdictAndStepCardsAndNamesNoAbsolutePath) {
  const fs::path shared = test::shared_data("");
  const fs::path topo = shared / "nccl" / "topo_8gpu_h100_hgx_10nic.txt";
  const fs::path nccl = shared / "nccl" / "pytorch_watchdog_timeout_p2p_hang_nccl1509.log";
  if (!fs::exists(topo) || !fs::exists(nccl)) GTEST_SKIP() << "../shared/data/nccl is not here";
  const fs::path out = fs::temp_directory_path() / ("gsq-rep-verdict-" + std::to_string(::getpid()));
  const std::string trace = test::fixture("torch-host-slow.json.gz").string();
  // Every input by absolute path; the same trace twice (two sections, two ids).
  const auto r = run("report --snapshot " + fs::absolute(kFixture).string() + " -o " + out.string() + " --trace " +
                     fs::absolute(trace).string() + " --trace " + fs::absolute(trace).string() + " --topo " +
                     fs::absolute(topo).string() + " --nccl " + fs::absolute(nccl).string());
  ASSERT_EQ(r.rc, 1) << r.err;  // the page is written, with a fail-level finding on it
  const std::string md = slurp(out / "report.md"), html = slurp(out / "index.html"),
                    json_text = slurp(out / "report.json");
  const std::vector<std::string> machine_paths = {fs::weakly_canonical(shared).string(), std::string(GSQ_SOURCE_DIR),
                                                  out.string()};
  for (const auto& p : machine_paths)
    for (const auto* text : {&md, &html, &json_text}) EXPECT_EQ(text->find(p), std::string::npos) << p;
  EXPECT_EQ(md.find("host-bound — host-bound"), std::string::npos);  // the verdict is said once
  EXPECT_NE(md.find("Verdict: host-bound"), std::string::npos);

  const auto j = nlohmann::json::parse(json_text);
  EXPECT_FALSE(j["this_machine"].get<bool>());  // replayed from a snapshot
  ASSERT_FALSE(j["verdict"].empty());
  ASSERT_LE(j["verdict"].size(), 5U);
  // The watchdog timeout is the one failure: it opens the page, and the verdict never gets better down the list.
  EXPECT_EQ(j["verdict"][0]["finding"]["id"], "nccl-watchdog-timeout");
  EXPECT_EQ(j["verdict"][0]["more"], "gpusqueeze nccl analyze " + nccl.filename().string());
  for (size_t i = 1; i < j["verdict"].size(); ++i)
    EXPECT_LE(severity_from_string(j["verdict"][i]["finding"]["severity"].get<std::string>()),
              severity_from_string(j["verdict"][i - 1]["finding"]["severity"].get<std::string>()));
  ASSERT_EQ(j["steps"].size(), 9U);
  EXPECT_EQ(j["steps"][5]["status"], "fix");
  EXPECT_EQ(j["steps"][5]["sections"], nlohmann::json::array({"topo", "nccl"}));
  EXPECT_EQ(j["steps"][3]["status"], "not measured");
  EXPECT_TRUE(j["sections"].contains("locate"));
  EXPECT_TRUE(j["sections"].contains("locate-2"));
  // By its file name, or relative to the directory the test runs in: never an absolute path of this machine.
  const auto origin = j["sections"]["locate"]["origin"].get<std::string>();
  EXPECT_TRUE(origin.ends_with("torch-host-slow.json.gz") && !origin.starts_with("/")) << origin;
  fs::remove_all(out);
}

}  // namespace
}  // namespace gsq

namespace gsq {
namespace {

TEST(CliWhatIf, DiffChecksThePredictionOfTheAppliedFixesAgainstTheAfterTrace) {
  const auto slow = test::fixture("torch-host-slow.json.gz").string(),
             fixed = test::fixture("torch-host-fixed.json.gz").string();
  const auto r = run("diff --json --fixes sync,pinned,fuse " + slow + " " + fixed);
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_LT(std::abs(j["prediction"]["error"].get<double>()), 0.03) << j["prediction"].dump();
  EXPECT_FALSE(j["prediction"]["model_failure"].get<bool>());
  // Claiming the wrong fix (a CUDA graph, which the fixed loop does not use) misses by over 10%: a model failure,
  // said in the text too.
  const auto wrong = run("diff --json --fixes graphs " + slow + " " + fixed);
  ASSERT_EQ(wrong.rc, 0) << wrong.err;
  EXPECT_TRUE(nlohmann::json::parse(wrong.out)["prediction"]["model_failure"].get<bool>()) << wrong.out;
  const auto text = run("diff --fixes graphs " + slow + " " + fixed).out;
  EXPECT_NE(text.find("model failure"), std::string::npos) << text;
  // …and the fixed loop runs fewer kernels a step (it fused them), which graphs alone would not: said as such.
  EXPECT_TRUE(nlohmann::json::parse(wrong.out)["prediction"].contains("kernels_per_step_ratio")) << wrong.out;
  EXPECT_NE(text.find("the change did more than these fixes"), std::string::npos) << text;
  EXPECT_FALSE(j["prediction"].contains("kernels_per_step_ratio")) << j["prediction"].dump();  // fuse was claimed
  const auto w = run("analyze --json --what-if sync,pinned,fuse " + slow);
  ASSERT_EQ(w.rc, 0) << w.err;
  const auto a = nlohmann::json::parse(w.out);
  EXPECT_EQ(a["verdict"]["class"], "host-bound");
  EXPECT_EQ(a["critical_path"]["verdict"], "host-bound");
  EXPECT_EQ(a["what_if"]["rows"].size(), 5u);
  EXPECT_EQ(run("analyze --what-if everything " + slow).rc, 2);
}

// One log per rank, as Slurm or torchrun --log-dir write them (here torchtune#2093's log split by its [rankN]:
// prefix): neither file alone shows a rank behind; read together, the job section names rank 0, and the run fails.
TEST(CliNccl, LogsOfSeveralRanksAreComparedTogether) {
  std::ifstream in(fs::path(GSQ_SOURCE_DIR) /
                   "tests/data/triage/torch-dist/torchtune2093_checkpoint_save_rank0_behind_rank3.log");
  const fs::path dir = fs::temp_directory_path() / ("gsq-cli-ranks-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream r0(dir / "rank0.log"), r3(dir / "rank3.log");
    for (std::string line; std::getline(in, line);) (line.starts_with("[rank0]") ? r0 : r3) << line << '\n';
  }
  const auto r0 = (dir / "rank0.log").string(), r3 = (dir / "rank3.log").string();
  const auto alone = run("nccl analyze --json " + r0);
  EXPECT_EQ(alone.out.find("nccl-lagging-rank"), std::string::npos);
  const auto both = run("nccl analyze --json " + r0 + " " + r3);
  EXPECT_EQ(both.rc, 1) << both.err;
  const auto j = nlohmann::json::parse(both.out);
  ASSERT_EQ(j.size(), 3U);  // each file, then the job
  EXPECT_EQ(j[2]["origin"], "all 2 files, ranks compared");
  ASSERT_EQ(j[2]["findings"].size(), 1U);
  EXPECT_EQ(j[2]["findings"][0]["id"], "nccl-lagging-rank");
  EXPECT_NE(j[2]["findings"][0]["title"].get<std::string>().find("Rank 0 completed fewer"), std::string::npos);
  fs::remove_all(dir);
}

// The untraced step the user measured sets the recorder's correction; --recorder-cost 0 judges the host as recorded;
// a step that is not a positive number is refused.
TEST(CliWhatIf, TheUntracedStepAndTheRecordersCostAreTheUsersToGive) {
  const auto slow = test::fixture("torch-host-slow.json.gz").string();
  const auto given = run("analyze --json --untraced-step 4.806 " + slow);
  ASSERT_EQ(given.rc, 0) << given.err;
  const auto g = nlohmann::json::parse(given.out)["critical_path"];
  EXPECT_NE(g["correction"].get<std::string>().find("untraced step given (4.806 ms)"), std::string::npos) << g.dump();
  EXPECT_NEAR(g["untraced_step_p50_ns"].get<double>() / 4.806e6, 1.0, 0.01);
  const auto none = run("analyze --json --recorder-cost 0 " + slow);
  ASSERT_EQ(none.rc, 0) << none.err;
  const auto n = nlohmann::json::parse(none.out)["critical_path"];
  EXPECT_EQ(n["host_scale"].get<double>(), 1.0);
  EXPECT_EQ(n["untraced_step_p50_ns"], n["replayed_step_p50_ns"]);
  const auto plain = nlohmann::json::parse(run("analyze --json " + slow).out)["critical_path"];
  EXPECT_LT(plain["host_scale"].get<double>(), 1.0);  // the corpus's cost per record comes out by default
  EXPECT_EQ(run("analyze --untraced-step -3 " + slow).rc, 2);
  EXPECT_EQ(run("analyze --recorder-cost fast " + slow).rc, 2);
}

TEST(CliTune, KeysListTheRejectedKnobsAndApplyWithoutYesWritesNothing) {
  const auto keys = run("tune keys");
  ASSERT_EQ(keys.rc, 0);
  EXPECT_NE(keys.out.find("CUDA_MALLOC_PER_BLOCK"), std::string::npos);
  const fs::path root = fs::temp_directory_path() / ("gsq-cli-tune-" + std::to_string(::getpid()));
  fs::create_directories(root / "proc/sys/kernel");
  std::ofstream(root / "proc/sys/kernel/numa_balancing") << "1\n";
  const auto profile = temp_file("gsq-cli-tune.toml", "[host]\nnuma_balancing = 0\n");
  const auto fake = (root / "fake-gpu.json").string();
  const auto plan = run("tune apply " + profile + " --root " + root.string(), "GSQ_TUNE_FAKE_GPU=" + fake);
  EXPECT_EQ(plan.rc, 0) << plan.err;
  EXPECT_NE(plan.out.find("Nothing was written"), std::string::npos);
  EXPECT_EQ(slurp(root / "proc/sys/kernel/numa_balancing"), "1\n");
  const auto verify = run("tune verify " + profile + " --root " + root.string(), "GSQ_TUNE_FAKE_GPU=" + fake);
  EXPECT_EQ(verify.rc, 1);  // numa_balancing is 1, the profile says 0
  EXPECT_NE(verify.out.find("failed   host.numa_balancing = 1, expected 0"), std::string::npos) << verify.out;
  const auto yes = run("tune apply " + profile + " --yes --root " + root.string(), "GSQ_TUNE_FAKE_GPU=" + fake);
  EXPECT_EQ(yes.rc, 0) << yes.out << yes.err;
  EXPECT_EQ(slurp(root / "proc/sys/kernel/numa_balancing"), "0\n");
  EXPECT_EQ(run("tune rollback --yes --root " + root.string(), "GSQ_TUNE_FAKE_GPU=" + fake).rc, 0);
  EXPECT_EQ(slurp(root / "proc/sys/kernel/numa_balancing"), "1\n");
  const auto bad = run("tune verify " + temp_file("gsq-bad.toml", "[host]\nnuma = 1\n"));
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("gsq-bad.toml:2:8: host.numa: unknown setting"), std::string::npos) << bad.err;
  fs::remove_all(root);
}

// SYNTHETIC logs of one job's two ranks: rank 0's watchdog record, rank 1's own script output only (the rank that hung
// prints nothing NCCL would). The folder is read with rank 1 left out and said so; a folder with nothing readable, or
// rank 1's file alone, is refused.
TEST(Cli, NcclAnalyzeReadsAFolderOfRanksLeavingOutAQuietOne) {
  const fs::path dir = fs::temp_directory_path() / ("gsq-ranks-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "rank0.log")
      << "[rank0]:[E1204 10:00:00.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
         "timeout: WorkNCCL(SeqNum=4, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for "
         "600001 milliseconds before timing out.\n";
  std::ofstream(dir / "rank1.log") << "[Rank 1] Phase 1 complete\n[Rank 1] entering a long sleep\n";
  auto r = run("nccl analyze " + dir.string());
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.out.find("nccl-watchdog-timeout"), std::string::npos);
  EXPECT_NE(r.err.find("rank1.log"), std::string::npos);
  EXPECT_NE(r.err.find("left out"), std::string::npos);
  EXPECT_EQ(run("nccl analyze " + (dir / "rank1.log").string()).rc, 2);
  fs::remove(dir / "rank0.log");
  r = run("nccl analyze " + dir.string());
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("rank1.log: no NCCL"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gsq
