// The gpusqueeze trace file (.gsqt, "gpusqueeze.trace/1"): what the injected tracer writes and every reader reads.
//
// Layout: a 16-byte file magic, then chunks, each `ChunkHeader` + payload, appended and never rewritten:
//   header  (JSON)     once, first: pid, rank, command, clocks, options, status
//   strings (binary)   new entries of the string table: [u32 id][u32 length][bytes]...; before the records using them
//   records (binary)   an array of `Record` (96 bytes each, little-endian)
//   stats   (JSON)     counters so far: records, CUPTI-dropped and tracer-dropped records, CUPTI overhead
//   end     (JSON)     the final stats; present only when the process exited normally
//   counters (JSON)    hardware counter tracks sampled beside the process (GPM, clocks, power), appended by the
//                      launcher after the process ended: {"source", "device", "interval_ms", "clock": "monotonic",
//                      "tracks": [{"name", "unit", "t_ns": [...], "values": [...]}]}
// Every chunk carries a CRC-32 of its payload, so a reader stops at the first chunk that a killed process left cut
// short or damaged and keeps everything before it. No library here touches CUPTI: the tracer translates CUPTI's
// records into `Record` on its writer thread.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gsq::trace {

inline constexpr std::string_view kSchema = "gpusqueeze.trace/1";
inline constexpr char kFileMagic[16] = {'G', 'S', 'Q', 'T', 'R', 'A', 'C', 'E', 0, 0, 0, 1, 0, 0, 0, 0};
inline constexpr uint32_t kChunkMagic = 0x43515347;  // "GSQC"
inline constexpr uint32_t kMaxChunkBytes = 256u << 20;

enum class ChunkType : uint32_t { header = 1, strings = 2, records = 3, stats = 4, end = 5, counters = 6 };

struct ChunkHeader {
  uint32_t magic = kChunkMagic;
  uint32_t type = 0;
  uint32_t size = 0;  // payload bytes
  uint32_t crc = 0;   // CRC-32 (zlib) of the payload
};
static_assert(sizeof(ChunkHeader) == 16);

enum class RecordKind : uint8_t {
  kernel = 1,
  memcpy = 2,
  memset = 3,
  sync = 4,      // GPU-side wait recorded by CUPTI (stream/event/context synchronize, stream wait event)
  api = 5,       // the CPU side of a CUDA runtime or driver call (name = function name)
  range = 6,     // NVTX range (push/pop or start/end) on a CPU thread
  overhead = 7,  // time CUPTI itself spent (buffer flush, driver instrumentation), name = what
};

// Copy and memory kinds use CUPTI's numbering (CUpti_ActivityMemcpyKind, CUpti_ActivityMemoryKind) so nothing is
// lost in translation; the names below are what readers show.
enum RecordFlags : uint8_t { kAsync = 1, kFromGraph = 2, kDriverApi = 4 };

struct Record {
  uint8_t kind = 0;        // RecordKind
  uint8_t copy_kind = 0;   // memcpy: CUpti_ActivityMemcpyKind (1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP, ...)
  uint8_t src_kind = 0;    // memcpy: CUpti_ActivityMemoryKind (1 pageable, 2 pinned, 3 device, 5 managed)
  uint8_t dst_kind = 0;    // memcpy: destination; memset: the memory kind set
  uint8_t flags = 0;       // RecordFlags
  uint8_t sync_type = 0;   // sync: CUpti_ActivitySynchronizationType
  uint16_t registers = 0;  // kernel: registers per thread
  uint32_t name = 0;       // string id; 0 = none
  uint32_t device = 0, context = 0, stream = 0;
  uint32_t tid = 0;                  // api/range: OS thread id
  uint32_t static_smem = 0;          // kernel: static shared memory per block (bytes)
  int64_t start_ns = 0, end_ns = 0;  // CUPTI timestamps (ns); CPU and GPU share this clock
  uint64_t correlation = 0;          // links an api record to the GPU work it launched
  uint64_t bytes = 0;                // memcpy/memset bytes
  uint64_t graph_id = 0;             // kernel/memcpy/memset launched from a CUDA graph: the graph's id, else 0
  int32_t grid[3] = {0, 0, 0};
  uint16_t block[3] = {0, 0, 0};
  uint16_t reserved = 0;
  uint32_t dynamic_smem = 0;  // kernel: dynamic shared memory per block (bytes)
};
static_assert(sizeof(Record) == 96, "the on-disk record is 96 bytes");

// a − b without signed overflow on damaged input (wraps instead; intact files never come near the limits).
[[nodiscard]] constexpr int64_t diff_ns(int64_t a, int64_t b) noexcept {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}

