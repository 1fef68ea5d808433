// Runs a command with the tracer injected (CUDA_INJECTION64_PATH), forwards signals and collects its trace files.
#include "trace/launcher.hpp"

#include "core/error.hpp"
#include "core/process.hpp"
#include "trace/format.hpp"
#include "trace/python_shim.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>

namespace gsq::trace {

namespace fs = std::filesystem;

fs::path find_tracer_library() {
  std::vector<fs::path> tried;
  if (auto found = find_own_library("libgsqtrace.so", "GSQ_TRACE_LIB", tried)) return *found;
  std::string list;
  for (const auto& p : tried) list += "\n  " + p.string();
  throw_no_gpu("the tracer library libgsqtrace.so was not found; looked in:" + list +
               "\n(build it with scripts/build.sh, or point GSQ_TRACE_LIB at it)");
}

fs::path check_tracer_loads(const fs::path& library) {
  void* h = dlopen(library.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (!h)
    throw_no_gpu(
        fmt::format("cannot load the tracer {}: {}\nCUPTI (libcupti.so from the CUDA toolkit, or pip "
                    "nvidia-cuda-cupti) must be on the library path (LD_LIBRARY_PATH)",
                    library.string(), dlerror()));
  fs::path cupti;
  if (void* sym = dlsym(h, "cuptiGetVersion")) {
    Dl_info info{};
    if (dladdr(sym, &info) && info.dli_fname) cupti = fs::absolute(info.dli_fname);
  }
  dlclose(h);
  return cupti;
}

std::string conflicting_tool(const fs::path& our_library) {
  if (const char* inj = std::getenv("CUDA_INJECTION64_PATH"); inj && *inj && fs::path(inj) != our_library)
    return fmt::format("CUDA_INJECTION64_PATH is already set to {} (another CUPTI tool, e.g. Nsight Systems)", inj);
  return "";
}

namespace {
pid_t g_child = -1;
volatile sig_atomic_t g_forwarded = 0;  // the last signal passed on to the child (the user's Ctrl-C, a TERM)
void forward_signal(int sig) {
  g_forwarded = sig;
  if (g_child > 0) kill(g_child, sig);
}

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One of the program's output streams read through a pipe: complete lines go to the callback with their arrival
// time, every byte goes on to `to` (this process's stdout or stderr) as it came.
struct LinePipe {
  int fd = -1, to = -1;
  std::string partial;
};

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // our own stdout closed (a pager quit): the program's output is dropped, not the program
    p += w, n -= static_cast<size_t>(w);
  }
}

// Reads what the pipe has; false at end of file.
bool pump(LinePipe& p, const std::function<void(std::string_view, int64_t)>& on_line) {
  char buf[65536];
  const ssize_t got = read(p.fd, buf, sizeof buf);
  if (got < 0) return errno == EINTR || errno == EAGAIN;
  const int64_t now = steady_ns();
  if (got == 0) {
    if (!p.partial.empty()) on_line(p.partial, now);
    p.partial.clear();
    return false;
  }
  write_all(p.to, buf, static_cast<size_t>(got));
  p.partial.append(buf, static_cast<size_t>(got));
  size_t start = 0;
  // A carriage return ends a line too: progress bars (tqdm) rewrite one line with \r and end it only at the close.
  for (size_t nl; (nl = p.partial.find_first_of("\r\n", start)) != std::string::npos; start = nl + 1)
    on_line(std::string_view(p.partial).substr(start, nl - start), now);
  p.partial.erase(0, start);
  if (p.partial.size() > (1u << 20)) {  // a megabyte without a line end: hand it over as is
    on_line(p.partial, now);
    p.partial.clear();
  }
  return true;
}

// `root` and every process below it (from /proc's parent links), so a stop reaches the program a shell or launcher
// started, not only the shell.
std::vector<pid_t> process_tree(pid_t root) {
  std::map<pid_t, std::vector<pid_t>> children;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const size_t close = line.rfind(')');  // "pid (comm) state ppid ...": comm may hold spaces and parentheses
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) == 2)
      children[ppid].push_back(static_cast<pid_t>(std::atoi(name.c_str())));
  }
  std::vector<pid_t> tree{root};
  for (size_t i = 0; i < tree.size(); ++i)
    if (const auto it = children.find(tree[i]); it != children.end())
      tree.insert(tree.end(), it->second.begin(), it->second.end());
  return tree;
}

