// Request deadline for the exporter's HTTP connections. cpp-httplib 0.11's read timeout is per read call, so a client
// that sends one header byte a second keeps a worker thread for as long as it likes, and scrapes wait behind it.
// ConnectionDeadline follows each accepted connection from the pool's queue into a worker and shuts down (SHUT_RDWR)
// the one a worker has held for longer than the deadline without answering: the worker's next poll/recv returns at
// once and cpp-httplib closes the socket. A connection's clock starts when a worker takes it and again after each
// answer on it (keep-alive); connections still waiting for a worker are never cut, so a scrape queued behind slow
// clients waits for them to be cut instead of failing with them. In the exporter the header gate (header_gate.hpp)
// holds a new connection until its first request's headers are in, so this deadline is what bounds a slow body, a
// slow reader of the answer, and a slow second request on a kept-alive connection. Linux only (/proc/self/fd).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <mutex>
#include <unordered_map>

namespace gsq::monitor {

// Seconds on the steady clock: the clock of ConnectionDeadline's times and of the header gate's deadline.
[[nodiscard]] double steady_seconds();

class ConnectionDeadline {
 public:
  ConnectionDeadline(int port, double deadline_s) : port_(port), deadline_s_(deadline_s) {}
  // The port the server bound, when it was asked for any free one (port 0); call before it accepts.
  void set_port(int port) { port_ = port; }

  struct Accepted {
    ino_t id = 0;  // 0: no new socket found
    int fd = -1;
  };
  // Call right after the server accepted a connection, on the thread that accepts (cpp-httplib's task queue
  // `enqueue`): finds the new socket of the port in /proc/self/fd and returns its id and descriptor.
  Accepted accepted();
  void started(ino_t id, double now_s);  // a worker took it
  void finished(ino_t id);               // the worker is done with it (cpp-httplib closed it)
  // The worker on connection `id` has just answered on it (cpp-httplib's logger runs on that worker's thread).
  void answered(ino_t id, double now_s);
  // Shuts down the connections a worker has held for more than the deadline at `now_s` (seconds on a steady clock)
  // since it took them or last answered on them. Returns how many.
  int sweep(double now_s);
  [[nodiscard]] size_t tracked() const;  // connections queued or in a worker

 private:
  struct Conn {
    int fd = -1;
    bool serving = false;  // a worker has it
    double since = 0;      // taken by a worker, or last answered
    bool cut = false;      // shut down already; waiting for cpp-httplib to close it
  };
  int port_;
  double deadline_s_;
  mutable std::mutex mu_;
  std::unordered_map<ino_t, Conn> conns_;  // by socket inode: fd numbers are reused, inodes of open sockets are not
};

}  // namespace gsq::monitor
