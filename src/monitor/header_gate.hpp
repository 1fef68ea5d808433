// The exporter's header gate: an accepted connection reaches a worker thread only once its request headers have
// arrived whole. cpp-httplib reads a request on the worker that took the connection, so before the gate a client
// that trickles its headers held a worker until the request deadline cut it, and more slow clients than workers
// delayed every scrape behind them by a deadline per worker-full. The gate watches the waiting sockets on one
// epoll thread, peeks (MSG_PEEK, nothing is consumed) at what has arrived, and hands the connection to the pool when
// the blank line that ends the headers is there, when the peer closed or failed, or when more than the header limit
// has arrived (the worker rejects it). A connection that has not sent its headers within the deadline is shut down
// (SHUT_RDWR) and handed over too, so cpp-httplib closes it at once. Linux only (epoll, eventfd).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>

namespace gsq::monitor {

// Whether `peeked` (the first bytes of a connection) holds the end of an HTTP request's headers.
[[nodiscard]] bool headers_complete(std::string_view peeked);

class HeaderGate {
 public:
  using Dispatch = std::function<void(std::function<void()>)>;

  // `dispatch` hands a task to the worker pool; it is called on the gate's thread, and by stop() on the caller's.
  // Cuts are counted in `cuts` when given (a counter that outlives the gate), else in the gate.
  HeaderGate(double deadline_s, Dispatch dispatch, std::atomic<uint64_t>* cuts = nullptr);
  ~HeaderGate();
  HeaderGate(const HeaderGate&) = delete;
  HeaderGate& operator=(const HeaderGate&) = delete;

  // Holds `task` (which serves connected socket `fd`) until fd's headers are complete or the deadline passes.
  // After stop() the task is dispatched at once.
  void hold(int fd, std::function<void()> task);
  // Shuts down every held socket and dispatches its task; ends the gate's thread. Idempotent.
  void stop();

  [[nodiscard]] uint64_t cut() const { return cut_->load(); }  // connections shut down for missing the deadline
  [[nodiscard]] size_t held() const;

  static constexpr size_t kHeaderLimit = 8192;  // cpp-httplib's CPPHTTPLIB_HEADER_MAX_LENGTH

 private:
  struct Held {
    std::function<void()> task;
    double since = 0;
  };
  void run();
  void release(int fd, bool cut);  // removes fd from the gate and dispatches its task

  double deadline_s_;
  Dispatch dispatch_;
  int epoll_ = -1, wake_ = -1;
  mutable std::mutex mu_;
  std::unordered_map<int, Held> held_;  // by fd: a held socket stays open until its task runs, so fds are unique
  bool stopped_ = false;
  std::atomic<uint64_t> own_cut_{0};
  std::atomic<uint64_t>* cut_;
  std::thread thread_;
};

}  // namespace gsq::monitor
