// Allocator snapshots published by others (../shared/data/pytorch-snapshots, sources beside each file): the split of
// reserved memory checked against sums computed here straight from the pickle's structure, the OOM verdicts, both
// formats; growth between two snapshots on an edited copy (marked as such).
#include "triage/memory.hpp"

#include "core/error.hpp"
#include "support/fixtures.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace gsq::triage {
namespace {

namespace fs = std::filesystem;

fs::path snapshot_dir() {
  return test::shared_data("pytorch-snapshots");
}

#define NEED_SNAPSHOT(name)                      \
  const fs::path file = snapshot_dir() / (name); \
  if (!fs::exists(file)) GTEST_SKIP() << file << " not present (the shared test data lives beside the project)"

PyValue raw(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_pickle(bytes, file.string());
}

// The split recomputed from the raw pickle with nothing of memory.cpp: per device, every segment's blocks summed by
// state; free bytes of an ordinary default-pool segment that holds a live block are fragmented, other free bytes are
// cached (or in a private pool).
struct Sums {
  uint64_t reserved = 0, allocated = 0, requested = 0, cached = 0, fragmented = 0;
};
std::map<int64_t, Sums> sums_of(const PyValue& root) {
  std::map<int64_t, Sums> out;
  for (const auto& seg : root.list_or_empty("segments")) {
    Sums& s = out[seg.int_or("device", 0)];
    const auto total = static_cast<uint64_t>(seg.int_or("total_size", 0));
    s.reserved += total;
    uint64_t live = 0;
    for (const auto& b : seg.list_or_empty("blocks")) {
      const std::string state = b.str_or("state", "");
      if (state != "inactive") live += static_cast<uint64_t>(b.int_or("size", 0));
      if (state == "active_allocated") {
        s.allocated += static_cast<uint64_t>(b.int_or("size", 0));
        s.requested += static_cast<uint64_t>(b.int_or("requested_size", 0));
      }
    }
    bool private_pool = false;
    if (const PyValue* pool = seg.get("segment_pool_id"))
      for (const auto& x : *pool->items) private_pool = private_pool || x.integer != 0;
    if (private_pool) continue;
    (live > 0 && !seg.int_or("is_expandable", 0) ? s.fragmented : s.cached) += total - live;
  }
  return out;
}

void expect_split_matches_the_raw_sums(const fs::path& file) {
  const auto sums = sums_of(raw(file));
  const auto r = analyze_memory(read_memory_snapshot(file));
  ASSERT_EQ(r.devices.size(), sums.size()) << file;
  for (const auto& d : r.devices) {
    const Sums& s = sums.at(d.device);
    EXPECT_EQ(d.reserved, s.reserved) << file << " GPU " << d.device;
    EXPECT_EQ(d.allocated, s.allocated) << file;
    EXPECT_EQ(d.requested, s.requested) << file;
    EXPECT_EQ(d.cached, s.cached) << file;
    EXPECT_EQ(d.fragmented, s.fragmented) << file;
    // Every reserved byte is in exactly one place.
    EXPECT_EQ(d.requested + d.rounding + d.awaiting_free + d.cached + d.fragmented + d.other_pools, d.reserved) << file;
  }
}

TEST(MemorySnapshot, TheSplitOfReservedMemoryMatchesSumsOverTheRawPickleInEveryPublicSnapshot) {
  if (!fs::exists(snapshot_dir())) GTEST_SKIP() << snapshot_dir() << " not present";
  int files = 0;
  for (const auto& e : fs::directory_iterator(snapshot_dir()))
    if (e.path().extension() == ".pickle") expect_split_matches_the_raw_sums(e.path()), ++files;
  EXPECT_GE(files, 6);
}

TEST(MemorySnapshot, NinetyPercentInactiveIsMostlyCachedAndLittleFragmented) {
  NEED_SNAPSHOT("magma27_cached_90pct_inactive.pickle");
  const auto r = analyze_memory(read_memory_snapshot(file));
  ASSERT_EQ(r.devices.size(), 1u);
  const auto& d = r.devices[0];
  EXPECT_NEAR(1 - d.ratio(d.allocated), 0.903, 0.001);  // what a naive "fragmentation" alert reads
  EXPECT_NEAR(d.ratio(d.cached), 0.830, 0.001);
  EXPECT_NEAR(d.ratio(d.fragmented), 0.073, 0.001);
  bool cached = false, fragmented_warn = false;
  for (const auto& f : r.findings) {
    cached = cached || f.id == "memory-cached";
    fragmented_warn = fragmented_warn || (f.id == "memory-fragmented" && f.severity >= Severity::warn);
  }
  EXPECT_TRUE(cached);
  EXPECT_FALSE(fragmented_warn);
}

TEST(MemorySnapshot, TheMultiGpuOomWasCapacityOnGpu1WithItsFreeBytes) {
  NEED_SNAPSHOT("csun_multigpu_expandable_oom.pickle");
  const auto s = read_memory_snapshot(file);
  EXPECT_TRUE(s.allocator_settings.value("expandable_segments", false));
  const auto r = analyze_memory(s);
  ASSERT_EQ(r.devices.size(), 3u);
  const auto& gpu1 = r.devices[1];
  ASSERT_EQ(gpu1.ooms.size(), 1u);
  EXPECT_EQ(gpu1.ooms[0].requested, 5308694528u);
  EXPECT_EQ(gpu1.ooms[0].device_free, 95682560u);
  // At the OOM the GPU held 80 GB of live tensors; the snapshot was dumped after they were freed.
  EXPECT_GT(gpu1.ooms[0].live_at_oom, 80000ull << 20);
  EXPECT_LT(gpu1.allocated, 400ull << 20);
  EXPECT_FALSE(gpu1.ooms[0].fragmentation);
  int capacity = 0;
  for (const auto& f : r.findings) capacity += f.id == "oom-capacity" && f.subject.starts_with("GPU 1");
  EXPECT_EQ(capacity, 1);
  EXPECT_EQ(gpu1.expandable_segments, gpu1.segments);
  EXPECT_EQ(gpu1.fragmented, 0u);  // expandable segments: free ranges are unmapped by empty_cache()
}

TEST(MemorySnapshot, OldAndNewestFormatsBothRead) {
  NEED_SNAPSHOT("ftcourse_old_format.pickle");
  const auto old = read_memory_snapshot(file);
  EXPECT_TRUE(old.allocator_settings.is_null());
  const auto r = analyze_memory(old);
  EXPECT_EQ(r.devices.at(0).reserved >> 20, 6172u);
  EXPECT_EQ((r.devices.at(0).allocated + (1 << 19)) >> 20, 2191u);
  const fs::path newest = snapshot_dir() / "bcrafton_new_trace_keys.pickle";
  const auto s = read_memory_snapshot(newest);
  ASSERT_FALSE(s.trace.empty());
  EXPECT_TRUE(s.trace.front().time_us.has_value());
  EXPECT_TRUE(s.allocator_settings.contains("roundup_power2_divisions"));
}

TEST(MemorySnapshot, AllocationSitesAreTheCallersNotPyTorchInternals) {
  NEED_SNAPSHOT("csun_multigpu_expandable_oom.pickle");
  const auto r = analyze_memory(read_memory_snapshot(file));
  ASSERT_FALSE(r.devices[2].top_sites.empty());
  EXPECT_EQ(r.devices[2].top_sites[0].site, "update_nodes (train/models.py:174)");
  for (const auto& s : r.devices[2].top_sites) EXPECT_EQ(s.site.find("torch/"), std::string::npos) << s.site;
}

// Allocations made in C++ alone (autograd's backward thread: no Python frame) were all "torch::unwind::unwind()
// (??:0)", the stack walker's own frame. They are named by the autograd node that made them.
TEST(MemorySnapshot, AllocationsMadeInCppAloneAreNamedByTheirAutogradNode) {
  NEED_SNAPSHOT("kk_fullstep_1010_segments.pickle");
  const auto r = analyze_memory(read_memory_snapshot(file), {.top_sites = 1000});
  bool backward = false;
  for (const auto& d : r.devices)
    for (const auto& s : d.top_sites) {
      EXPECT_EQ(s.site.find("torch::unwind"), std::string::npos) << s.site;
      EXPECT_EQ(s.site.find("CUDACachingAllocator"), std::string::npos) << s.site;
      backward = backward || s.site == "backward: BmmBackward0";
    }
  EXPECT_TRUE(backward);
  for (const char* other : {"eor_small_with_snapshot_events.pickle", "ftcourse_old_format.pickle"}) {
    const fs::path f = snapshot_dir() / other;
    if (!fs::exists(f)) continue;
    for (const auto& d : analyze_memory(read_memory_snapshot(f)).devices)
      for (const auto& s : d.top_sites) EXPECT_EQ(s.site.find("torch::unwind"), std::string::npos) << other;
  }
}

// The peak of live memory over the recorded trace, and the sites holding it then: the live-byte walk and the block
// walk (each entry after the peak undone on the snapshot's blocks) are two computations that must agree, up to the
// allocator's rounding: a trace entry may carry a size up to 512 bytes off its block's.
TEST(MemorySnapshot, ThePeakOfTheTraceIsHeldByTheSitesAtThatMoment) {
  size_t traced = 0;
  for (const auto& entry : fs::directory_iterator(snapshot_dir())) {
    if (entry.path().extension() != ".pickle") continue;
    const auto r = analyze_memory(read_memory_snapshot(entry.path()), {.top_sites = 100000});
    for (const auto& d : r.devices) {
      if (!d.peak_live) continue;
      ++traced;
      EXPECT_GE(*d.peak_live, d.active) << entry.path();
      uint64_t held = 0, blocks = 0;
      for (const auto& s : d.peak_sites) held += s.bytes, blocks += s.blocks;
      const auto diff = held > *d.peak_live ? held - *d.peak_live : *d.peak_live - held;
      EXPECT_LE(diff, 512 * blocks) << entry.path() << " GPU " << d.device << ": " << held << " vs " << *d.peak_live;
      EXPECT_LT(static_cast<double>(diff), 1e-6 * static_cast<double>(*d.peak_live)) << entry.path();
    }
  }
  if (traced == 0) GTEST_SKIP() << "no public snapshot with a trace present";
}

TEST(MemoryGrowth, ListsTheSiteWhoseLiveBytesGrew) {
  NEED_SNAPSHOT("eor_small_with_snapshot_events.pickle");
  const auto before = read_memory_snapshot(file);
  EXPECT_TRUE(memory_growth(before, before).empty());
  auto after = before;  // EDITED: one 64 MiB block added at a made-up site
  after.segments.front().blocks.push_back({1, 64ull << 20, 64ull << 20, BlockState::active, "leak (train.py:42)"});
  const auto g = memory_growth(before, after);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].site, "leak (train.py:42)");
  EXPECT_EQ(g[0].bytes, int64_t{64} << 20);
}

TEST(MemorySnapshot, APickleOfSomethingElseIsRefusedWithWhatIsMissing) {
  const std::string text = "\x80\x04}\x94.";  // pickle.dumps({}, protocol=4): SYNTHETIC
  try {
    (void)memory_snapshot_from(parse_pickle(text, "x.pickle"), "x.pickle");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'segments'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gsq::triage
