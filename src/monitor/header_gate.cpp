#include "monitor/header_gate.hpp"

#include "monitor/deadline.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <string>
#include <vector>

namespace gsq::monitor {

namespace {
// Whether a worker should have `fd` now: its headers are complete, it sent more than the limit, it was closed or
// failed. Peeks into `buf` (kHeaderLimit + 1 bytes); nothing is consumed.
bool ready_for_worker(int fd, std::string& buf, bool hung_up) {
  const ssize_t got = recv(fd, buf.data(), buf.size(), MSG_PEEK | MSG_DONTWAIT);
  const bool waiting = got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  const bool partial = got > 0 && static_cast<size_t>(got) <= HeaderGate::kHeaderLimit &&
                       !headers_complete(std::string_view(buf.data(), static_cast<size_t>(got)));
  return hung_up || !(waiting || partial);
}
}  // namespace

bool headers_complete(std::string_view peeked) {
  // cpp-httplib ends a header line at "\n" with or without the "\r" before it, so both blank-line forms count.
  return peeked.find("\n\r\n") != std::string_view::npos || peeked.find("\n\n") != std::string_view::npos;
}

HeaderGate::HeaderGate(double deadline_s, Dispatch dispatch, std::atomic<uint64_t>* cuts)
    : deadline_s_(deadline_s), dispatch_(std::move(dispatch)), cut_(cuts ? cuts : &own_cut_) {
  epoll_ = epoll_create1(EPOLL_CLOEXEC);
  wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_;
  if (epoll_ < 0 || wake_ < 0 || epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev) != 0) {
    if (epoll_ >= 0) close(epoll_);
    if (wake_ >= 0) close(wake_);
    throw std::runtime_error("header gate: cannot create its epoll set");
  }
  thread_ = std::thread([this] { run(); });
}

HeaderGate::~HeaderGate() {
  stop();
}

void HeaderGate::hold(int fd, std::function<void()> task) {
  // Most clients send their request with the connection: then it goes to a worker straight from the accepting thread.
  thread_local std::string peeked(kHeaderLimit + 1, '\0');
  if (ready_for_worker(fd, peeked, false)) return dispatch_(std::move(task));
  {
    std::lock_guard lk(mu_);
    if (!stopped_) {
      held_[fd] = Held{std::move(task), steady_seconds()};
      // Edge-triggered: a socket whose partial headers stay unread would otherwise wake the gate without end; Linux
      // signals an edge for every arrival, and for data already there when the socket is added.
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
      ev.data.fd = fd;
      if (epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev) == 0) return;
      task = std::move(held_[fd].task);
      held_.erase(fd);
    }
  }
  dispatch_(std::move(task));  // stopped, or not a socket epoll takes: the worker deals with it as before
}

size_t HeaderGate::held() const {
  std::lock_guard lk(mu_);
  return held_.size();
}

void HeaderGate::release(int fd, bool cut) {
  std::function<void()> task;
  {
    std::lock_guard lk(mu_);
    const auto it = held_.find(fd);
    if (it == held_.end()) return;
    task = std::move(it->second.task);
    held_.erase(it);
  }
  epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);  // before the task runs: once it closes fd the number can be reused
  if (cut && shutdown(fd, SHUT_RDWR) == 0) ++*cut_;
  dispatch_(std::move(task));
}

void HeaderGate::run() {
  std::vector<epoll_event> events(64);
  std::string peeked(kHeaderLimit + 1, '\0');
  const int tick_ms = static_cast<int>(std::clamp(deadline_s_ * 1000 / 8, 5.0, 100.0));
  for (;;) {
    const int n = epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), tick_ms);
    if (n < 0 && errno != EINTR) return;
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_) {
        uint64_t v = 0;
        (void)!read(wake_, &v, sizeof(v));
        std::lock_guard lk(mu_);
        if (stopped_) return;
        continue;
      }
      const bool hung_up = (events[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
      if (ready_for_worker(fd, peeked, hung_up)) release(fd, false);  // the worker answers or closes it
    }
    std::vector<int> late;
    {
      const double now = steady_seconds();
      std::lock_guard lk(mu_);
      for (const auto& [fd, h] : held_)
        if (now - h.since > deadline_s_) late.push_back(fd);
    }
    for (int fd : late) release(fd, true);
  }
}

void HeaderGate::stop() {
  {
    std::lock_guard lk(mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  const uint64_t one = 1;
  (void)!write(wake_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  std::vector<int> left;
  {
    std::lock_guard lk(mu_);
    for (const auto& [fd, h] : held_) left.push_back(fd);
  }
  // The server is stopping: end the waiting connections (not counted as cut) so their tasks finish at once.
  for (int fd : left) {
    shutdown(fd, SHUT_RDWR);
    release(fd, false);
  }
  close(epoll_);
  close(wake_);
}

}  // namespace gsq::monitor
