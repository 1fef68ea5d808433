#include "monitor/exporter.hpp"

#include "core/error.hpp"
#include "gpu/nvml.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <pthread.h>
#include <signal.h>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <memory>
#include <mutex>
#include <thread>

namespace gsq::monitor {

Collector live_collector() {
  auto nvml = std::make_shared<gpu::Nvml>(gpu::Nvml::open());
  auto host = std::make_shared<gpu::HostSnapshot>(gpu::collect_host());  // hostname, kernel, ...: read once
  return [nvml, host]() {
    Collection c;
    c.snapshot = gpu::collect_snapshot(*nvml, *host);
    for (uint32_t i = 0; i < c.snapshot.gpus.size(); ++i) c.counters.push_back(gpu::read_counters(*nvml, i));
    return c;
  };
}

namespace {
double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

void serve(const ExporterOptions& o, const Collector& collect, const std::function<void(const std::string&)>& log) {
  // SIGINT/SIGTERM are taken by one thread with sigwait (blocked everywhere else), which stops the server cleanly.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  Collection latest;
  SelfStats self;
  self.version = o.version;
  std::atomic<uint64_t> scrapes{0};

  auto collect_once = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      Collection c = collect();
      std::lock_guard lk(mu);
      latest = std::move(c);
      ++self.collections;
    } catch (const std::exception& e) {
      std::lock_guard lk(mu);
      ++self.collection_errors;
      log(fmt::format("collection failed: {}", e.what()));
    }
    std::lock_guard lk(mu);
    self.last_collection_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    self.last_collection_unix = unix_now();
  };
  collect_once();
  std::thread collector([&] {
    std::unique_lock lk(mu);
    while (!cv.wait_for(lk, std::chrono::duration<double>(o.interval_s), [&] { return stopping; })) {
      lk.unlock();
      collect_once();
      lk.lock();
    }
  });

  httplib::Server server;
  server.new_task_queue = [n = o.threads] { return new httplib::ThreadPool(static_cast<size_t>(n)); };
  const auto secs = static_cast<time_t>(o.timeout_s);
  server.set_read_timeout(secs, 0);
  server.set_write_timeout(secs, 0);
  server.set_keep_alive_timeout(secs);
  server.set_payload_max_length(o.max_request_bytes);
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    SelfStats s;
    std::string text;
    {
      std::lock_guard lk(mu);
      s = self;
      s.scrapes = ++scrapes;
      text = render_metrics(latest.snapshot, latest.counters, s);
    }
    res.set_content(text, "text/plain; version=0.0.4; charset=utf-8");
  });
  server.Get("/health", [&](const httplib::Request&, httplib::Response& res) {
    double age;
    uint64_t ok;
    {
      std::lock_guard lk(mu);
      age = unix_now() - self.last_collection_unix;
      ok = self.collections;
    }
    const bool healthy = ok > 0 && age < 3 * o.interval_s + 5;
    res.status = healthy ? 200 : 503;
    res.set_content(healthy ? "ok\n" : fmt::format("stale: last good collection {:.0f} s ago\n", age), "text/plain");
  });
  server.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("gpusqueeze exporter: /metrics (Prometheus), /health\n", "text/plain");
  });
  if (!server.bind_to_port(o.host, o.port)) {
    {
      std::lock_guard lk(mu);
      stopping = true;
    }
    cv.notify_all();
    collector.join();
    throw_bad_input(
        fmt::format("cannot listen on {}:{} (address in use, or not an address of this host)", o.host, o.port));
  }
  std::atomic<bool> signalled{false};
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    signalled = true;
    server.stop();
  });
  log(fmt::format("serving http://{}:{}/metrics, collecting every {} s", o.host, o.port, o.interval_s));
  server.listen_after_bind();
  if (!signalled) pthread_kill(stopper.native_handle(), SIGTERM);  // the server stopped on its own: wake the waiter
  stopper.join();
  {
    std::lock_guard lk(mu);
    stopping = true;
  }
  cv.notify_all();
  collector.join();
  log("stopped");
}

}  // namespace gsq::monitor
