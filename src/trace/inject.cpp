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
// Configuration comes from the environment the launcher sets: GSQ_TRACE_FILE, GSQ_TRACE_ROOT_PID, GSQ_TRACE_DELAY,
// GSQ_TRACE_DURATION, GSQ_TRACE_STRICT, GSQ_TRACE_CPU, GSQ_TRACE_BUFFER_MB, GSQ_TRACE_NVTX, GSQ_TRACE_ON_DEMAND,
// GSQ_TRACE_CONTROL_DIR.
#include "trace/format.hpp"

#include <cupti.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace gsq::trace {
namespace {

constexpr size_t kBufferBytes = 8u << 20;
constexpr size_t kThreadBlock = 4096;  // CPU records per thread before the block is handed to the writer

enum class CpuMode { callbacks, activity, none };

struct Config {
  std::string file;
  double delay_s = 0, duration_s = 0;  // duration 0 = until exit
  bool strict = false;
  bool on_demand = false;     // idle until `gpusqueeze capture PID` asks for a window through the control file
  std::string control, done;  // control file the capture command writes; reply the tracer writes when a window ends
  CpuMode cpu = CpuMode::callbacks;
  size_t max_buffers = 32;            // CUPTI activity buffers in flight (× 8 MiB)
  size_t max_cpu_records = 2u << 20;  // CPU records queued for the writer (× 96 B)
};

double env_double(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtod(v, nullptr) : fallback;
}

std::string env_string(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

int64_t clock_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

uint64_t cupti_now() {
  uint64_t t = 0;
  cuptiGetTimestamp(&t);
  return t;
}

uint32_t os_tid() {
  thread_local const uint32_t tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return tid;
}

// Per-process file name: the launched process writes the path it was given; any other traced process (a torchrun
// worker, a subprocess) writes STEM.pidPID[.rankR].gsqt beside it.
std::string file_for_this_process(const std::string& requested) {
  const std::string root = env_string("GSQ_TRACE_ROOT_PID");
  if (root == std::to_string(getpid())) return requested;
  std::string stem = requested;
  if (stem.size() > 5 && stem.ends_with(".gsqt")) stem.resize(stem.size() - 5);
  std::string name = stem + ".pid" + std::to_string(getpid());
  if (const std::string rank = env_string("RANK"); !rank.empty()) name += ".rank" + rank;
  return name + ".gsqt";
}

std::string read_cmdline() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (char& c : s)
    if (c == '\0') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// "cudaLaunchKernel_v7000" → "cudaLaunchKernel", "cudaMemcpyAsync_ptsz_v7000" → "cudaMemcpyAsync".
std::string clean_api_name(std::string n) {
  if (const auto v = n.rfind("_v");
      v != std::string::npos && v + 2 < n.size() && n.find_first_not_of("0123456789", v + 2) == std::string::npos)
    n.resize(v);
  for (const char* suffix : {"_ptsz", "_ptds"})
    if (n.ends_with(suffix)) n.resize(n.size() - std::strlen(suffix));
  return n;
}

// The calls whose CPU side the analyzer uses: launches, copies, memsets, waits, allocations.
bool wanted_api(const std::string& n) {
  static const char* const prefixes[] = {
      "cudaLaunch",
      "cudaGraphLaunch",
      "cudaMemcpy",
      "cudaMemset",
      "cudaStreamSynchronize",
      "cudaDeviceSynchronize",
      "cudaEventSynchronize",
      "cudaStreamWaitEvent",
      "cudaMalloc",
      "cudaFree",
      "cudaHostAlloc",
      "cudaHostRegister",
      "cudaStreamQuery",
      "cudaEventQuery",
      "cuLaunch",
      "cuGraphLaunch",
      "cuMemcpy",
      "cuMemset",
      "cuStreamSynchronize",
      "cuCtxSynchronize",
      "cuEventSynchronize",
      "cuStreamWaitEvent",
      "cuMemAlloc",
      "cuMemFree",
      "cuMemHostAlloc",
  };
  for (const char* p : prefixes)
    if (n.starts_with(p)) return true;
  return false;
}

std::string demangle(const char* name) {
  if (!name) return "(unknown kernel)";
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
  return status == 0 && d ? d.get() : name;
}

// The fields CUPTI's memcpy and peer-to-peer memcpy records share.
template <class Copy>
void fill_copy(Record& r, const Copy& m) {
  r.kind = static_cast<uint8_t>(RecordKind::memcpy);
  r.copy_kind = m.copyKind, r.src_kind = m.srcKind, r.dst_kind = m.dstKind;
  if (m.flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) r.flags |= kAsync;
  r.bytes = m.bytes;
  r.start_ns = static_cast<int64_t>(m.start), r.end_ns = static_cast<int64_t>(m.end);
  r.device = m.deviceId, r.context = m.contextId, r.stream = m.streamId;
  r.correlation = m.correlationId;
}

struct ThreadBlock {
  std::mutex mu;
  std::vector<Record> records;
};

struct CompletedBuffer {
  uint8_t* data;
  size_t valid;
};

class Tracer {
 public:
  Config cfg;
  std::unique_ptr<Writer> writer;
  CUpti_SubscriberHandle subscriber = nullptr;
  std::atomic<bool> cpu_on{false};
  std::atomic<bool> finished{false};
  bool forked_child = false;

  // Names of the runtime/driver functions, interned before the writer thread starts (read-only afterwards).
  std::vector<uint32_t> runtime_name, driver_name;
  // The callbacks of the CPU side; enabled only while recording, so an idle (delayed, on-demand) tracer costs
  // the traced program no callback dispatch.
  std::vector<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> wanted_callbacks;
  std::string kernel_stamps;  // where kernel timestamps come from (hardware events or software); under mu

  // Buffers and blocks on their way to the writer.
  std::mutex mu;
  std::condition_variable cv;
  std::deque<CompletedBuffer> buffers;
  std::vector<std::vector<Record>> cpu_blocks;
  std::vector<uint8_t*> free_buffers;
  size_t buffers_allocated = 0;
  size_t cpu_queued = 0;
  bool stop = false;
  std::vector<std::unique_ptr<ThreadBlock>> threads;  // one per thread that ever made a traced call; never freed

  // Counters for the stats chunk.
  std::atomic<uint64_t> cupti_dropped{0}, cpu_dropped{0}, buffers_refused{0};
  uint64_t by_kind[8] = {};
  uint64_t overhead_ns = 0, overhead_records = 0;
  nlohmann::json windows = nlohmann::json::array();  // on-demand captures: [{start_ns, end_ns}]
  std::thread writer_thread;

  uint8_t* take_buffer() {
    std::lock_guard lk(mu);
    if (!free_buffers.empty()) {
      uint8_t* b = free_buffers.back();
      free_buffers.pop_back();
      return b;
    }
    if (buffers_allocated >= cfg.max_buffers) return nullptr;
    ++buffers_allocated;
    return static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  }

  ThreadBlock& thread_block() {
    thread_local ThreadBlock* mine = nullptr;
    if (!mine) {
      auto b = std::make_unique<ThreadBlock>();
      b->records.reserve(kThreadBlock);
      std::lock_guard lk(mu);
      mine = b.get();
      threads.push_back(std::move(b));
    }
    return *mine;
  }

  void add_cpu_record(const Record& r) {
    ThreadBlock& b = thread_block();
    std::unique_lock lk(b.mu);
    b.records.push_back(r);
    if (b.records.size() < kThreadBlock) return;
    std::vector<Record> full;
    full.reserve(kThreadBlock);
    full.swap(b.records);
    lk.unlock();
    std::lock_guard g(mu);
    if (cpu_queued + full.size() > cfg.max_cpu_records) {
      cpu_dropped += full.size();  // the writer is behind by more than the cap: drop this block, count it
      return;
    }
    cpu_queued += full.size();
    cpu_blocks.push_back(std::move(full));
    cv.notify_one();
  }

  // ---- writer thread ----

  Record decode_one(const CUpti_Activity* a, std::unordered_map<const char*, uint32_t>& kernel_names,
                    std::unordered_map<uint32_t, Record>& open_markers, bool& keep) {
    Record r;
    keep = true;
    switch (a->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(a);
        r.kind = static_cast<uint8_t>(RecordKind::kernel);
        auto [it, added] = kernel_names.try_emplace(k->name, 0);
        if (added) it->second = writer->intern(demangle(k->name));
        r.name = it->second;
        r.start_ns = static_cast<int64_t>(k->start), r.end_ns = static_cast<int64_t>(k->end);
        r.device = k->deviceId, r.context = k->contextId, r.stream = k->streamId;
        r.correlation = k->correlationId;
        r.grid[0] = k->gridX, r.grid[1] = k->gridY, r.grid[2] = k->gridZ;
        r.block[0] = static_cast<uint16_t>(k->blockX), r.block[1] = static_cast<uint16_t>(k->blockY),
        r.block[2] = static_cast<uint16_t>(k->blockZ);
        r.registers = k->registersPerThread;
        r.static_smem = static_cast<uint32_t>(k->staticSharedMemory);
        r.dynamic_smem = static_cast<uint32_t>(k->dynamicSharedMemory);
        r.graph_id = k->graphId;
        if (k->graphId != 0) r.flags |= kFromGraph;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(a);
        fill_copy(r, *m);
        r.graph_id = m->graphId;
        if (m->graphId != 0) r.flags |= kFromGraph;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY2:
        fill_copy(r, *reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(a));
        break;
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(a);
        r.kind = static_cast<uint8_t>(RecordKind::memset);
        r.dst_kind = static_cast<uint8_t>(m->memoryKind);
        if (m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) r.flags |= kAsync;
        r.bytes = m->bytes;
        r.start_ns = static_cast<int64_t>(m->start), r.end_ns = static_cast<int64_t>(m->end);
        r.device = m->deviceId, r.context = m->contextId, r.stream = m->streamId;
        r.correlation = m->correlationId;
        r.graph_id = m->graphId;
        if (m->graphId != 0) r.flags |= kFromGraph;
        break;
      }
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(a);
        r.kind = static_cast<uint8_t>(RecordKind::sync);
        r.sync_type = static_cast<uint8_t>(s->type);
        r.start_ns = static_cast<int64_t>(s->start), r.end_ns = static_cast<int64_t>(s->end);
        r.context = s->contextId, r.stream = s->streamId;
        r.correlation = s->correlationId;
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* api = reinterpret_cast<const CUpti_ActivityAPI*>(a);
        const bool driver = a->kind == CUPTI_ACTIVITY_KIND_DRIVER;
        const auto& names = driver ? driver_name : runtime_name;
        r.kind = static_cast<uint8_t>(RecordKind::api);
        r.name = api->cbid < names.size() ? names[api->cbid] : 0;
        if (driver) r.flags |= kDriverApi;
        r.start_ns = static_cast<int64_t>(api->start), r.end_ns = static_cast<int64_t>(api->end);
        r.tid = api->threadId;
        r.correlation = api->correlationId;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MARKER: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(a);
        keep = false;
        if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START || m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
          Record open;
          open.kind = static_cast<uint8_t>(RecordKind::range);
          open.name = writer->intern(m->name ? m->name : "(unnamed range)");
          open.start_ns = open.end_ns = static_cast<int64_t>(m->timestamp);
          if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS)
            open.tid = m->objectId.pt.threadId;
          if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
            keep = true;
            return open;
          }
          open_markers[m->id] = open;
        } else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
          if (auto it = open_markers.find(m->id); it != open_markers.end()) {
            r = it->second;
            r.end_ns = static_cast<int64_t>(m->timestamp);
            open_markers.erase(it);
            keep = true;
          }
        }
        break;
      }
      case CUPTI_ACTIVITY_KIND_OVERHEAD: {
        const auto* o = reinterpret_cast<const CUpti_ActivityOverhead3*>(a);
        overhead_ns += o->end - o->start;
        ++overhead_records;
        keep = false;
        break;
      }
      default:
        keep = false;
    }
    return r;
  }

  std::string kernel_timestamps_now() {
    std::lock_guard lk(mu);
    return kernel_stamps;
  }

  nlohmann::json stats_json() {
    nlohmann::json records = nlohmann::json::object();
    for (uint8_t k = 1; k < 8; ++k) records[std::string(record_kind_name(k))] = by_kind[k];
    return {{"records", records},
            {"cupti_dropped_records", cupti_dropped.load()},
            {"cpu_dropped_records", cpu_dropped.load()},
            {"buffers_refused", buffers_refused.load()},
            {"cupti_overhead_ns", overhead_ns},
            {"cupti_overhead_records", overhead_records},
            {"file_bytes", writer ? writer->bytes_written() : 0},
            {"drop_policy", "newest records dropped when the writer is behind (buffer pool or CPU queue full)"},
            {"cupti_ns_now", cupti_now()},
            {"capture_windows", windows},
            {"kernel_timestamps", kernel_timestamps_now()},
            {"write_failed", writer && writer->failed()}};
  }

  void write(std::vector<Record>& out) {
    if (out.empty()) return;
    for (const Record& r : out) ++by_kind[r.kind & 7];
    writer->write_records(out);
    out.clear();
  }

  void writer_loop() {
    std::unordered_map<const char*, uint32_t> kernel_names;
    std::unordered_map<uint32_t, Record> open_markers;
    std::vector<Record> out;
    auto last_stats = std::chrono::steady_clock::now();
    auto last_sweep = last_stats;
    // On-demand capture: the control file holds the window's length in seconds.
    bool capturing = false, closing = false;
    uint64_t window_start = 0;
    auto window_end = last_stats;
    while (true) {
      std::deque<CompletedBuffer> bufs;
      std::vector<std::vector<Record>> blocks;
      bool stopping;
      {
        std::unique_lock lk(mu);
        cv.wait_for(lk, std::chrono::milliseconds(200),
                    [&] { return stop || !buffers.empty() || !cpu_blocks.empty(); });
        bufs.swap(buffers);
        blocks.swap(cpu_blocks);
        cpu_queued = 0;
        stopping = stop;
      }
      for (const auto& b : bufs) {
        CUpti_Activity* rec = nullptr;
        while (cuptiActivityGetNextRecord(b.data, b.valid, &rec) == CUPTI_SUCCESS) {
          bool keep = false;
          const Record r = decode_one(rec, kernel_names, open_markers, keep);
          if (keep) out.push_back(r);
        }
        std::lock_guard lk(mu);
        free_buffers.push_back(b.data);
      }
      for (auto& blk : blocks) out.insert(out.end(), blk.begin(), blk.end());
      const auto now = std::chrono::steady_clock::now();
      // Partly filled per-thread blocks are swept every half second, so a killed process loses at most that much.
      if (stopping || now - last_sweep > std::chrono::milliseconds(500)) {
        last_sweep = now;
        std::vector<ThreadBlock*> ts;
        {
          std::lock_guard lk(mu);
          for (auto& t : threads) ts.push_back(t.get());
        }
        for (ThreadBlock* t : ts) {
          std::lock_guard lk(t->mu);
          out.insert(out.end(), t->records.begin(), t->records.end());
          t->records.clear();
        }
      }
      write(out);
      if (stopping) break;
      if (cfg.on_demand) {
        if (closing) {  // the window's records were flushed and written above: say so to the capture command
          closing = false;
          windows.push_back({{"start_ns", window_start}, {"end_ns", cupti_now()}});
          writer->write_stats(stats_json());
          const std::string tmp = cfg.done + ".tmp";
          if (FILE* f = std::fopen(tmp.c_str(), "w")) {
            std::fputs(
                nlohmann::json{
                    {"schema", "gpusqueeze.capture-window/1"}, {"trace", cfg.file}, {"window", windows.back()}}
                    .dump()
                    .c_str(),
                f);
            std::fclose(f);
            std::rename(tmp.c_str(), cfg.done.c_str());
          }
        } else if (capturing && now >= window_end) {
          capturing = false;
          enable_activities(false);
          cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
          last_sweep = now - std::chrono::seconds(1);  // sweep the CPU blocks on the next pass too
          closing = true;
          continue;
        } else if (!capturing) {
          if (FILE* f = std::fopen(cfg.control.c_str(), "r")) {  // one fopen per 200 ms while idle
            double secs = 0;
            const int got = std::fscanf(f, "%lf", &secs);
            std::fclose(f);
            std::remove(cfg.control.c_str());
            if (got == 1 && secs > 0) {
              window_start = cupti_now();
              window_end = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                     std::chrono::duration<double>(std::min(secs, 3600.0)));
              capturing = true;
              enable_activities(true);
            }
          }
        }
      }
      if (now - last_stats > std::chrono::seconds(1)) {
        last_stats = now;
        writer->write_stats(stats_json());
        // Hand over the completed records of partly filled buffers too, so a killed process loses at most about a
        // second of GPU records (a buffer is otherwise handed over only when it is full, or at exit).
        cuptiActivityFlushAll(0);
      }
    }
  }

  void enable_activities(bool on) {
    const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                        CUPTI_ACTIVITY_KIND_MEMCPY2,           CUPTI_ACTIVITY_KIND_MEMSET,
                                        CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,   CUPTI_ACTIVITY_KIND_MARKER,
                                        CUPTI_ACTIVITY_KIND_OVERHEAD};
    for (auto k : kinds) on ? cuptiActivityEnable(k) : cuptiActivityDisable(k);
    if (cfg.cpu == CpuMode::activity) {
      for (auto k : {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER})
        on ? cuptiActivityEnable(k) : cuptiActivityDisable(k);
    }
    if (cfg.cpu == CpuMode::callbacks) {
      for (const auto& [d, id] : wanted_callbacks) cuptiEnableCallback(on ? 1 : 0, subscriber, d, id);
      cpu_on = on;
    }
  }

  // Stops recording, flushes CUPTI and writes the end chunk. Safe to call more than once.
  void finish(const char* why) {
    if (forked_child || finished.exchange(true)) return;
    enable_activities(false);
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    {
      std::lock_guard lk(mu);
      stop = true;
    }
    cv.notify_one();
    if (writer_thread.joinable()) writer_thread.join();
    auto s = stats_json();
    s["ended_by"] = why;
    writer->write_end(s);
  }
};

