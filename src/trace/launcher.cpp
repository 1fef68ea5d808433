// Runs a command with the tracer injected (CUDA_INJECTION64_PATH), forwards signals and collects its trace files.
#include "trace/launcher.hpp"

#include "core/error.hpp"
#include "core/process.hpp"
#include "trace/format.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

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
void forward_signal(int sig) {
  if (g_child > 0) kill(g_child, sig);
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

  // The child reports a failed exec through a close-on-exec pipe (a successful exec closes it unwritten), so the
  // message reaches the CLI instead of being printed from the forked child.
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) throw_bad_input(fmt::format("pipe failed: {}", std::strerror(errno)));
  const pid_t child = fork();
  if (child < 0) {
    close(exec_pipe[0]), close(exec_pipe[1]);
    throw_bad_input(fmt::format("fork failed: {}", std::strerror(errno)));
  }
  if (child == 0) {
    close(exec_pipe[0]);
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
  int exec_errno = 0;
  ssize_t got = 0;
  while ((got = read(exec_pipe[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  close(exec_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof exec_errno))
    result.exec_error = fmt::format("cannot run {}: {}", o.command.front(), std::strerror(exec_errno));
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
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  g_child = -1;
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
