// Exporter and rules: the exposition of the H200 snapshot, promtool's verdict on it and on the committed rules,
// and the HTTP server end to end (replaying the snapshot, so no GPU is needed).
#include "core/error.hpp"
#include "core/json_io.hpp"
#include "monitor/deadline.hpp"
#include "monitor/header_gate.hpp"
#include "monitor/metrics.hpp"
#include "monitor/rules.hpp"
#include "monitor/tune_metrics.hpp"
#include "monitor/watch.hpp"
#include "support/fixtures.hpp"

#include <gpusqueeze/latency_histogram.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <regex>
#include <thread>

extern char** environ;

namespace gsq::monitor {
namespace {

namespace fs = std::filesystem;

bool have_promtool() {
  return std::system("command -v promtool >/dev/null 2>&1") == 0;
}

TEST(Metrics, H200SnapshotExposesTheMethodsSignalsInBaseUnits) {
  const auto text = render_metrics(test::edited("/captured_at", "2026-12-02T00:00:00Z"), {}, SelfStats{});
  for (const char* name :
       {"gsq_gpu_info{", "gsq_gpu_memory_used_bytes{", "gsq_gpu_sm_clock_hertz{", "gsq_gpu_clock_event_active{",
        "reason=\"sw_thermal_slowdown\"", "gsq_gpu_power_watts{", "gsq_gpu_temperature_slowdown_margin_celsius{",
        "gsq_gpu_pcie_link_width_max{", "gsq_gpu_ecc_errors_total{", "gsq_exporter_collection_errors_total{"})
    EXPECT_NE(text.find(name), std::string::npos) << name;
  EXPECT_NE(text.find("model=\"NVIDIA H200\""), std::string::npos);
  EXPECT_NE(text.find("gsq_gpu_memory_clock_hertz{gpu=\"0\""), std::string::npos);
  EXPECT_NE(text.find("} 3201000000\n"), std::string::npos) << "3201 MHz in hertz";
  EXPECT_EQ(text.find("gsq_gpu_energy_joules_total"), std::string::npos) << "a replayed snapshot has no counters";
}

TEST(Metrics, UnsupportedValuesAreAbsentNotSentinels) {
  const auto snap = test::edited("/gpus/0/power_draw_w", nlohmann::json{{"unsupported", "NVML_ERROR_NOT_SUPPORTED"}});
  const auto text = render_metrics(snap, {}, SelfStats{});
  EXPECT_EQ(text.find("gsq_gpu_power_watts"), std::string::npos);
  EXPECT_NE(text.find("gsq_gpu_power_limit_watts"), std::string::npos);
}

TEST(Metrics, MigInstancesAreSeriesOfTheirGpuWithTheirOwnLabels) {
  EXPECT_NE(render_metrics(test::edited("/captured_at", "2026-12-02T00:00:00Z"), {}, SelfStats{})
                .find("gsq_gpu_mig_enabled{gpu=\"0\",uuid=\"GPU-"),
            std::string::npos)
      << "the recorded H200 had MIG off: the mode is there, 0";
  // MIG was off on the card the snapshot was recorded on, so the instance is made up here: the test is about names
  // and labels, and its size is the whole GPU's.
  auto j = test::h200_snapshot_json();
  const nlohmann::json mig = {
      {"index", 1}, {"uuid", "MIG-x\"y"}, {"memory_total_bytes", j["gpus"][0]["memory_total_bytes"]}};
  j["gpus"][0]["mig_mode_current"] = true;
  j["gpus"][0]["mig_instances"] = nlohmann::json::array({mig});
  const std::string text = render_metrics(gpu::snapshot_from_json(j, "MIG on"), {}, SelfStats{});
  EXPECT_NE(text.find("gsq_gpu_mig_enabled{gpu=\"0\""), std::string::npos);
  const std::regex series(R"(gsq_gpu_mig_memory_total_bytes\{gpu="0",uuid="GPU-[^"]+",model="NVIDIA H200",)"
                          R"(hostname="[^"]*",mig_instance="1",mig_uuid="MIG-x\\"y"\} \d+)");
  EXPECT_TRUE(std::regex_search(text, series)) << text.substr(text.find("gsq_gpu_mig"), 400);
}

TEST(Metrics, LabelValuesAreEscaped) {
  EXPECT_EQ(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

TEST(Metrics, PromtoolAcceptsTheExposition) {
  if (!have_promtool())
    GTEST_SKIP() << "promtool not installed (Debian package prometheus; scripts/setup.sh installs it)";
  const fs::path out = fs::temp_directory_path() / "gsq-metrics.txt";
  const std::string cmd = std::string(GSQ_BINARY) + " exporter --once --snapshot " +
                          test::fixture("h200-snapshot.json").string() + " > " + out.string() +
                          " && promtool check metrics < " + out.string() + " > " + out.string() + ".lint 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << read_text_file(out.string() + ".lint");
  EXPECT_EQ(read_text_file(out.string() + ".lint"), "") << "promtool lint findings";
}

// `gpusqueeze exporter --once` on the H200 while hw_target ran a bf16 GEMM (bench/device/monitor.sh).
std::string recorded_gemm_exposition() {
  return read_text_file(test::fixture("h200-exporter-gemm.txt"));
}

double sample_value(const std::string& text, const std::string& series_prefix) {
  const auto at = text.find("\n" + series_prefix);
  if (at == std::string::npos) return -1;
  const auto eol = text.find('\n', at + 1);
  const std::string line = text.substr(at + 1, eol - at - 1);
  return std::stod(line.substr(line.rfind(' ') + 1));
}

TEST(Metrics, RecordedGemmExpositionShowsGpmActivityAndPassesPromtool) {
  const std::string text = recorded_gemm_exposition();
  EXPECT_GT(sample_value(text, "gsq_gpu_sm_active_ratio{"), 0.9);
  EXPECT_GT(sample_value(text,
                         "gsq_gpu_pipe_active_ratio{gpu=\"0\",uuid=\"GPU-fbbcc721-9b6e-3af4-d8c0-8103618ec2ba\","
                         "model=\"NVIDIA H200\",hostname=\"vm\",pipe=\"tensor\"}"),
            0.9);
  EXPECT_EQ(sample_value(text, "gsq_gpu_xid_events_total{"), 0);
  EXPECT_EQ(text.find("gsq_gpu_last_xid{"), std::string::npos);  // no XID yet: absent, not 0
  EXPECT_EQ(text.find("NaN"), std::string::npos);
  if (!have_promtool()) GTEST_SKIP() << "promtool not installed (Debian package prometheus)";
  EXPECT_EQ(
      std::system(("promtool check metrics < " + test::fixture("h200-exporter-gemm.txt").string() + " >/dev/null 2>&1")
                      .c_str()),
      0);
}

TEST(Metrics, GpmAndXidReadingsRenderAsTheirFamilies) {
  const auto snap = gpu::load_snapshot(test::fixture("h200-snapshot.json").string());
  const std::string rec = recorded_gemm_exposition();
  gpu::Counters c;
  c.gpm = {{"sm_active", sample_value(rec, "gsq_gpu_sm_active_ratio{")},
           {"sm_occupancy", sample_value(rec, "gsq_gpu_sm_occupancy_ratio{")},
           {"dram_bandwidth_utilization", sample_value(rec, "gsq_gpu_dram_bandwidth_utilization_ratio{")},
           {"tensor_active", 0.9353815425187595},
           {"nvlink_tx", 0}};
  c.xid_events = uint64_t{1};
  c.last_xid = uint64_t{79};
  const std::string text = render_metrics(snap, {c}, SelfStats{});
  EXPECT_NE(text.find("# TYPE gsq_gpu_sm_active_ratio gauge"), std::string::npos);
  EXPECT_NE(text.find(",pipe=\"tensor\"} 0.9353815425187595"), std::string::npos);
  EXPECT_NE(text.find("gsq_gpu_nvlink_tx_bytes_per_second{"), std::string::npos);
  EXPECT_NE(text.find("# TYPE gsq_gpu_xid_events_total counter"), std::string::npos);
  EXPECT_NE(text.find("} 79\n"), std::string::npos);
  EXPECT_EQ(text.find("gsq_exporter_captures_total"), std::string::npos);  // no watcher attached
  SelfStats watching;
  watching.watching = true;
  EXPECT_NE(render_metrics(snap, {}, watching).find("gsq_exporter_captures_total"), std::string::npos);
}

// The watcher over collections made of the H200 snapshot plus SM activity readings taken on the device: 0.055 (the
// PyTorch server loop of bench/exporter/torch_server.py) and 0.963 (a bf16 GEMM).
Collection collection_with_sm_active(std::optional<double> sm_active, int pid_on_gpu = 0) {
  Collection c{gpu::load_snapshot(test::fixture("h200-snapshot.json").string()), {gpu::Counters{}}, {}};
  if (sm_active) c.counters[0].gpm = {{"sm_active", *sm_active}};
  if (pid_on_gpu) {
    gpu::GpuProcess p;
    p.pid = static_cast<uint32_t>(pid_on_gpu);
    c.snapshot.gpus[0].processes = std::vector<gpu::GpuProcess>{p};
  }
  return c;
}

TEST(Watcher, CapturesAfterTheGpuStaysUnderusedThenWaitsOutTheCooldown) {
  WatchOptions o;
  o.pid = 4242, o.below = 0.5, o.for_s = 60, o.cooldown_s = 600;
  Watcher w(o);
  const auto idle = collection_with_sm_active(0.055, 4242), busy = collection_with_sm_active(0.963, 4242);
  EXPECT_FALSE(w.observe(idle, 0));
  EXPECT_FALSE(w.observe(idle, 59));
  EXPECT_NE(w.last_reading().find("SM activity 6% (GPU 0)"), std::string::npos) << w.last_reading();
  EXPECT_TRUE(w.observe(idle, 60));
  w.captured(60);
  EXPECT_FALSE(w.observe(idle, 200));  // under-used again, but within the cooldown
  EXPECT_FALSE(w.observe(idle, 659));
  EXPECT_TRUE(w.observe(idle, 661));
  w.captured(661);
  // A busy collection restarts the clock.
  EXPECT_FALSE(w.observe(idle, 1300));
  EXPECT_FALSE(w.observe(busy, 1330));
  EXPECT_FALSE(w.observe(idle, 1340));
  EXPECT_FALSE(w.observe(idle, 1399));
  EXPECT_TRUE(w.observe(idle, 1400));
}

TEST(Watcher, FallsBackToNvmlUtilizationAndToAllGpusAndSaysSo) {
  WatchOptions o;
  o.pid = 99, o.for_s = 0;
  Watcher w(o);
  // No GPM reading: NVML utilization of the snapshot (0% on that idle H200); pid 99 is not on any GPU.
  EXPECT_TRUE(w.observe(collection_with_sm_active(std::nullopt), 0));
  EXPECT_NE(w.last_reading().find("NVML utilization 0%"), std::string::npos) << w.last_reading();
  EXPECT_NE(w.last_reading().find("not in NVML's process list"), std::string::npos) << w.last_reading();
  Collection none = collection_with_sm_active(std::nullopt);
  none.snapshot.gpus[0].utilization_gpu_pct = Field<uint32_t>::none("NVML_ERROR_NOT_SUPPORTED");
  EXPECT_FALSE(w.observe(none, 1));
  EXPECT_NE(w.last_reading().find("no SM activity"), std::string::npos);
}

TEST(Watcher, CaptureOfAProcessNotTracedOnDemandFailsClearly) {
  // The test binary itself: alive, but nobody answers its control file.
  const auto dir = fs::temp_directory_path() / "gsq-watch-ctl";
  fs::create_directories(dir);
  try {
    (void)capture_and_analyze(static_cast<int>(getpid()), 0.1, dir, 0.3, [](const std::string&) {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("on-demand"), std::string::npos) << e.what();
  }
}

TEST(Rules, CommittedRuleFileIsWhatTheGeneratorWrites) {
  RulesOptions o;
  o.baseline_p99_s = 0.050;
  o.baseline_origin = "--baseline-p99 0.05";
  EXPECT_EQ(generate_rules(o), read_text_file(fs::path(GSQ_SOURCE_DIR) / "deploy/prometheus/gpusqueeze-rules.yml"))
      << "regenerate: gpusqueeze rules generate --baseline-p99 0.050 -o deploy/prometheus/gpusqueeze-rules.yml";
  o.baseline_p99_s = 0;
  EXPECT_THROW((void)generate_rules(o), Error);
}

TEST(Rules, PromtoolUnitTestsPass) {
  if (!have_promtool())
    GTEST_SKIP() << "promtool not installed (Debian package prometheus; scripts/setup.sh installs it)";
  const std::string dir = (fs::path(GSQ_SOURCE_DIR) / "deploy/prometheus").string();
  const std::string log = (fs::temp_directory_path() / "gsq-promtool.log").string();
  EXPECT_EQ(std::system(("cd " + dir + " && promtool check rules gpusqueeze-rules.yml > " + log +
                         " 2>&1 && promtool test rules gpusqueeze-rules.test.yml >> " + log + " 2>&1")
                            .c_str()),
            0)
      << read_text_file(log);
}

// Starts `args` with stdout and stderr to `log`; returns its pid, or -1.
pid_t spawn(std::vector<std::string> args, const fs::path& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

// An exporter replaying the H200 snapshot on a port of its choosing (`--listen 127.0.0.1:0`): no port picked here
// can be taken by a test running beside this one.
struct SpawnedExporter {
  pid_t pid = -1;
  int port = -1;  // -1: it printed no `serving` line within 10 s
  fs::path log;
};

// The port an exporter logs in `serving http://127.0.0.1:PORT/metrics`, waiting up to 10 s; -1 if none.
int served_port(pid_t pid, const fs::path& log) {
  const std::regex serving(R"(serving http://127\.0\.0\.1:(\d+)/metrics)");
  for (int i = 0; i < 200; ++i) {
    std::smatch m;
    const std::string text = fs::exists(log) ? read_text_file(log) : "";
    if (std::regex_search(text, m, serving)) return std::stoi(m[1].str());
    if (waitpid(pid, nullptr, WNOHANG) == pid) return -1;  // exited (reaped here; the caller's kill is then a no-op)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return -1;
}

SpawnedExporter spawn_exporter(std::vector<std::string> extra = {}) {
  static int n = 0;
  SpawnedExporter e;
  e.log =
      fs::temp_directory_path() / ("gsq-exporter-" + std::to_string(::getpid()) + "-" + std::to_string(n++) + ".log");
  std::vector<std::string> args = {
      GSQ_BINARY, "exporter",    "--snapshot", test::fixture("h200-snapshot.json").string(),
      "--listen", "127.0.0.1:0", "--interval", "0.2"};
  args.insert(args.end(), extra.begin(), extra.end());
  e.pid = spawn(std::move(args), e.log);
  if (e.pid > 0) e.port = served_port(e.pid, e.log);
  return e;
}

// The first answer of /metrics, waiting up to 5 s for the exporter to listen.
httplib::Result first_metrics(httplib::Client& cli) {
  cli.set_connection_timeout(1, 0);
  auto res = cli.Get("/metrics");
  for (int i = 0; i < 50 && !res; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    res = cli.Get("/metrics");
  }
  return res;
}

// A TCP connection to 127.0.0.1:`port` (-1 on failure).
int connect_loopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

// Whether the peer closed `fd` (recv returns 0 or an error) within `seconds`.
bool closed_by_peer(int fd, int seconds) {
  timeval tv{seconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buf[256];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0) return true;
    if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
  }
}

// `n` connections to 127.0.0.1:`port` that each send `part` of a request and nothing more (fewer on failure).
std::vector<int> stalled_clients(int port, int n, const std::string& part) {
  std::vector<int> fds;
  for (int i = 0; i < n; ++i) {
    const int fd = connect_loopback(port);
    if (fd < 0) break;
    if (send(fd, part.data(), part.size(), 0) != static_cast<ssize_t>(part.size())) {
      close(fd);
      break;
    }
    fds.push_back(fd);
  }
  return fds;
}

// Stops an exporter with SIGTERM and returns its exit status (-1 if it did not exit normally).
int stop_exporter(pid_t pid) {
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ConnectionDeadline, CutsWhatAWorkerHeldTooLongNotWhatWaitsAndRestartsAfterAnswers) {
  const int lfd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(lfd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(lfd, 4), 0);
  ASSERT_EQ(getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const int port = ntohs(a.sin_port);
  ConnectionDeadline d(port, 2.0);
  const int c1 = connect_loopback(port), c2 = connect_loopback(port);
  ASSERT_GE(c1, 0);
  ASSERT_GE(c2, 0);
  const int s1 = accept(lfd, nullptr, nullptr);
  const ino_t id1 = d.accepted().id;
  const int s2 = accept(lfd, nullptr, nullptr);
  const ino_t id2 = d.accepted().id;
  ASSERT_GE(s1, 0);
  ASSERT_GE(s2, 0);
  struct stat st1 = {};
  struct stat st2 = {};
  ASSERT_EQ(fstat(s1, &st1), 0);
  ASSERT_EQ(fstat(s2, &st2), 0);
  EXPECT_EQ(id1, st1.st_ino) << "each accept finds its own socket, not the listener's, not a client's";
  EXPECT_EQ(id2, st2.st_ino);
  EXPECT_EQ(d.accepted().id, 0u) << "nothing new";
  EXPECT_EQ(d.tracked(), 2u);

  d.started(id1, 100.0);
  EXPECT_EQ(d.sweep(101.9), 0);
  EXPECT_EQ(d.sweep(102.1), 1) << "c1, held 2.1 s by a worker";
  EXPECT_TRUE(closed_by_peer(c1, 5)) << "the shut-down socket reads as closed on the client's side";
  EXPECT_EQ(d.sweep(500.0), 0) << "c1 is not cut twice while it waits to be closed; c2 waits in the queue, uncut";
  d.finished(id1);
  d.started(id2, 500.0);
  d.answered(id2, 501.5);  // c2 got an answer: its clock starts again
  EXPECT_EQ(d.sweep(503.4), 0);
  EXPECT_EQ(d.sweep(503.6), 1) << "c2, 2.1 s since its answer";
  EXPECT_TRUE(closed_by_peer(c2, 5));
  d.finished(id2);
  EXPECT_EQ(d.tracked(), 0u);
  for (int fd : {c1, c2, s1, s2, lfd}) close(fd);
}

TEST(Exporter, ServesMetricsAndHealthAndStopsOnSigterm) {
  const auto [pid, port, log] = spawn_exporter();
  ASSERT_GT(pid, 0);
  ASSERT_GT(port, 0) << "no `serving` line naming the port it chose:\n" << read_text_file(log);
  httplib::Client cli("127.0.0.1", port);
  auto res = first_metrics(cli);
  ASSERT_TRUE(res) << "the exporter never answered on port " << port;
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("gsq_gpu_info{"), std::string::npos);
  EXPECT_NE(res->get_header_value("Content-Type").find("version=0.0.4"), std::string::npos);
  const auto second = cli.Get("/metrics");
  ASSERT_TRUE(second);
  EXPECT_NE(second->body.find("gsq_exporter_scrapes_total{hostname=\"vm\"} 2"), std::string::npos);
  const auto health = cli.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(cli.Get("/nope")->status, 404);
  EXPECT_EQ(stop_exporter(pid), 0) << "the exporter's exit status on SIGTERM";
}

TEST(Exporter, ASecondExporterOnTheSamePortIsRefused) {
  const auto [first, port, first_log] = spawn_exporter();
  ASSERT_GT(first, 0);
  ASSERT_GT(port, 0) << read_text_file(first_log);
  httplib::Client cli("127.0.0.1", port);
  ASSERT_TRUE(first_metrics(cli)) << "the exporter never answered on port " << port;
  const fs::path log = fs::temp_directory_path() / ("gsq-exporter-second-" + std::to_string(port) + ".log");
  const pid_t second = spawn({GSQ_BINARY, "exporter", "--snapshot", test::fixture("h200-snapshot.json").string(),
                              "--listen", "127.0.0.1:" + std::to_string(port)},
                             log);
  ASSERT_GT(second, 0);
  int status = 0;
  waitpid(second, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
  EXPECT_NE(read_text_file(log).find("address in use"), std::string::npos) << read_text_file(log);
  kill(first, SIGTERM);
  waitpid(first, &status, 0);
}

// Whether `fd` is still connected and has nothing to read (the peer has neither answered nor closed it).
bool still_open(int fd) {
  char c;
  const ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

// Waits up to `seconds` for `done` to turn true.
bool eventually(const std::atomic<bool>& done, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return done;
}

TEST(HeaderGate, TheBlankLineEndsTheHeadersWithOrWithoutCarriageReturns) {
  EXPECT_TRUE(headers_complete("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_TRUE(headers_complete("GET / HTTP/1.1\nHost: x\n\n"));
  EXPECT_TRUE(headers_complete("GET / HTTP/1.0\r\n\r\nbody"));
  EXPECT_FALSE(headers_complete("GET / HTTP/1.1\r\nHost: x\r\n"));
  EXPECT_FALSE(headers_complete("GET / HTTP/1.1\r\nHost: x\r\n\r"));
  EXPECT_FALSE(headers_complete(""));
}

TEST(HeaderGate, HoldsAConnectionUntilItsHeadersAreInAndCutsTheOneThatMissesTheDeadline) {
  std::atomic<int> dispatched{0};
  std::vector<std::thread> ran;
  std::mutex mu;
  // The pool: each task on a thread of its own, as a worker would run it.
  HeaderGate gate(0.4, [&](std::function<void()> task) {
    std::lock_guard lk(mu);
    ran.emplace_back(std::move(task));
  });
  int slow[2], silent[2], early[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, slow), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, silent), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, early), 0);
  std::atomic<bool> slow_done{false}, silent_done{false}, early_done{false};
  const std::string whole = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(send(early[0], whole.data(), whole.size(), 0), static_cast<ssize_t>(whole.size()));
  gate.hold(early[1], [&] { early_done = true, ++dispatched; });
  gate.hold(silent[1], [&] { silent_done = true, ++dispatched; });
  gate.hold(slow[1], [&] { slow_done = true, ++dispatched; });
  EXPECT_TRUE(eventually(early_done, 5)) << "headers already there when it was held: handed over at once";
  // The slow one sends part of its request line, then (well within the 0.4 s counted from hold) the rest.
  ASSERT_EQ(send(slow[0], whole.data(), 10, 0), 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(slow_done) << "a partial request line is not handed to a worker";
  ASSERT_EQ(send(slow[0], whole.data() + 10, whole.size() - 10, 0), static_cast<ssize_t>(whole.size() - 10));
  EXPECT_TRUE(eventually(slow_done, 5)) << "the rest of the headers arrived: handed over";
  EXPECT_TRUE(still_open(slow[0])) << "a connection handed over in time is not cut";
  EXPECT_TRUE(eventually(silent_done, 5)) << "the silent one is handed over once cut";
  EXPECT_TRUE(closed_by_peer(silent[0], 5)) << "the cut socket reads as closed on the client's side";
  EXPECT_EQ(gate.cut(), 1u);
  EXPECT_EQ(gate.held(), 0u);
  EXPECT_EQ(dispatched.load(), 3);
  gate.stop();
  for (auto& t : ran) t.join();
  for (int* p : {slow, silent, early}) close(p[0]), close(p[1]);
}

TEST(HeaderGate, StoppingHandsOverWhatItHoldsWithoutCountingCuts) {
  std::atomic<bool> done{false};
  std::vector<std::function<void()>> tasks;
  HeaderGate gate(60, [&](std::function<void()> task) { tasks.push_back(std::move(task)); });
  int sp[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
  gate.hold(sp[1], [&] { done = true; });
  EXPECT_EQ(gate.held(), 1u);
  gate.stop();
  ASSERT_EQ(tasks.size(), 1u);
  tasks[0]();
  EXPECT_TRUE(done);
  EXPECT_EQ(gate.cut(), 0u);
  EXPECT_TRUE(closed_by_peer(sp[0], 5)) << "the stopping server ends the waiting connection";
  gate.hold(sp[1], [] {});  // after stop: handed over at once
  EXPECT_EQ(tasks.size(), 2u);
  close(sp[0]), close(sp[1]);
}

TEST(Exporter, ClientsThatTrickleTheirHeadersAreCutAtTheDeadlineAndScrapesGoOn) {
  // One worker, a read timeout far longer than the test: without the deadline the two stalled clients would hold
  // the worker (and the scrape behind them) for 60 s.
  const auto [pid, port, log] = spawn_exporter({"--threads", "1", "--timeout", "60", "--request-deadline", "1"});
  ASSERT_GT(pid, 0);
  ASSERT_GT(port, 0) << read_text_file(log);
  httplib::Client cli("127.0.0.1", port);
  ASSERT_TRUE(first_metrics(cli)) << "the exporter never answered on port " << port;
  const std::vector<int> stalled = stalled_clients(port, 2, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: a");
  ASSERT_EQ(stalled.size(), 2u);
  cli.set_read_timeout(30, 0);
  const auto res = cli.Get("/metrics");
  ASSERT_TRUE(res) << "the scrape behind the stalled clients got no answer";
  EXPECT_EQ(res->status, 200);
  for (int fd : stalled) {
    EXPECT_TRUE(closed_by_peer(fd, 30)) << "a stalled client was never cut";
    close(fd);
  }
  // The counter is bumped by the thread that cuts the connection, after the socket closes: read it until both cuts
  // are in (a loaded machine can show the first one alone for a moment).
  int cuts = -1;
  std::string body;
  for (int attempt = 0; attempt < 50 && cuts < 2; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto after = cli.Get("/metrics");
    ASSERT_TRUE(after);
    body = after->body;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(body, m, std::regex(R"(gsq_exporter_connections_cut_total\{[^}]*\} (\d+))")))
        << body.substr(0, 400);
    cuts = std::stoi(m[1].str());
  }
  EXPECT_GE(cuts, 2);
  EXPECT_EQ(stop_exporter(pid), 0) << "the exporter's exit status on SIGTERM";
}

TEST(Exporter, ScrapesAreAnsweredWhileMoreSlowClientsThanWorkersWaitForTheirHeaders) {
  // One worker and a deadline far longer than the test: six clients stuck in their headers wait in the header gate,
  // not in the worker, so a scrape is answered while all six are still connected.
  const auto [pid, port, log] = spawn_exporter({"--threads", "1", "--timeout", "60", "--request-deadline", "60"});
  ASSERT_GT(pid, 0);
  ASSERT_GT(port, 0) << read_text_file(log);
  httplib::Client cli("127.0.0.1", port);
  ASSERT_TRUE(first_metrics(cli)) << "the exporter never answered on port " << port;
  const std::vector<int> stalled = stalled_clients(port, 6, "GET /metrics HTTP/1.1\r\nHost: x\r\n");  // no blank line
  ASSERT_EQ(stalled.size(), 6u);
  cli.set_read_timeout(20, 0);
  const auto res = cli.Get("/metrics");
  ASSERT_TRUE(res) << "the scrape got no answer";
  EXPECT_EQ(res->status, 200);
  for (int fd : stalled) EXPECT_TRUE(still_open(fd)) << "answered only after a slow client was cut or answered";
  // A slow client that finishes its headers is answered too.
  const std::string rest = "\r\n";
  ASSERT_EQ(send(stalled[0], rest.data(), rest.size(), 0), 2);
  timeval tv{20, 0};
  setsockopt(stalled[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buf[16] = {};
  ASSERT_EQ(recv(stalled[0], buf, 12, MSG_WAITALL), 12);
  EXPECT_EQ(std::string(buf, 12), "HTTP/1.1 200");
  for (int fd : stalled) close(fd);
  EXPECT_EQ(stop_exporter(pid), 0) << "the exporter's exit status on SIGTERM";
}

TEST(LatencyHistogram, CumulativeBucketsSumAndCountFromManyThreads) {
  gpusqueeze::LatencyHistogram h("app_latency_seconds", "test", {0.01, 0.1});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&h] {
      for (int i = 0; i < 1000; ++i) {
        h.observe(0.005);  // first bucket
        h.observe(0.05);   // second
        h.observe(3.0);    // +Inf only
      }
    });
  for (auto& t : threads) t.join();
  const std::string text = h.exposition(R"(route="/v1")");
  EXPECT_NE(text.find(R"(app_latency_seconds_bucket{route="/v1",le="0.01"} 4000)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(app_latency_seconds_bucket{route="/v1",le="0.1"} 8000)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(app_latency_seconds_bucket{route="/v1",le="+Inf"} 12000)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(app_latency_seconds_count{route="/v1"} 12000)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(app_latency_seconds_sum{route="/v1"} 12220.000000000)"), std::string::npos) << text;
  if (have_promtool()) {
    const fs::path out = fs::temp_directory_path() / "gsq-histogram.txt";
    std::ofstream(out) << text;
    EXPECT_EQ(std::system(("promtool check metrics < " + out.string() + " >/dev/null 2>&1").c_str()), 0);
  }
}

TEST(Exporter, RealPrometheusScrapesItAndAnswersQueries) {
  if (std::system("command -v prometheus >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "prometheus not installed (Debian package prometheus; scripts/setup.sh installs it)";
  const fs::path d = fs::temp_directory_path() / ("gsq-prom-" + std::to_string(::getpid()));
  fs::create_directories(d);
  const auto [exporter, exporter_port, exporter_log] = spawn_exporter();
  ASSERT_GT(exporter, 0);
  ASSERT_GT(exporter_port, 0) << read_text_file(exporter_log);
  const int prom_port = 21000 + ::getpid() % 1000;  // below the ephemeral range; Prometheus cannot choose its own
  std::ofstream(d / "prometheus.yml") << "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: gpusqueeze\n"
                                      << "    static_configs:\n      - targets: ['127.0.0.1:" << exporter_port
                                      << "']\n";
  const pid_t prom = spawn(
      {"prometheus", "--config.file=" + (d / "prometheus.yml").string(), "--storage.tsdb.path=" + (d / "data").string(),
       "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
      d / "prometheus.log");
  ASSERT_GT(prom, 0);
  httplib::Client cli("127.0.0.1", prom_port);
  cli.set_connection_timeout(1, 0);
  std::string body;
  for (int i = 0; i < 60; ++i) {  // Prometheus starts, scrapes every second, then answers the query
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    auto r = cli.Get("/api/v1/query?query=gsq_gpu_memory_total_bytes");
    if (r && r->status == 200 && r->body.find("\"result\":[{") != std::string::npos) {
      body = r->body;
      break;
    }
  }
  auto up = cli.Get("/api/v1/query?query=up%7Bjob%3D%22gpusqueeze%22%7D");
  kill(prom, SIGTERM);
  kill(exporter, SIGTERM);
  waitpid(prom, nullptr, 0);
  waitpid(exporter, nullptr, 0);
  ASSERT_FALSE(body.empty()) << "Prometheus never returned the series; its log:\n"
                             << read_text_file(d / "prometheus.log");
  EXPECT_NE(body.find("\"model\":\"NVIDIA H200\""), std::string::npos) << body;
  EXPECT_NE(body.find("\"150754820096\""), std::string::npos) << body;
  ASSERT_TRUE(up);
  EXPECT_NE(up->body.find("\"1\"]"), std::string::npos) << up->body;
  fs::remove_all(d);
}

TEST(TuneMetrics, DriftIsOnePerFailedSettingAndSkippedSettingsHaveNoSeries) {
  const std::vector<tune::Check> checks{
      {"gpu.0.power_limit_w", tune::Status::failed, "700", "600", ""},
      {"host.numa_balancing", tune::Status::passed, "0", "0", ""},
      {"module.nvidia.RestrictProfilingToAdminUsers", tune::Status::pending, "1", "0", ""},
      {"host.cpu_governor", tune::Status::skipped, "", "performance", "no cpufreq"}};
  const auto text = render_tune_metrics("n1", "/etc/gpusqueeze/tune.toml", checks);
  EXPECT_NE(text.find(R"(gsq_tune_verified{hostname="n1",profile="/etc/gpusqueeze/tune.toml"} 0)"), std::string::npos);
  EXPECT_NE(text.find(R"(gsq_tune_drift{hostname="n1",setting="gpu.0.power_limit_w",status="failed"} 1)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(setting="host.numa_balancing",status="passed"} 0)"), std::string::npos);
  EXPECT_NE(text.find(R"(status="pending"} 0)"), std::string::npos);
  EXPECT_EQ(text.find("cpu_governor"), std::string::npos);
  EXPECT_NE(render_tune_metrics("n1", "p", {checks[1]}).find(R"(profile="p"} 1)"), std::string::npos);
  EXPECT_NE(render_tune_metrics("n1", "p", {}, "p:1:1: bad").find(R"(profile="p"} 0)"), std::string::npos);
  if (have_promtool()) {
    const fs::path out = fs::temp_directory_path() / "gsq-tune-metrics.txt";
    std::ofstream(out) << text;
    EXPECT_EQ(std::system(("promtool check metrics < " + out.string() + " >/dev/null 2>&1").c_str()), 0);
  }
}

}  // namespace
}  // namespace gsq::monitor
