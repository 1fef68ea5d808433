// Child processes (see process.hpp): posix_spawn, pipes read until they close, exit status decoded.
#include "core/process.hpp"

#include "core/error.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace gsq {

ProcessOutput run_process(const std::vector<std::string>& argv) {
  ProcessOutput r;
  if (argv.empty()) return r;
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return r;
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]), close(out_pipe[1]);
    return r;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out_pipe[1]), close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]), close(err_pipe[0]);
    r.err = std::strerror(rc);
    return r;
  }
  // Read both pipes until they close, so neither fills up and blocks the child.
  std::array<pollfd, 2> fds{pollfd{out_pipe[0], POLLIN, 0}, pollfd{err_pipe[0], POLLIN, 0}};
  std::array<std::string*, 2> sinks{&r.out, &r.err};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

int run_attached(const std::vector<std::string>& argv) {
  if (argv.empty()) throw_bad_input("no command to run");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  if (const int rc = posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ); rc != 0)
    throw_bad_input(std::string("cannot run ") + argv.front() + ": " + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::optional<std::filesystem::path> this_program() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  return exe;
}

std::optional<std::filesystem::path> find_own_library(const std::string& file, const char* env_var,
                                                      std::vector<std::filesystem::path>& tried) {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv(env_var); env && *env) {
    if (fs::exists(env)) return fs::absolute(env);
    tried.emplace_back(env);
  }
  const auto exe = this_program();
  if (!exe) return std::nullopt;
  for (const fs::path& p :
       {exe->parent_path() / "lib" / file, exe->parent_path().parent_path() / "lib" / "gpusqueeze" / file}) {
    if (fs::exists(p)) return p;
    tried.push_back(p);
  }
  return std::nullopt;
}

}  // namespace gsq
