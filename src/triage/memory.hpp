// PyTorch allocator snapshots (`torch.cuda.memory._dump_snapshot()`): what the caching allocator holds per device,
// where the gap between reserved and requested memory goes, whether an OOM was fragmentation or capacity, and which
// allocation sites hold the live bytes. Reads old (blocks with `history`) and new formats (`requested_size`, `frames`,
// `allocator_settings`, `device_traces` with `time_us`), never executing the pickle (triage/pickle.hpp).
#pragma once

#include "core/finding.hpp"
#include "core/pickle.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gsq::triage {

inline constexpr const char* kMemorySchema = "gpusqueeze.memory/1";

enum class BlockState { active, awaiting_free, inactive };

struct MemBlock {
  uint64_t address = 0, size = 0, requested = 0;  // requested: what the caller asked for (size when unknown)
  BlockState state = BlockState::inactive;
  std::string site;  // the allocation site: the first frame outside torch, "function (file:line)"; "" unknown
};

struct MemSegment {
  int device = 0;
  uint64_t address = 0, total = 0;
  int64_t stream = 0;
  std::string type;           // "small" (≤ 1 MiB blocks) or "large"
  bool expandable = false;    // expandable_segments: grown and shrunk in place
  bool private_pool = false;  // segment_pool_id ≠ (0, 0): a CUDA graph's or a MemPool's, not empty_cache()'s
  std::vector<MemBlock> blocks;
};

struct TraceEvent {
  int device = 0;
  std::string action;  // alloc, free_requested, free_completed, segment_alloc/free/map/unmap, oom, snapshot
  uint64_t address = 0, size = 0;
  int64_t stream = 0;
  std::optional<uint64_t> device_free;  // oom: what cudaMemGetInfo said was free on the device
  std::optional<double> time_us;
  std::string site;
};

struct MemorySnapshot {
  std::string origin;
  std::string format;  // "current (requested_size, frames)" or "legacy (history)"
  std::vector<MemSegment> segments;
  std::vector<TraceEvent> trace;
  nlohmann::json allocator_settings;  // as the snapshot recorded them; null when the snapshot predates them
};

// Throws Error(bad_input) for an unreadable pickle or one that is not an allocator snapshot (names what is missing).
[[nodiscard]] MemorySnapshot read_memory_snapshot(const std::filesystem::path& file);
// The same from the file's bytes already read (`origin` names it in errors).
[[nodiscard]] MemorySnapshot parse_memory_snapshot(const std::string& bytes, const std::string& origin);
[[nodiscard]] MemorySnapshot memory_snapshot_from(const PyValue& root, const std::string& origin);

struct SiteBytes {
  std::string site;
  uint64_t bytes = 0;
  uint64_t blocks = 0;
};

// An out-of-memory in the trace, with the allocator's state at that moment: the snapshot's state with the trace
// entries after the OOM undone (a snapshot is often dumped after the exception freed tensors).
struct OomEvent {
  uint64_t requested = 0, device_free = 0;
  std::optional<double> time_us;
  uint64_t reserved_at_oom = 0, live_at_oom = 0;  // live: allocated plus awaiting free
  // Fragmentation: the driver's free bytes and the allocator's free pieces together would have held the request,
  // but no single piece did. Capacity: they would not have.
  bool fragmentation = false;
};

// One device's allocator state. Every byte of `reserved` is in exactly one of: requested (live tensors), rounding
// (allocated − requested), awaiting_free, cached (what empty_cache() would return: whole free segments and the free
// ranges of expandable segments), fragmented (free blocks in ordinary segments that still hold live blocks: stuck
// until every block of the segment is freed), other_pools (free blocks in private pools: CUDA graphs, MemPool).
struct DeviceMemory {
  int device = 0;
  uint64_t segments = 0, blocks = 0;
  uint64_t reserved = 0, allocated = 0, active = 0, requested = 0, awaiting_free = 0;
  uint64_t cached = 0, fragmented = 0, rounding = 0, other_pools = 0;
  uint64_t largest_free_block = 0;
  uint64_t expandable_segments = 0;
  std::vector<OomEvent> ooms;
  std::vector<SiteBytes> top_sites;                                   // live bytes by allocation site, largest first
  std::map<std::string, std::pair<uint64_t, uint64_t>> size_classes;  // class → (segments, bytes)
  std::vector<std::string> segment_maps;                              // the worst segments, one text map each
  // Over the recorded trace (a ring buffer: what was live before it began is unknown): the net change of live bytes,
  // the change at the end of each quarter of its entries, and the allocations it saw that were not freed, by site.
  std::optional<int64_t> trace_growth_bytes;
  std::vector<int64_t> trace_quarters;
  std::vector<SiteBytes> growth_sites;
  // The most live bytes (allocated plus awaiting free) at any point of the recorded trace, when it was, and the
  // allocation sites that held them then (the snapshot's blocks with the later entries undone; blocks allocated before
  // the trace began are "(allocated before the trace)").
  std::optional<uint64_t> peak_live;
  std::optional<double> peak_time_us;
  std::vector<SiteBytes> peak_sites;
  [[nodiscard]] double ratio(uint64_t part) const {
    return reserved ? static_cast<double>(part) / static_cast<double>(reserved) : 0.0;
  }
};

struct MemoryReport {
  std::string origin, format;
  nlohmann::json allocator_settings;
  std::vector<DeviceMemory> devices;
  std::vector<Finding> findings;
};

struct MemoryOptions {
  size_t top_sites = 10;
  size_t segment_maps = 3;
  size_t map_width = 64;
};

[[nodiscard]] MemoryReport analyze_memory(const MemorySnapshot& s, const MemoryOptions& o = {});
[[nodiscard]] nlohmann::json to_json(const MemoryReport& r);

// Growth between two snapshots of one process: live bytes by site in `after` minus those in `before`, per device.
struct SiteGrowth {
  int device = 0;
  std::string site;
  int64_t bytes = 0;  // after − before
};
[[nodiscard]] std::vector<SiteGrowth> memory_growth(const MemorySnapshot& before, const MemorySnapshot& after,
                                                    size_t top = 10);

}  // namespace gsq::triage