[[nodiscard]] std::string_view copy_kind_name(uint8_t cupti_copy_kind);      // "HtoD", "DtoH", "DtoD", "PtoP", ...
[[nodiscard]] std::string_view memory_kind_name(uint8_t cupti_memory_kind);  // "Pageable", "Pinned", "Device", ...
[[nodiscard]] std::string_view sync_type_name(uint8_t cupti_sync_type);      // "Stream Sync", "Event Sync", ...
[[nodiscard]] std::string_view record_kind_name(uint8_t kind);               // "kernel", "memcpy", ...

// Appends chunks to a file with plain write(2) calls, so each completed chunk is in the page cache (and survives a
// kill -9 of the process) the moment write returns. Not thread-safe: one writer thread owns it.
class Writer {
 public:
  Writer(const std::filesystem::path& file, const nlohmann::json& header);  // throws Error(bad_input) if unwritable
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Returns the id of `s`, adding it to the table (written with the next records chunk) the first time.
  uint32_t intern(std::string_view s);
  void write_records(std::span<const Record> records);  // pending strings first, then the records
  void write_stats(const nlohmann::json& stats);
  void write_end(const nlohmann::json& stats);
  [[nodiscard]] uint64_t bytes_written() const noexcept { return bytes_; }
  [[nodiscard]] bool failed() const noexcept {
    return failed_;
  }  // a write failed (disk full): later writes are skipped

 private:
  void chunk(ChunkType type, std::string_view payload);
  int fd_ = -1;
  bool failed_ = false;
  uint64_t bytes_ = 0;
  std::unordered_map<std::string, uint32_t> ids_;
  std::string pending_strings_;
  uint32_t next_id_ = 1;
};

// Appends one counters chunk (payload as described above) to an existing trace file. Throws Error(bad_input) if the
// file cannot be opened for appending.
void append_counters(const std::filesystem::path& file, const nlohmann::json& payload);

// A counter sampled over time, its timestamps on the trace's CUPTI clock (converted from CLOCK_MONOTONIC with the
// header's start pair).
struct CounterTrack {
  std::string name, unit, source;
  uint32_t device = 0;
  std::string device_name;           // from the chunk's device_info, "" if absent
  double dram_peak_bytes_per_s = 0;  // likewise, 0 if absent
  nlohmann::json device_info;        // the chunk's whole device_info (limits: slowdown temperature, power limit, ...)
  std::vector<int64_t> t_ns;
  std::vector<double> values;
};

// Everything a reader gets from a file, up to the last intact chunk.
struct TraceFile {
  std::filesystem::path path;
  nlohmann::json header;
  nlohmann::json stats;  // the last stats or end chunk; empty object if none
  std::vector<std::string> strings{""};
  std::vector<Record> records;
  std::vector<CounterTrack> counters;
  std::vector<nlohmann::json> devices;  // each counters chunk's device_info (a chunk without tracks: the device alone)
  size_t chunks = 0;
  bool complete = false;   // the end chunk was written (the process exited normally)
  std::string truncation;  // why reading stopped before the end of the file, "" if it did not
  [[nodiscard]] const std::string& name(const Record& r) const;
};

// Throws Error(bad_input) if the file is missing, not a gpusqueeze trace, of another version, or has no intact header.
// A damaged or cut-off tail is not an error: reading stops there and `truncation` says where and why.
[[nodiscard]] TraceFile read_trace(const std::filesystem::path& file);
[[nodiscard]] TraceFile parse_trace(std::string_view bytes, const std::filesystem::path& origin);
[[nodiscard]] bool looks_like_trace(const std::filesystem::path& file);  // starts with the file magic

// Per-kind counts and totals, for `trace info` and the launcher's summary line.
struct Summary {
  size_t kernels = 0, memcpys = 0, memsets = 0, syncs = 0, api_calls = 0, ranges = 0;
  size_t pageable_copies = 0, pinned_copies = 0, graph_kernels = 0;
  uint64_t copy_bytes = 0;
  int64_t gpu_busy_ns = 0, span_ns = 0;
};
[[nodiscard]] Summary summarize(const TraceFile& t);
[[nodiscard]] nlohmann::json summary_json(const TraceFile& t);

// Chrome trace-event JSON (chrome://tracing, ui.perfetto.dev): kernels, copies, memsets and syncs on one track per
// GPU stream, CUDA calls and NVTX ranges on one track per CPU thread, flow arrows from each call to the work it
// launched.
void write_chrome(const TraceFile& t, std::ostream& out);

}  // namespace gsq::trace
