#include "monitor/exporter.hpp"

#include "core/error.hpp"
#include "gpu/counters.hpp"
#include "gpu/nvml.hpp"
#include "gpu/xid.hpp"
#include "monitor/deadline.hpp"
#include "monitor/header_gate.hpp"
#include "monitor/watch.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace gsq::monitor {

sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

Collector live_collector(const std::function<void(const std::string&)>& log) {
  // State kept between collections: NVML, the host part (hostname, kernel, ...: read once), the last full snapshot,
  // one GPM reader per GPU (a GPM metric is the difference of two samples, so the first collection waits 200 ms
  // after creating them) and the XID watcher.
  struct State {
    gpu::Nvml nvml = gpu::Nvml::open();
    gpu::HostSnapshot host = gpu::collect_host();
    std::optional<gpu::Snapshot> full;  // the last full read; refreshed in place in between
    unsigned since_full = 0;
    std::vector<std::unique_ptr<gpu::GpmReader>> gpm;
    std::unique_ptr<gpu::XidWatcher> xid;
  };
  auto st = std::make_shared<State>();
  return [st, log]() {
    // Names, limits, modes and thresholds are read in full every kFullEvery collections (an admin may change a
    // power limit or persistence mode); the fields that move are re-read every time.
    constexpr unsigned kFullEvery = 60;
    if (!st->full || ++st->since_full >= kFullEvery) {
      st->full = gpu::collect_snapshot(st->nvml, st->host);
      st->since_full = 0;
    } else {
      try {
        gpu::refresh_snapshot(st->nvml, *st->full);
      } catch (...) {
        st->full.reset();  // a GPU went away: read everything again next time
        throw;
      }
    }
    Collection c;
    c.snapshot = *st->full;
    const auto n = static_cast<uint32_t>(c.snapshot.gpus.size());
    if (st->gpm.size() != n) {
      st->gpm.clear();
      for (uint32_t i = 0; i < n; ++i) st->gpm.push_back(std::make_unique<gpu::GpmReader>(st->nvml, i));
      st->xid = std::make_unique<gpu::XidWatcher>(st->nvml, n);
      for (uint32_t i = 0; i < n && log; ++i) {
        if (!st->gpm[i]->supported()) log(fmt::format("GPU {}: no GPM metrics ({})", i, st->gpm[i]->reason()));
        if (const auto x = st->xid->events(i).events; !x.ok())
          log(fmt::format("GPU {}: no XID events ({})", i, x.unsupported));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the first GPM interval (NVML wants ≥ 100 ms)
    }
    for (uint32_t i = 0; i < n; ++i) {
      gpu::Counters k = gpu::read_counters(st->nvml, i);
      const auto values = st->gpm[i]->read();
      const auto metrics = gpu::gpm_metrics();
      for (size_t m = 0; m < values.size(); ++m)
        if (values[m]) k.gpm.emplace_back(metrics[m].name, *values[m]);
      const auto seen = st->xid->events(i);
      k.xid_events = seen.events;
      k.last_xid = seen.last_xid;
      c.counters.push_back(std::move(k));
    }
    return c;
  };
}

namespace {
// cpp-httplib's server with its listening socket in reach. The library listens with a backlog of 5, so a burst of
// connections overflows the kernel's queue and clients retry their SYN after 1, 3, 7, ... seconds: listen() again
// only resizes the queue. TCP_DEFER_ACCEPT has the kernel finish the accept only once the client has sent data, so
// a scrape usually arrives with its request in and goes straight to a worker instead of through the header gate.
class Server : public httplib::Server {
 public:
  void tune_listener(int defer_s) {
    (void)::listen(svr_sock_, SOMAXCONN);
    (void)setsockopt(svr_sock_, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer_s, sizeof(defer_s));
  }
};

// The connection this worker thread serves (0 on other threads), for the logger that cpp-httplib calls on it.
thread_local ino_t serving_connection = 0;

// cpp-httplib's thread pool, telling the deadline which connection each worker takes and when, with the header gate
// in front of it: a connection reaches a worker once its request headers are in, so clients that trickle theirs
// wait in the gate (one epoll thread) instead of in a worker. cpp-httplib calls enqueue on its accepting thread right
// after each accept, and shutdown once it stops accepting.
class DeadlinePool : public httplib::TaskQueue {
 public:
  DeadlinePool(size_t n, ConnectionDeadline& deadline, double header_deadline_s, std::atomic<uint64_t>& gate_cuts)
      : pool_(n),
        deadline_(deadline),
        gate_(
            header_deadline_s, [this](std::function<void()> task) { pool_.enqueue(std::move(task)); }, &gate_cuts) {}
  void enqueue(std::function<void()> fn) override {
    const auto conn = deadline_.accepted();
    auto task = [this, id = conn.id, fn = std::move(fn)] {
      deadline_.started(id, steady_seconds());
      serving_connection = id;
      struct Done {
        ConnectionDeadline& d;
        ino_t id;
        ~Done() { serving_connection = 0, d.finished(id); }
      } done{deadline_, id};
      fn();
    };
    if (conn.fd < 0) {
      pool_.enqueue(std::move(task));  // the socket was not found: a worker reads it, the deadline still applies
      return;
    }
    gate_.hold(conn.fd, std::move(task));
  }
  void shutdown() override {
    gate_.stop();
    pool_.shutdown();
  }

 private:
  httplib::ThreadPool pool_;
  ConnectionDeadline& deadline_;
  HeaderGate gate_;
};

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

void serve(const ExporterOptions& o, const Collector& collect, const std::function<void(const std::string&)>& log,
           Watcher* watch) {
  // SIGINT/SIGTERM are taken by one thread with sigwait (blocked everywhere else), which stops the server cleanly.
  const sigset_t stop_signals = block_stop_signals();
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  Collection latest;
  SelfStats self;
  self.version = o.version;
  self.watching = watch != nullptr;
  std::atomic<uint64_t> scrapes{0};
  std::atomic<bool> capturing{false};
  std::thread capture_thread;
  // Runs on the collector thread after each good collection.
  auto maybe_capture = [&](const Collection& c) {
    if (!watch || capturing) return;
    if (!watch->observe(c, steady_seconds())) return;
    const WatchOptions& w = watch->options();
    log(fmt::format("watch: pid {} under {:.0f}% busy for {:.0f} s ({}): capturing {:.0f} s", w.pid, w.below * 100,
                    w.for_s, watch->last_reading(), w.capture_s));
    watch->captured(steady_seconds());
    if (capture_thread.joinable()) capture_thread.join();
    capturing = true;
    capture_thread = std::thread([&, w] {
      try {
        const auto r = capture_and_analyze(w.pid, w.capture_s, w.control_dir, w.grace_s, log);
        log(fmt::format("watch: {} records; verdict {} — findings in {}", r.records, r.analysis.verdict.cls,
                        r.analysis_file.string()));
        std::lock_guard lk(mu);
        ++self.captures;
      } catch (const std::exception& e) {
        log(fmt::format("watch: capture of pid {} failed: {}", w.pid, e.what()));
        std::lock_guard lk(mu);
        ++self.capture_errors;
      }
      capturing = false;
    });
  };

  auto collect_once = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      Collection c = collect();
      maybe_capture(c);
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

  ConnectionDeadline deadline(o.port, o.request_deadline_s);  // outlives the server and its pool
  std::atomic<uint64_t> gate_cuts{0};
  Server server;
  server.new_task_queue = [&] {
    return new DeadlinePool(static_cast<size_t>(o.threads), deadline, o.request_deadline_s, gate_cuts);
  };
  const auto secs = static_cast<time_t>(o.timeout_s);
  server.set_read_timeout(secs, 0);
  server.set_write_timeout(secs, 0);
  // An idle kept-alive connection closes at half the deadline, so a request that arrives on it still has the other
  // half to be read and answered.
  server.set_keep_alive_timeout(std::max<time_t>(1, static_cast<time_t>(o.request_deadline_s / 2)));
  server.set_payload_max_length(o.max_request_bytes);
  // SO_REUSEADDR only: cpp-httplib's default adds SO_REUSEPORT, which lets a second exporter bind the same port and
  // take half the scrapes instead of failing with "address in use".
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  server.set_logger([&](const httplib::Request&, const httplib::Response&) {
    deadline.answered(serving_connection, steady_seconds());
  });
  std::atomic<uint64_t> swept{0};  // cut by the deadline in a worker (gate_cuts: in the header gate)
  std::thread reaper([&] {
    const auto period = std::chrono::duration<double>(std::min(0.5, o.request_deadline_s / 4));
    std::unique_lock lk(mu);
    while (!cv.wait_for(lk, period, [&] { return stopping; })) {
      lk.unlock();
      swept += static_cast<uint64_t>(deadline.sweep(steady_seconds()));
      lk.lock();
    }
  });
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    SelfStats s;
    std::string text;
    {
      std::lock_guard lk(mu);
      s = self;
      s.scrapes = ++scrapes;
      s.connections_cut = swept + gate_cuts;
      text = render_metrics(latest.snapshot, latest.counters, s) + latest.extra;
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
  // Stops the collector, the reaper and a capture in progress, and waits for them.
  auto stop_workers = [&] {
    {
      std::lock_guard lk(mu);
      stopping = true;
    }
    cv.notify_all();
    collector.join();
    reaper.join();
    if (capture_thread.joinable()) capture_thread.join();
  };
  // Port 0 asks the system for any free port; the one bound is logged (how tests and supervisors start many).
  const int port = o.port == 0 ? server.bind_to_any_port(o.host) : (server.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port <= 0) {
    stop_workers();
    throw_bad_input(
        fmt::format("cannot listen on {}:{} (address in use, or not an address of this host)", o.host, o.port));
  }
  deadline.set_port(port);
  server.tune_listener(std::max(1, static_cast<int>(std::ceil(o.request_deadline_s))));
  std::atomic<bool> signalled{false};
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    signalled = true;
    server.stop();
  });
  log(fmt::format("serving http://{}:{}/metrics, collecting every {} s", o.host, port, o.interval_s));
  server.listen_after_bind();
  if (!signalled) pthread_kill(stopper.native_handle(), SIGTERM);  // the server stopped on its own: wake the waiter
  stopper.join();
  stop_workers();
  log("stopped");
}

}  // namespace gsq::monitor
