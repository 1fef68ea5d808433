// The exporter daemon: a collector thread reads NVML every interval and renders the exposition once; HTTP scrapes
// only copy the latest text, so a scrape never waits on the driver and many scrapers cost nothing extra.
#pragma once

#include "monitor/metrics.hpp"

#include <signal.h>

#include <functional>
#include <string>

namespace gsq::monitor {

struct ExporterOptions {
  std::string host = "127.0.0.1";  // loopback unless asked: GPU inventory is not for the whole network
  int port = 9835;
  double interval_s = 5;
  int threads = 16;      // concurrent requests served; more wait in the pool's queue, first in first out
  double timeout_s = 5;  // read and write timeout per connection (per read or write call)
  // Seconds a connection may take to send its headers (HeaderGate, before any worker takes it), and then, in a
  // worker, to send its request and get the answer (again after each answer: ConnectionDeadline); slower ones are
  // shut down.
  double request_deadline_s = 2;
  size_t max_request_bytes = 8192;
  std::string version;
};

// One collection: a live snapshot (NVML and host) plus the counters. Throws Error(no_gpu) without NVML.
struct Collection {
  gpu::Snapshot snapshot;
  std::vector<gpu::Counters> counters;
  std::string extra;  // exposition lines appended as they are (the tune profile's state)
};
using Collector = std::function<Collection()>;
// Opens NVML and reads the host once, then NVML at every call; `log` hears once per GPU what it cannot read (GPM
// before Hopper, XID events where the driver refuses them).
[[nodiscard]] Collector live_collector(const std::function<void(const std::string&)>& log = {});

// Blocks SIGINT and SIGTERM in the calling thread, so every thread started after it (NVML's own included) inherits
// the mask and serve()'s sigwait thread alone receives them. Call it before opening NVML; serve() calls it too.
sigset_t block_stop_signals();

class Watcher;

// Serves /metrics and /health until SIGINT/SIGTERM. `log` receives start/stop and collection-error lines. With a
// watcher, every collection is fed to it and a capture (one at a time, on its own thread) starts when it says so.
// Throws Error(bad_input) when it cannot bind (address in use, bad host).
void serve(const ExporterOptions& o, const Collector& collect, const std::function<void(const std::string&)>& log,
           Watcher* watch = nullptr);

}  // namespace gsq::monitor
