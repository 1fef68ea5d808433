// libgsqtrace.so: the CUPTI tracer that `gpusqueeze trace` injects into a CUDA process through CUDA_INJECTION64_PATH.
//
// The CUDA driver calls InitializeInjection() from the process's first cuInit. From there:
//   GPU side   CUPTI activity records (concurrent kernels, memcpy, P2P memcpy, memset, synchronization, NVTX markers,
//              CUPTI overhead) land in buffers from a bounded pool; CUPTI hands full buffers back on its own thread,
//              which only queues them.
//   CPU side   a CUPTI callback on the entry and exit of the runtime/driver functions the analyzer needs (launches,
//              copies, memsets, synchronizations, allocations, graph launches) appends one 96-byte record to a
//              per-thread block (GSQ_TRACE_CPU=activity records CUPTI's RUNTIME/DRIVER activity instead, =none
//              nothing).
//   writer     one thread decodes the queued buffers into gpusqueeze records, writes them as checksummed chunks and
//              returns the buffers to the pool. When the pool is empty CUPTI drops records and counts them; when the
//              CPU-side blocks exceed their cap, new CPU records are dropped and counted; both counts go into the file.
// At exit (before the driver tears down) everything is flushed and an end chunk is written. A fatal SIGABRT/SIGTERM
// still flushes what it can. The traced program is never stopped or changed by a tracer problem: on any failure the
// tracer turns itself off and says why on stderr.
//
// The parts: tracer/config (the GSQ_TRACE_* environment), tracer/decode (CUPTI records → trace records, no libcupti
// call), tracer/queue (bounded buffer pool and CPU blocks), trace/writer (the file); this file is the entry point,
// the CUPTI callbacks and the writer thread. Every CUPTI result goes through GSQ_CUPTI_CHECK (logged, counted).
#include "trace/format.hpp"
#include "trace/tracer/config.hpp"
#include "trace/tracer/cupti_check.hpp"
#include "trace/tracer/decode.hpp"
#include "trace/tracer/queue.hpp"
#include "trace/tracer/session.hpp"

#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace gsq::trace::tracer {
namespace {

int64_t clock_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

uint32_t os_tid() {
  thread_local const uint32_t tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return tid;
}

Tracer* g_tracer = nullptr;  // created once in InitializeInjection, deliberately never destroyed (exit-time use)

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  *buffer = g_tracer->queue.take_buffer();
  *size = *buffer ? kBufferBytes : 0;  // a null buffer makes CUPTI drop (and count) records
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  size_t dropped = 0;
  // After the end chunk (exit) nothing more is written: a buffer CUPTI hands back then is only returned to the pool.
  if (!g_tracer->ended.load() && GSQ_CUPTI_CHECK(cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped)))
    g_tracer->cupti_dropped += dropped;
  g_tracer->queue.complete_buffer(buffer, valid);
}

// Kernel timestamps from Blackwell's Hardware Event System where CUPTI offers it: no software instrumentation of
// each launch (CUPTI's timestamp writes around every kernel, the tracer's main cost on launch-bound programs).
// Returns what the kernel records' timestamps come from. The function is looked up in the libcupti this process
// uses, since a PyTorch process may have loaded an older copy that lacks it. Its failure is an answer, not an error.
std::string enable_hardware_timestamps() {
  Dl_info info{};
  void* lib = nullptr;
  if (dladdr(reinterpret_cast<void*>(&cuptiGetVersion), &info) && info.dli_fname)
    lib = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  using EnableHw = CUptiResult (*)(uint8_t);
  auto* enable = lib ? reinterpret_cast<EnableHw>(dlsym(lib, "cuptiActivityEnableHWTrace")) : nullptr;
  if (lib) dlclose(lib);
  if (!enable) return "software (this libcupti has no hardware event system)";
  const CUptiResult r = enable(1);
  if (r == CUPTI_SUCCESS) return "hardware (HES)";
  const char* err = nullptr;
  if (cuptiGetResultString(r, &err) != CUPTI_SUCCESS) err = nullptr;
  return std::string("software (hardware event system: ") + (err ? err : "unavailable") +
         "; it needs a Blackwell GPU, no MIG, MPS or confidential computing)";
}

