// Header-only request-latency histogram for C++ inference servers, in the Prometheus exposition format, so the
// rules from `gpusqueeze rules generate` (P99 against the baseline) can read it. Lock-free observe(); serve
// exposition() from your /metrics handler. No dependency beyond the standard library.
//
//   static gpusqueeze::LatencyHistogram latency;           // gsq_request_latency_seconds, default buckets
//   auto t0 = std::chrono::steady_clock::now(); handle(req); latency.observe_since(t0);
//   metrics_text += latency.exposition();
#pragma once

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

namespace gpusqueeze {

class LatencyHistogram {
 public:
  // Upper bounds in seconds, ascending; +Inf is implicit. The default spans 1 ms to 10 s, fine enough around the
  // tens of milliseconds where inference SLAs live.
  explicit LatencyHistogram(std::string name = "gsq_request_latency_seconds",
                            std::string help = "Request latency, seconds",
                            std::initializer_list<double> bounds = {0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075,
                                                                    0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10})
      : name_(std::move(name)), help_(std::move(help)), bounds_(bounds), counts_(bounds_.size() + 1) {}

  void observe(double seconds) noexcept {
    size_t i = 0;
    while (i < bounds_.size() && seconds > bounds_[i]) ++i;
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    // The sum in nanoseconds as an integer, so concurrent observers never lose an addition.
    sum_ns_.fetch_add(static_cast<uint64_t>(seconds * 1e9 + 0.5), std::memory_order_relaxed);
  }
  template <class Clock, class Duration>
  void observe_since(std::chrono::time_point<Clock, Duration> start) noexcept {
    observe(std::chrono::duration<double>(Clock::now() - start).count());
  }

  // HELP, TYPE, cumulative _bucket series (le="..."), _sum and _count. `labels` is an optional label list without
  // braces, e.g. R"(model="llama",route="/v1/chat")".
  [[nodiscard]] std::string exposition(const std::string& labels = "") const {
    const std::string sep = labels.empty() ? "" : ",";
    std::string out = "# HELP " + name_ + " " + help_ + "\n# TYPE " + name_ + " histogram\n";
    uint64_t cumulative = 0;
    char num[64];
    for (size_t i = 0; i <= bounds_.size(); ++i) {
      cumulative += counts_[i].load(std::memory_order_relaxed);
      std::string le = "+Inf";
      if (i < bounds_.size()) {
        const auto r = std::to_chars(num, num + sizeof num, bounds_[i]);  // shortest form that reads back exactly
        le.assign(num, r.ptr);
      }
      out += name_ + "_bucket{" + labels + sep + "le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
    }
    std::snprintf(num, sizeof num, "%.9f", static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9);
    const std::string braces = labels.empty() ? "" : "{" + labels + "}";
    out += name_ + "_sum" + braces + " " + num + "\n";
    out += name_ + "_count" + braces + " " + std::to_string(cumulative) + "\n";
    return out;
  }

 private:
  std::string name_, help_;
  std::vector<double> bounds_;
  std::vector<std::atomic<uint64_t>> counts_;
  std::atomic<uint64_t> sum_ns_{0};
};

}  // namespace gpusqueeze