Tracer* g_tracer = nullptr;  // created once in InitializeInjection, deliberately never destroyed (exit-time use)

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  *buffer = g_tracer->take_buffer();
  *size = *buffer ? kBufferBytes : 0;  // a null buffer makes CUPTI drop (and count) records
  if (!*buffer) ++g_tracer->buffers_refused;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS) g_tracer->cupti_dropped += dropped;
  {
    std::lock_guard lk(g_tracer->mu);
    g_tracer->buffers.push_back({buffer, valid});
  }
  g_tracer->cv.notify_one();
}

// Kernel timestamps from Blackwell's Hardware Event System where CUPTI offers it: no software instrumentation of
// each launch (CUPTI's timestamp writes around every kernel, the tracer's main cost on launch-bound programs).
// Returns what the kernel records' timestamps come from. The function is looked up in the libcupti this process
// uses, since a PyTorch process may have loaded an older copy that lacks it.
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
  cuptiGetResultString(r, &err);
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
        std::lock_guard lk(t.mu);
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
  t.add_cpu_record(r);
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

int initialize() {
  auto* t = new Tracer;
  Config& c = t->cfg;
  c.file = env_string("GSQ_TRACE_FILE");
  if (c.file.empty()) c.file = "gpusqueeze.gsqt";
  c.file = file_for_this_process(c.file);
  c.delay_s = env_double("GSQ_TRACE_DELAY", 0);
  c.duration_s = env_double("GSQ_TRACE_DURATION", 0);
  c.strict = env_int("GSQ_TRACE_STRICT", 0) != 0;
  c.on_demand = env_int("GSQ_TRACE_ON_DEMAND", 0) != 0;
  {
    const std::string dir = env_string("GSQ_TRACE_CONTROL_DIR").empty() ? "/tmp" : env_string("GSQ_TRACE_CONTROL_DIR");
    c.control = dir + "/gsqtrace-" + std::to_string(getpid()) + ".ctl";
    c.done = dir + "/gsqtrace-" + std::to_string(getpid()) + ".done";
  }
  const std::string cpu = env_string("GSQ_TRACE_CPU");
  c.cpu = cpu == "activity" ? CpuMode::activity : cpu == "none" ? CpuMode::none : CpuMode::callbacks;
  const int mb = env_int("GSQ_TRACE_BUFFER_MB", 256);
  c.max_buffers = std::max<size_t>(2, static_cast<size_t>(std::max(mb, 16)) * (1u << 20) / kBufferBytes);
  c.max_cpu_records = static_cast<size_t>(std::max(mb, 16)) * (1u << 20) / sizeof(Record);

  uint32_t cupti_version = 0;
  cuptiGetVersion(&cupti_version);
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
      {"cpu_api", cpu.empty() ? "callbacks" : cpu},
      {"delay_s", c.delay_s},
      {"duration_s", c.duration_s},
      {"record_bytes", sizeof(Record)},
      {"on_demand", c.on_demand},
  };
  if (c.on_demand) header["control_file"] = c.control;

  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "gpusqueeze trace";
  char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN * 2] = {};
  params.oldSubscriberName = other;
  params.oldSubscriberSize = sizeof other;
  const CUptiResult sub = cuptiSubscribe_v2(&t->subscriber, on_callback, nullptr, &params);
  if (sub != CUPTI_SUCCESS) {
    const char* err = nullptr;
    cuptiGetResultString(sub, &err);
    const std::string who = other[0] ? other : "another profiler (Nsight Systems/Compute, torch.profiler, ...)";
    const std::string why = sub == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                                ? "another CUPTI tool is already attached: " + who
                                : std::string("CUPTI could not start: ") + (err ? err : "unknown error");
    header["status"] = c.strict ? "refused" : "not-traced";
    header["reason"] = why;
    try {
      Writer w(c.file, header);
    } catch (...) {
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
  const std::string stamps = env_string("GSQ_TRACE_KERNEL_TIMESTAMPS");
  header["kernel_timestamps_asked"] = stamps.empty() ? "auto" : stamps;
  if (stamps == "software") {
    t->kernel_stamps = "software (asked)";
  } else {
    // The hardware event system can be switched on only once the driver has initialised and before the first
    // context: CUPTI's CU_INIT_FINISHED callback is that moment (InitializeInjection runs inside cuInit).
    t->kernel_stamps = "software (CUDA's initialisation did not finish before tracing ended)";
    cuptiEnableCallback(1, t->subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CU_INIT_FINISHED);
  }
  try {
    t->writer = std::make_unique<Writer>(c.file, header);
  } catch (const std::exception& e) {
    say(std::string(e.what()) + "; the program runs untraced");
    cuptiUnsubscribe(t->subscriber);
    return 1;
  }
  g_tracer = t;
  // NVTX reaches CUPTI through NVTX_INJECTION64_PATH, which must name the libcupti this process really uses: a
  // PyTorch process has already loaded its own copy (pip nvidia-cuda-cupti) before CUDA starts, and the launcher
  // could only guess the toolkit's. NVTX reads the variable at its first call, which is usually after this point.
  if (env_int("GSQ_TRACE_NVTX", 0) != 0) {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&cuptiGetVersion), &info) && info.dli_fname)
      setenv("NVTX_INJECTION64_PATH", info.dli_fname, 1);
  }
  // Names of every runtime and driver function, so records can carry string ids without touching the table later.
  auto names = [&](CUpti_CallbackDomain d, uint32_t n, std::vector<uint32_t>& out) {
    out.assign(n, 0);
    for (uint32_t id = 1; id < n; ++id) {
      const char* raw = nullptr;
      if (cuptiGetCallbackName(d, id, &raw) != CUPTI_SUCCESS || !raw) continue;
      const std::string clean = clean_api_name(raw);
      out[id] = t->writer->intern(clean);
      if (c.cpu == CpuMode::callbacks && wanted_api(clean)) t->wanted_callbacks.emplace_back(d, id);
    }
  };
  names(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, t->runtime_name);
  names(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, t->driver_name);

  cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
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
}  // namespace gsq::trace

// Called by the CUDA driver (CUDA_INJECTION64_PATH) during the first cuInit of the process.
extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  static std::once_flag once;
  static int result = 1;
  std::call_once(once, [] {
    try {
      result = gsq::trace::initialize();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gpusqueeze trace: tracer disabled: %s\n", e.what());
    }
  });
  return result;
}