// Entry and exit of the selected runtime/driver functions. Entry stores the start time in CUPTI's per-call slot;
// exit appends the record. A driver call made inside a traced runtime call is skipped: the runtime record covers it.
void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  Tracer& t = *g_tracer;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (cbid == CUPTI_CBID_RESOURCE_CU_INIT_FINISHED && !t.forked_child) {
      static std::once_flag once;
      std::call_once(once, [&t] {
        std::string stamps = enable_hardware_timestamps();
        std::lock_guard lk(t.stamps_mu);
        t.kernel_stamps = std::move(stamps);
      });
    }
    return;
  }
  if (!t.cpu_on.load(std::memory_order_relaxed) || t.forked_child) return;
  thread_local int in_runtime = 0;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  const bool driver = domain == CUPTI_CB_DOMAIN_DRIVER_API;
  if (cb->callbackSite == CUPTI_API_ENTER) {
    if (driver && in_runtime > 0) return;
    if (!driver) ++in_runtime;
    *cb->correlationData = cupti_now();
    return;
  }
  // An exit whose entry came before recording was switched on (on-demand windows, --delay) has no start: skip it.
  const bool entered = *cb->correlationData != 0;
  if (!driver) {
    if (entered) --in_runtime;
  } else if (in_runtime > 0) {
    return;
  }
  if (!entered) return;
  Record r;
  r.kind = static_cast<uint8_t>(RecordKind::api);
  const auto& names = driver ? t.driver_name : t.runtime_name;
  r.name = cbid < names.size() ? names[cbid] : 0;
  if (driver) r.flags |= kDriverApi;
  r.start_ns = static_cast<int64_t>(*cb->correlationData);
  r.end_ns = static_cast<int64_t>(cupti_now());
  r.tid = os_tid();
  r.correlation = cb->correlationId;
  t.queue.add_cpu_record(r);
}

void at_exit() {
  if (g_tracer) g_tracer->finish("exit");
}

std::atomic<bool> g_in_fatal{false};
void on_fatal_signal(int sig) {
  if (!g_in_fatal.exchange(true) && g_tracer) {
    alarm(5);  // a flush that cannot finish (the signal hit inside the tracer) must not hang the process
    g_tracer->finish(sig == SIGABRT ? "SIGABRT" : "SIGTERM");
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

void on_fork_child() {
  if (g_tracer) g_tracer->forked_child = true;  // the child has no writer thread; it must not touch the parent's file
}

void say(const std::string& s) {
  std::fprintf(stderr, "gpusqueeze trace: %s\n", s.c_str());
}

// Enables tracing after the delay and stops it after the duration, on a thread of its own.
void window_thread(double delay_s, double duration_s) {
  if (delay_s > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(delay_s));
    if (g_tracer->finished) return;
    g_tracer->enable_activities(true);
  }
  if (duration_s > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(duration_s));
    g_tracer->finish("duration");
  }
}

nlohmann::json header_for(const Config& c) {
  uint32_t cupti_version = 0;
  GSQ_CUPTI_CHECK(cuptiGetVersion(&cupti_version));
  char hostname[256] = {};
  gethostname(hostname, sizeof hostname - 1);
  nlohmann::json header = {
      {"schema", kSchema},
      {"pid", getpid()},
      {"ppid", getppid()},
      {"rank", env_int("RANK", -1)},
      {"local_rank", env_int("LOCAL_RANK", -1)},
      {"world_size", env_int("WORLD_SIZE", -1)},
      {"hostname", hostname},
      {"command", read_cmdline()},
      {"clock", "CUPTI timestamps (ns) for CPU and GPU records alike"},
      {"start",
       {{"cupti_ns", cupti_now()},
        {"realtime_ns", clock_ns(CLOCK_REALTIME)},
        {"monotonic_ns", clock_ns(CLOCK_MONOTONIC)}}},
      {"cupti_version", cupti_version},
      {"cpu_api", c.cpu_name},
      {"delay_s", c.delay_s},
      {"duration_s", c.duration_s},
      {"record_bytes", sizeof(Record)},
      {"on_demand", c.on_demand},
      {"mode", c.markers_only ? "markers" : "full"},
  };
  if (c.on_demand) header["control_file"] = c.control;
  return header;
}

// Names of every runtime and driver function, so records carry string ids without touching the table later; the
// wanted ones become the CPU side's callbacks.
void intern_api_names(Tracer& t, CUpti_CallbackDomain d, uint32_t n, std::vector<uint32_t>& out) {
  out.assign(n, 0);
  for (uint32_t id = 1; id < n; ++id) {
    const char* raw = nullptr;
    // Ids without a function in this CUPTI version answer with an error: a gap in the table, not a failure.
    if (cuptiGetCallbackName(d, id, &raw) != CUPTI_SUCCESS || !raw) continue;
    const std::string clean = clean_api_name(raw);
    out[id] = t.writer->intern(clean);
    if (t.cfg.cpu == CpuMode::callbacks && wanted_api(clean)) t.wanted_callbacks.emplace_back(d, id);
  }
}