// Waits for the child while passing its output through `pipes` and enforcing the timeout: SIGINT when it runs out,
// SIGTERM 5 s later, SIGKILL 5 s after that. Output still buffered after the child ended is read for up to a second
// (a grandchild holding the pipe open must not hold the launcher).
int watch_child(pid_t child, std::vector<LinePipe>& pipes, const LaunchOptions& o, bool& timed_out, int64_t& ended_ns) {
  const int64_t start = steady_ns();
  int status = 0, stage = 0;
  std::optional<int64_t> ended;
  const int kSignals[] = {SIGINT, SIGTERM, SIGKILL};
  std::vector<pid_t> stopped;  // the child's descendants when the budget ran out
  while (true) {
    if (!ended) {
      const pid_t w = waitpid(child, &status, WNOHANG);
      if (w == child || (w < 0 && errno != EINTR)) ended = steady_ns();
    }
    const bool open = std::any_of(pipes.begin(), pipes.end(), [](const LinePipe& p) { return p.fd >= 0; });
    if (ended && (!open || steady_ns() - *ended > 1'000'000'000)) break;
    if (!ended && o.timeout_s > 0 && stage < 3 &&
        static_cast<double>(steady_ns() - start) / 1e9 > o.timeout_s + 5.0 * stage) {
      for (const pid_t p : process_tree(child)) {
        kill(p, kSignals[stage]);
        if (p != child && std::find(stopped.begin(), stopped.end(), p) == stopped.end()) stopped.push_back(p);
      }
      ++stage;
      timed_out = true;
    }
    std::vector<pollfd> fds;
    for (const auto& p : pipes)
      if (p.fd >= 0) fds.push_back({p.fd, POLLIN, 0});
    if (fds.empty()) {
      usleep(10'000);
      continue;
    }
    if (poll(fds.data(), fds.size(), 10) <= 0) continue;
    for (auto& p : pipes)
      for (const auto& f : fds)
        if (f.fd == p.fd && (f.revents & (POLLIN | POLLHUP | POLLERR)) && !pump(p, o.on_line)) {
          close(p.fd);
          p.fd = -1;
        }
  }
  for (auto& p : pipes)
    if (p.fd >= 0) close(p.fd);
  ended_ns = *ended;
  // What the stopped program left running (a shell's background job ignores SIGINT; the shell itself is gone): the
  // stop is the run's end for them too.
  for (const pid_t p : stopped)
    if (kill(p, 0) == 0) kill(p, SIGKILL);
  return status;
}
}  // namespace

LaunchResult launch(const LaunchOptions& o, const std::function<void(const std::string&)>& note) {
  if (o.command.empty())
    throw_bad_input("nothing to trace: give the command after --, e.g. gpusqueeze trace -o run.gsqt -- python app.py");
  if (o.cpu_api != "callbacks" && o.cpu_api != "activity" && o.cpu_api != "none")
    throw_bad_input("--cpu-api must be callbacks, activity or none, not " + o.cpu_api);
  if (o.kernel_timestamps != "auto" && o.kernel_timestamps != "software")
    throw_bad_input("--kernel-timestamps must be auto or software, not " + o.kernel_timestamps);
  LaunchResult result;
  const fs::path library = o.library.empty() ? find_tracer_library() : fs::absolute(o.library);
  const fs::path cupti = check_tracer_loads(library);
  if (const std::string other = conflicting_tool(library); !other.empty()) {
    if (o.strict) throw_bad_input(other + "; --strict: refusing to run untraced");
    result.traced = false;
    result.untraced_reason = other;
    note(other + "; running the program untraced");
  }
  const fs::path out = fs::absolute(o.output);
  if (out.has_parent_path()) fs::create_directories(out.parent_path());
  std::error_code ec;
  fs::remove(out, ec);  // a stale file from an earlier run must not pass for this run's trace
  const auto started = fs::file_time_type::clock::now();

  std::vector<std::string> env_set;
  if (result.traced) {
    env_set = {"CUDA_INJECTION64_PATH=" + library.string(),
               std::string("GSQ_TRACE_MODE=") + (o.markers_only ? "markers" : "full"),
               "GSQ_TRACE_FILE=" + out.string(),
               fmt::format("GSQ_TRACE_DELAY={}", o.delay_s),
               fmt::format("GSQ_TRACE_DURATION={}", o.duration_s),
               fmt::format("GSQ_TRACE_STRICT={}", o.strict ? 1 : 0),
               fmt::format("GSQ_TRACE_ON_DEMAND={}", o.on_demand ? 1 : 0),
               "GSQ_TRACE_CPU=" + o.cpu_api,
               "GSQ_TRACE_KERNEL_TIMESTAMPS=" + o.kernel_timestamps,
               fmt::format("GSQ_TRACE_BUFFER_MB={}", o.buffer_mb)};
    // NVTX ranges reach CUPTI only through NVTX's own injection hook; leave a user's setting alone.
    // The tracer corrects the path to the libcupti the process really loaded (GSQ_TRACE_NVTX).
    if (!cupti.empty() && !std::getenv("NVTX_INJECTION64_PATH")) {
      env_set.push_back("NVTX_INJECTION64_PATH=" + cupti.string());
      env_set.push_back("GSQ_TRACE_NVTX=1");
    }
  }

  env_set.insert(env_set.end(), o.env.begin(), o.env.end());
  // The Python shim, in a folder of this run's own that goes when the run ends.
  fs::path shim_dir;
  if (o.python_shim && result.traced) {
    // A folder of our own (mkdtemp: created here, mode 0700), never one someone else may have made first.
    std::string tmpl = (fs::temp_directory_path() / "gsq-pyshim-XXXXXX").string();
    if (!mkdtemp(tmpl.data()))
      throw_bad_input(
          fmt::format("cannot make a folder in {}: {}", fs::temp_directory_path().string(), std::strerror(errno)));
    shim_dir = tmpl;
    write_python_shim(shim_dir);
    const char* pp = std::getenv("PYTHONPATH");
    env_set.push_back("PYTHONPATH=" + shim_dir.string() + (pp && *pp ? ":" + std::string(pp) : ""));
    env_set.push_back("GSQ_NVTX_MARKERS=1");
  }

  // With a line callback the program's stdout and stderr are pipes this process reads (see watch_child).
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  // The child reports a failed exec through a close-on-exec pipe (a successful exec closes it unwritten), so the
  // message reaches the CLI instead of being printed from the forked child.
  int exec_pipe[2] = {-1, -1};
  // What a failure before the child runs leaves behind: the pipes made so far and the shim's folder.
  auto fail = [&](const std::string& what) {
    const int err = errno;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], exec_pipe[0], exec_pipe[1]})
      if (fd >= 0) close(fd);
    if (!shim_dir.empty()) fs::remove_all(shim_dir, ec);
    throw_bad_input(fmt::format("{} failed: {}", what, std::strerror(err)));
  };
  if (o.on_line && (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)) fail("pipe");
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) fail("pipe");
  const int64_t t_start = steady_ns();
  const pid_t child = fork();
  if (child < 0) {
    fail("fork");
  }
  if (child == 0) {
    close(exec_pipe[0]);
    if (o.on_line) dup2(out_pipe[1], STDOUT_FILENO), dup2(err_pipe[1], STDERR_FILENO);
    for (const auto& kv : env_set) putenv(const_cast<char*>(kv.c_str()));
    setenv("GSQ_TRACE_ROOT_PID", std::to_string(getpid()).c_str(), 1);
    std::vector<char*> argv;
    for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    const int err = errno;
    [[maybe_unused]] const ssize_t wrote = write(exec_pipe[1], &err, sizeof err);
    _exit(err == ENOENT ? 127 : 126);
  }
  close(exec_pipe[1]);
  std::vector<LinePipe> pipes;
  if (o.on_line) {
    close(out_pipe[1]), close(err_pipe[1]);
    pipes = {{out_pipe[0], STDOUT_FILENO, {}}, {err_pipe[0], STDERR_FILENO, {}}};
  }
  int exec_errno = 0;
  ssize_t got = 0;
  while ((got = read(exec_pipe[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  close(exec_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof exec_errno))
    result.exec_error = fmt::format("cannot run {}: {}", o.command.front(), std::strerror(exec_errno));
  g_forwarded = 0;
  g_child = child;
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {
  }, old_term{}, old_hup{};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGHUP, &sa, &old_hup);
  int status = 0;
  int64_t t_end = 0;
  if (o.on_line || o.timeout_s > 0) {
    struct sigaction ignore_pipe {
    }, old_pipe{};
    ignore_pipe.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore_pipe, &old_pipe);  // our stdout closing must not kill the launcher mid-run
    status = watch_child(child, pipes, o, result.timed_out, t_end);
    sigaction(SIGPIPE, &old_pipe, nullptr);
  } else {
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    t_end = steady_ns();
  }
  result.wall_s = static_cast<double>(t_end - t_start) / 1e9;
  if (!shim_dir.empty()) fs::remove_all(shim_dir, ec);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  g_child = -1;
  result.interrupted_by = g_forwarded;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    result.term_signal = WTERMSIG(status);
    result.exit_code = 128 + result.term_signal;
  }

  // This run's files: the launched process's, and STEM.pid*.gsqt from other traced processes (workers).
  if (fs::exists(out)) result.files.push_back(out);
  std::string stem = out.filename().string();
  if (stem.ends_with(".gsqt")) stem.resize(stem.size() - 5);
  for (const auto& e : fs::directory_iterator(out.parent_path(), ec)) {
    const std::string n = e.path().filename().string();
    if (n.starts_with(stem + ".pid") && n.ends_with(".gsqt") && e.last_write_time(ec) >= started)
      result.files.push_back(e.path());
  }
  if (result.traced && result.files.empty()) {
    result.traced = false;
    result.untraced_reason = "no traced process initialised CUDA (the program made no CUDA call before it ended)";
  }
  return result;
}

}  // namespace gsq::trace
