#include "monitor/deadline.hpp"

#include <sys/socket.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <chrono>
#include <filesystem>
#include <optional>
#include <system_error>

namespace gsq::monitor {

namespace {

std::optional<int> port_of(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return std::nullopt;
}

// Whether `fd` is an accepted (connected) socket of `local_port`: not another socket, not the listening one.
bool accepted_on(int fd, int local_port) {
  sockaddr_storage local{}, peer{};
  socklen_t len = sizeof(local);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0 || port_of(local) != local_port) return false;
  len = sizeof(peer);
  return getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0;
}

}  // namespace

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

ConnectionDeadline::Accepted ConnectionDeadline::accepted() {
  std::error_code ec;
  std::lock_guard lk(mu_);
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = -1;
    const std::string name = e.path().filename().string();
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc()) continue;
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) || conns_.count(st.st_ino)) continue;
    if (accepted_on(fd, port_)) {  // only the accepting thread makes sockets of the port: this is the new one
      conns_.emplace(st.st_ino, Conn{.fd = fd});
      return {st.st_ino, fd};
    }
  }
  return {};
}

void ConnectionDeadline::started(ino_t id, double now_s) {
  std::lock_guard lk(mu_);
  if (auto it = conns_.find(id); it != conns_.end()) it->second.serving = true, it->second.since = now_s;
}

void ConnectionDeadline::finished(ino_t id) {
  std::lock_guard lk(mu_);
  conns_.erase(id);
}

void ConnectionDeadline::answered(ino_t id, double now_s) {
  std::lock_guard lk(mu_);
  if (auto it = conns_.find(id); it != conns_.end()) it->second.since = now_s;
}

int ConnectionDeadline::sweep(double now_s) {
  std::lock_guard lk(mu_);
  int cut = 0;
  for (auto& [id, c] : conns_) {
    if (!c.serving || c.cut || now_s - c.since <= deadline_s_) continue;
    // The worker may have closed the socket a moment ago and the fd be reused: shut it only if it is the same socket.
    struct stat st {};
    if (fstat(c.fd, &st) == 0 && st.st_ino == id && shutdown(c.fd, SHUT_RDWR) == 0) ++cut, c.cut = true;
  }
  return cut;
}

size_t ConnectionDeadline::tracked() const {
  std::lock_guard lk(mu_);
  return conns_.size();
}

}  // namespace gsq::monitor