int initialize() {
  auto* t = new Tracer(read_config(getpid()));
  const Config& c = t->cfg;
  nlohmann::json header = header_for(c);

  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "gpusqueeze trace";
  char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN * 2] = {};
  params.oldSubscriberName = other;
  params.oldSubscriberSize = sizeof other;
  // Refused subscriptions are an expected outcome (another profiler), reported in the file, not as a CUPTI failure.
  const CUptiResult sub = cuptiSubscribe_v2(&t->subscriber, on_callback, nullptr, &params);
  if (sub != CUPTI_SUCCESS) {
    const char* err = nullptr;
    if (cuptiGetResultString(sub, &err) != CUPTI_SUCCESS) err = nullptr;
    const std::string who = other[0] ? other : "another profiler (Nsight Systems/Compute, torch.profiler, ...)";
    const std::string why = sub == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                                ? "another CUPTI tool is already attached: " + who
                                : std::string("CUPTI could not start: ") + (err ? err : "unknown error");
    header["status"] = c.strict ? "refused" : "not-traced";
    header["reason"] = why;
    try {
      Writer w(c.file, header);
    } catch (const std::exception& e) {
      say(std::string("cannot write the not-traced trace: ") + e.what());
    }
    if (c.strict) {
      say(why + "; --strict: refusing to run untraced");
      std::fflush(stderr);
      _exit(2);
    }
    say(why + "; the program runs untraced");
    return 1;
  }
  header["status"] = "tracing";
  header["kernel_timestamps_asked"] = c.kernel_timestamps_asked.empty() ? "auto" : c.kernel_timestamps_asked;
  if (c.markers_only) {
    t->kernel_stamps = "none (NVTX ranges only)";
  } else if (c.kernel_timestamps_asked == "software") {
    t->kernel_stamps = "software (asked)";
  } else {
    // The hardware event system can be switched on only once the driver has initialised and before the first
    // context: CUPTI's CU_INIT_FINISHED callback is that moment (InitializeInjection runs inside cuInit).
    t->kernel_stamps = "software (CUDA's initialisation did not finish before tracing ended)";
    GSQ_CUPTI_CHECK(
        cuptiEnableCallback(1, t->subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CU_INIT_FINISHED));
  }
  try {
    t->writer = std::make_unique<Writer>(c.file, header);
  } catch (const std::exception& e) {
    say(std::string(e.what()) + "; the program runs untraced");
    GSQ_CUPTI_CHECK(cuptiUnsubscribe(t->subscriber));
    return 1;
  }
  g_tracer = t;
  // NVTX reaches CUPTI through NVTX_INJECTION64_PATH, which must name the libcupti this process really uses: a
  // PyTorch process has already loaded its own copy (pip nvidia-cuda-cupti) before CUDA starts, and the launcher
  // could only guess the toolkit's. NVTX reads the variable at its first call, which is usually after this point.
  if (c.nvtx) {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&cuptiGetVersion), &info) && info.dli_fname)
      setenv("NVTX_INJECTION64_PATH", info.dli_fname, 1);
  }
  intern_api_names(*t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, t->runtime_name);
  intern_api_names(*t, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, t->driver_name);

  if (!GSQ_CUPTI_CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed))) {
    say("CUPTI refused the activity buffers; the program runs untraced");
    t->finished = true;
    auto s = t->stats_json();
    s["ended_by"] = "cuptiActivityRegisterCallbacks failed";
    t->writer->write_end(s);
    GSQ_CUPTI_CHECK(cuptiUnsubscribe(t->subscriber));
    return 1;
  }
  t->writer_thread = std::thread([t] { t->writer_loop(); });
  if (!c.on_demand && c.delay_s <= 0) t->enable_activities(true);
  if (!c.on_demand && (c.delay_s > 0 || c.duration_s > 0)) std::thread(window_thread, c.delay_s, c.duration_s).detach();

  std::atexit(at_exit);
  pthread_atfork(nullptr, nullptr, on_fork_child);
  for (int sig : {SIGABRT, SIGTERM}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) std::signal(sig, on_fatal_signal);
  }
  return 1;
}

}  // namespace
}  // namespace gsq::trace::tracer

// Called by the CUDA driver (CUDA_INJECTION64_PATH) during the first cuInit of the process.
extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  static std::once_flag once;
  static int result = 1;
  std::call_once(once, [] {
    try {
      result = gsq::trace::tracer::initialize();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gpusqueeze trace: tracer disabled: %s\n", e.what());
    }
  });
  return result;
}
