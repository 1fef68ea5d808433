// Allocator snapshot analysis: the reserved bytes split by where they are, OOM causes, allocation sites, growth
// (see memory.hpp). Definitions follow torch.cuda.memory_stats(): allocated = active_allocated blocks; active =
// allocated + awaiting free; inactive split = free blocks in segments that still hold live blocks.
#include "triage/memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

namespace gsq::triage {

namespace {

constexpr uint64_t kMiB = 1ull << 20;

std::string mib(uint64_t bytes) {
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / static_cast<double>(kMiB));
}
std::string pct(double r) {
  return fmt::format("{:.1f}%", 100 * r);
}

std::vector<SiteBytes> top_of(const std::unordered_map<std::string, SiteBytes>& by_site, size_t n) {
  std::vector<SiteBytes> v;
  v.reserve(by_site.size());
  for (const auto& [k, s] : by_site) v.push_back(s);
  std::sort(v.begin(), v.end(), [](const SiteBytes& a, const SiteBytes& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.site < b.site;
  });
  if (v.size() > n) v.resize(n);
  return v;
}

std::string size_class(const MemSegment& s) {
  if (s.type == "small") return "small pool (2 MiB segments)";
  if (s.total <= 20 * kMiB) return "large ≤ 20 MiB";
  if (s.total <= 1024 * kMiB) return "large 20 MiB – 1 GiB";
  return "large > 1 GiB";
}

// '#' a cell mostly live, '+' partly live, '.' free: one character per total/width bytes of the segment.
std::string segment_map(const MemSegment& s, size_t width) {
  std::string map(width, '.');
  if (s.total == 0 || width == 0) return map;
  const double cell = static_cast<double>(s.total) / static_cast<double>(width);
  std::vector<double> live(width, 0.0);
  for (const auto& b : s.blocks) {
    if (b.state == BlockState::inactive || b.address < s.address) continue;
    const double lo = static_cast<double>(b.address - s.address), hi = lo + static_cast<double>(b.size);
    for (size_t c = static_cast<size_t>(lo / cell); c < width && static_cast<double>(c) * cell < hi; ++c) {
      const double c_lo = static_cast<double>(c) * cell, c_hi = c_lo + cell;
      live[c] += std::min(hi, c_hi) - std::max(lo, c_lo);
    }
  }
  for (size_t c = 0; c < width; ++c) map[c] = live[c] >= cell / 2 ? '#' : live[c] > 0 ? '+' : '.';
  return map;
}

bool expandable_on(const nlohmann::json& settings) {
  return settings.is_object() && settings.value("expandable_segments", false);
}

Finding make(const char* id, Severity sev, std::string title, std::vector<Evidence> ev, std::string fix, int device) {
  return make_finding(id, sev, std::move(title), std::move(ev), std::move(fix),
                      "PyTorch CUDA caching allocator (docs/source/notes/cuda.md, torch.cuda.memory_stats definitions)",
                      3, fmt::format("GPU {} (PyTorch allocator)", device));
}

void findings_for(const DeviceMemory& d, const nlohmann::json& settings, std::vector<Finding>& out) {
  const bool expandable = expandable_on(settings) || d.expandable_segments > 0;
  for (const auto& oom : d.ooms) {
    const uint64_t free_pieces = oom.reserved_at_oom > oom.live_at_oom ? oom.reserved_at_oom - oom.live_at_oom : 0;
    std::vector<Evidence> ev{{"requested", mib(oom.requested)},
                             {"device_free", mib(oom.device_free)},
                             {"reserved_at_oom", mib(oom.reserved_at_oom)},
                             {"live_at_oom", mib(oom.live_at_oom)},
                             {"free_in_allocator_at_oom", mib(free_pieces)}};
    if (oom.fragmentation) {
      out.push_back(make("oom-fragmentation", Severity::fail,
                         fmt::format("An out-of-memory for {} was fragmentation: {} were free in pieces, none big "
                                     "enough",
                                     mib(oom.requested), mib(oom.device_free + free_pieces)),
                         std::move(ev),
                         expandable ? "Expandable segments are on already: bucket or fix the shapes that vary, or "
                                      "set max_split_size_mb so large blocks are not split"
                                    : "PYTORCH_ALLOC_CONF=expandable_segments:True (PYTORCH_CUDA_ALLOC_CONF before "
                                      "PyTorch 2.8; check allocator_settings in a new snapshot that it took), or "
                                      "max_split_size_mb",
                         d.device));
    } else {
      out.push_back(make("oom-capacity", Severity::fail,
                         fmt::format("An out-of-memory for {} was capacity: {} of live tensors, {} free on the device "
                                     "and {} free in the allocator",
                                     mib(oom.requested), mib(oom.live_at_oom), mib(oom.device_free), mib(free_pieces)),
                         std::move(ev),
                         "Less memory per step: smaller batch or sequence, activation checkpointing, lower precision "
                         "weights or optimizer state, or more GPUs; the allocator's settings cannot help",
                         d.device));
    }
  }
  const double frag = d.ratio(d.fragmented), cached = d.ratio(d.cached);
  if (frag >= 0.03) {
    out.push_back(make(
        "memory-fragmented", frag >= 0.10 ? Severity::warn : Severity::info,
        fmt::format("{} of reserved memory ({}) is free but split among live blocks", pct(frag), mib(d.fragmented)),
        {{"fragmented", mib(d.fragmented)},
         {"fragmented_ratio", fmt::format("{:.3f}", frag)},
         {"largest_free_block", mib(d.largest_free_block)},
         {"reserved", mib(d.reserved)}},
        expandable ? "Expandable segments are on: what remains comes from varying shapes; bucket them, or set "
                     "max_split_size_mb"
                   : "PYTORCH_ALLOC_CONF=expandable_segments:True (PYTORCH_CUDA_ALLOC_CONF before PyTorch 2.8), or "
                     "max_split_size_mb:N so large blocks are not split; empty_cache() does not return these bytes",
        d.device));
  }
  if (cached >= 0.25) {
    out.push_back(make("memory-cached", Severity::info,
                       fmt::format("{} of reserved memory ({}) is whole free segments: the cache at work, not "
                                   "fragmentation",
                                   pct(cached), mib(d.cached)),
                       {{"cached", mib(d.cached)},
                        {"cached_ratio", fmt::format("{:.3f}", cached)},
                        {"one_minus_allocated_over_reserved", fmt::format("{:.3f}", 1 - d.ratio(d.allocated))}},
                       "Nothing to fix unless another process needs the memory: torch.cuda.empty_cache() returns "
                       "it (and the next growth pays cudaMalloc again). An alert on 1 − allocated/reserved fires on "
                       "this; alert on the fragmented ratio instead",
                       d.device));
  }
  // The peak of the recorded trace, when it is above what the snapshot holds now: what to shrink to fit a larger batch
  // or model is what held the peak, not what is left at the end.
  if (d.peak_live && *d.peak_live > d.active && !d.peak_sites.empty()) {
    std::vector<Evidence> ev{{"peak_live", mib(*d.peak_live)}, {"live_at_snapshot", mib(d.active)}};
    if (d.peak_time_us) ev.push_back({"peak_time_us", fmt::format("{:.0f}", *d.peak_time_us)});
    for (size_t i = 0; i < std::min<size_t>(3, d.peak_sites.size()); ++i)
      ev.push_back({fmt::format("peak_site_{}", i + 1),
                    fmt::format("{} ({}, {} blocks)",
                                d.peak_sites[i].site.empty() ? "(no frames recorded)" : d.peak_sites[i].site,
                                mib(d.peak_sites[i].bytes), d.peak_sites[i].blocks)});
    out.push_back(
        make("memory-peak", Severity::info,
             fmt::format("Live memory peaked at {} during the recorded trace ({} more than at the "
                         "snapshot); {} held {} of it",
                         mib(*d.peak_live), mib(*d.peak_live - d.active),
                         d.peak_sites.front().site.empty() ? "(no frames recorded)" : d.peak_sites.front().site,
                         pct(static_cast<double>(d.peak_sites.front().bytes) /
                             static_cast<double>(std::max<uint64_t>(1, *d.peak_live)))),
             std::move(ev),
             "Shrink what held the peak: activations (backward: sites) with activation checkpointing or a "
             "smaller micro-batch, optimizer state with a fused/foreach optimizer or ZeRO/FSDP sharding, "
             "temporaries by freeing them (del, set_to_none=True) before the peak",
             d.device));
  }
  // Growth: live bytes higher at the end of every quarter of the trace than at the end of the one before, by a real
  // amount. One trace cannot tell a leak from a warm-up (weights, optimizer state): info, and the way to tell.
  const auto& q = d.trace_quarters;
  const bool steady = q.size() >= 4 && std::is_sorted(q.begin(), q.end()) && q.front() < q.back();
  if (steady) {
    const auto rise = static_cast<uint64_t>(q.back() - q.front());
    if (rise >= std::max<uint64_t>(64 * kMiB, d.reserved / 10)) {
      std::vector<Evidence> ev{{"growth_after_first_quarter", mib(rise)},
                               {"growth_over_trace", mib(static_cast<uint64_t>(std::max<int64_t>(0, q.back())))}};
      for (size_t i = 0; i < std::min<size_t>(3, d.growth_sites.size()); ++i)
        ev.push_back(
            {fmt::format("unfreed_site_{}", i + 1),
             fmt::format("{} ({}, {} allocations)", d.growth_sites[i].site.empty() ? "?" : d.growth_sites[i].site,
                         mib(d.growth_sites[i].bytes), d.growth_sites[i].blocks)});
      out.push_back(make("allocation-growth", Severity::info,
                         fmt::format("Live memory rose steadily through the recorded trace, by {} after its first "
                                     "quarter: a leak or a warm-up",
                                     mib(rise)),
                         std::move(ev),
                         "Tell them apart with two snapshots a few steady-state steps apart: gpusqueeze memory "
                         "before.pickle after.pickle lists the sites whose live bytes grew (tensors kept across "
                         "steps: lists of losses, caches keyed by shape, graphs held through .backward())",
                         d.device));
    }
  }
}

// The sites holding the live bytes at the trace's peak (the state after entry peak_after - 1; list.size(): the
// snapshot's own state): walking back from the snapshot's live blocks, each entry after the peak undone (an alloc
// removes its block, a free puts it back with the site of the alloc that made it, when the trace has that alloc).
void peak_sites_of(const MemorySnapshot& s, int dev, const std::vector<const TraceEvent*>& list, size_t peak_after,
                   DeviceMemory& d, size_t top) {
  std::vector<std::string> freed_site(list.size());  // for each free: the site of the alloc it frees
  std::unordered_map<uint64_t, std::string> alloc_site;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i]->action == "alloc") alloc_site[list[i]->address] = list[i]->site;
    if (list[i]->action == "free_completed") {
      const auto it = alloc_site.find(list[i]->address);
      freed_site[i] = it == alloc_site.end() ? "(allocated before the trace)" : it->second;
    }
  }
  std::unordered_map<uint64_t, std::pair<uint64_t, std::string>> blocks;  // address → size, site
  for (const auto& seg : s.segments)
    if (seg.device == dev)
      for (const auto& b : seg.blocks)
        if (b.state != BlockState::inactive) blocks[b.address] = {b.size, b.site};
  for (size_t i = list.size(); i-- > peak_after;) {
    if (list[i]->action == "alloc") blocks.erase(list[i]->address);
    if (list[i]->action == "free_completed") blocks[list[i]->address] = {list[i]->size, freed_site[i]};
  }
  std::unordered_map<std::string, SiteBytes> by_site;
  for (const auto& [addr, v] : blocks) {
    auto& x = by_site[v.second];
    x.site = v.second;
    x.bytes += v.first;
    ++x.blocks;
  }
  d.peak_sites = top_of(by_site, top);
}

}  // namespace

MemoryReport analyze_memory(const MemorySnapshot& s, const MemoryOptions& o) {
  MemoryReport r;
  r.origin = s.origin;
  r.format = s.format;
  r.allocator_settings = s.allocator_settings;
  std::map<int, DeviceMemory> by_device;
  std::map<int, std::unordered_map<std::string, SiteBytes>> sites;
  std::map<int, std::vector<std::pair<uint64_t, const MemSegment*>>> worst;
  for (const auto& seg : s.segments) {
    DeviceMemory& d = by_device[seg.device];
    d.device = seg.device;
    ++d.segments;
    d.reserved += seg.total;
    if (seg.expandable) ++d.expandable_segments;
    auto& cls = d.size_classes[size_class(seg)];
    ++cls.first;
    cls.second += seg.total;
    uint64_t live = 0, free = 0;
    for (const auto& b : seg.blocks) {
      ++d.blocks;
      if (b.state == BlockState::active) {
        d.allocated += b.size;
        d.requested += b.requested;
        live += b.size;
        auto& site = sites[seg.device][b.site];
        site.site = b.site;
        site.bytes += b.size;
        ++site.blocks;
      } else if (b.state == BlockState::awaiting_free) {
        d.awaiting_free += b.size;
        live += b.size;
      } else {
        free += b.size;
      }
    }
    // Bytes of the segment no block covers (expandable segments report only mapped blocks) count as free.
    const uint64_t covered = live + free;
    if (seg.total > covered) free += seg.total - covered;
    if (seg.private_pool) {
      d.other_pools += free;
    } else if (live == 0 || seg.expandable) {
      // empty_cache() returns whole free segments, and unmaps the free ranges of expandable segments wherever they
      // lie (CUDACachingAllocator's release of expandable blocks), so neither is stuck.
      d.cached += free;
    } else {
      d.fragmented += free;
      worst[seg.device].push_back({free, &seg});
    }
    if (!seg.private_pool)
      for (const auto& b : seg.blocks)
        if (b.state == BlockState::inactive) d.largest_free_block = std::max(d.largest_free_block, b.size);
  }
  for (auto& [dev, d] : by_device) {
    d.active = d.allocated + d.awaiting_free;
    d.rounding = d.allocated - d.requested;
    d.top_sites = top_of(sites[dev], o.top_sites);
    auto& w = worst[dev];
    std::sort(w.begin(), w.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (size_t i = 0; i < std::min(o.segment_maps, w.size()); ++i)
      d.segment_maps.push_back(fmt::format("{:#x} {:>10} free {:>10} |{}|", w[i].second->address,
                                           mib(w[i].second->total), mib(w[i].first),
                                           segment_map(*w[i].second, o.map_width)));
  }
  // The trace: OOM events, and live bytes allocated and not freed within the recorded window.
  std::map<int, std::vector<const TraceEvent*>> events;
  for (const auto& e : s.trace) events[e.device].push_back(&e);
  std::map<int, std::unordered_map<uint64_t, std::pair<uint64_t, std::string>>> open;
  std::map<int, int64_t> growth;
  std::map<int, bool> traced;
  for (const auto& [dev, list] : events) {
    traced[dev] = true;
    DeviceMemory& d = by_device[dev];
    d.device = dev;
    // Walking backwards from the snapshot's state undoes each entry, so every OOM sees the state it happened in, and
    // the most live bytes at any point (the peak) are found on the way.
    int64_t live = static_cast<int64_t>(d.allocated + d.awaiting_free), reserved = static_cast<int64_t>(d.reserved);
    int64_t peak = live;
    size_t peak_after = list.size();
    std::vector<OomEvent> ooms;
    for (size_t i = list.size(); i-- > 0;) {
      const TraceEvent& e = *list[i];
      const auto size = static_cast<int64_t>(e.size);
      if (e.action == "oom") {
        OomEvent oom{e.size,
                     e.device_free.value_or(0),
                     e.time_us,
                     static_cast<uint64_t>(std::max<int64_t>(0, reserved)),
                     static_cast<uint64_t>(std::max<int64_t>(0, live)),
                     false};
        const uint64_t free_in_allocator =
            oom.reserved_at_oom > oom.live_at_oom ? oom.reserved_at_oom - oom.live_at_oom : 0;
        oom.fragmentation = oom.requested > oom.device_free && oom.requested <= oom.device_free + free_in_allocator;
        ooms.push_back(oom);
      } else if (e.action == "alloc") {
        live -= size;
      } else if (e.action == "free_completed") {
        live += size;
      } else if (e.action == "segment_alloc" || e.action == "segment_map") {
        reserved -= size;
      } else if (e.action == "segment_free" || e.action == "segment_unmap") {
        reserved += size;
      }
      if (live > peak) peak = live, peak_after = i;
    }
    d.ooms.assign(ooms.rbegin(), ooms.rend());
    if (!list.empty()) {
      d.peak_live = static_cast<uint64_t>(std::max<int64_t>(0, peak));
      if (peak_after > 0 && list[peak_after - 1]->time_us) d.peak_time_us = list[peak_after - 1]->time_us;
      peak_sites_of(s, dev, list, peak_after, d, o.top_sites);
    }
    for (size_t i = 0; i < list.size(); ++i) {
      const TraceEvent* e = list[i];
      if (e->action == "alloc") {
        growth[dev] += static_cast<int64_t>(e->size);
        open[dev][e->address] = {e->size, e->site};
      } else if (e->action == "free_completed") {
        growth[dev] -= static_cast<int64_t>(e->size);
        open[dev].erase(e->address);
      }
      if ((i + 1) * 4 / list.size() != i * 4 / list.size() || i + 1 == list.size())
        d.trace_quarters.push_back(growth[dev]);
    }
  }
  for (auto& [dev, d] : by_device) {
    if (!traced[dev]) continue;
    d.trace_growth_bytes = growth[dev];
    std::unordered_map<std::string, SiteBytes> unfreed;
    for (const auto& [addr, v] : open[dev]) {
      auto& site = unfreed[v.second];
      site.site = v.second;
      site.bytes += v.first;
      ++site.blocks;
    }
    d.growth_sites = top_of(unfreed, o.top_sites);
  }
  for (auto& [dev, d] : by_device) {
    findings_for(d, s.allocator_settings, r.findings);
    r.devices.push_back(std::move(d));
  }
  return r;
}

nlohmann::json to_json(const MemoryReport& r) {
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : r.devices) {
    auto sites = [](const std::vector<SiteBytes>& v) {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& s : v) a.push_back({{"site", s.site}, {"bytes", s.bytes}, {"blocks", s.blocks}});
      return a;
    };
    nlohmann::json ooms = nlohmann::json::array();
    for (const auto& o : d.ooms)
      ooms.push_back({{"requested_bytes", o.requested},
                      {"device_free_bytes", o.device_free},
                      {"reserved_at_oom_bytes", o.reserved_at_oom},
                      {"live_at_oom_bytes", o.live_at_oom},
                      {"cause", o.fragmentation ? "fragmentation" : "capacity"},
                      {"time_us", o.time_us ? nlohmann::json(*o.time_us) : nlohmann::json(nullptr)}});
    nlohmann::json classes = nlohmann::json::object();
    for (const auto& [name, v] : d.size_classes) classes[name] = {{"segments", v.first}, {"bytes", v.second}};
    devices.push_back(
        {{"device", d.device},
         {"segments", d.segments},
         {"blocks", d.blocks},
         {"reserved_bytes", d.reserved},
         {"allocated_bytes", d.allocated},
         {"active_bytes", d.active},
         {"requested_bytes", d.requested},
         {"awaiting_free_bytes", d.awaiting_free},
         {"cached_bytes", d.cached},
         {"fragmented_bytes", d.fragmented},
         {"rounding_bytes", d.rounding},
         {"other_pools_bytes", d.other_pools},
         {"fragmented_ratio", d.ratio(d.fragmented)},
         {"cached_ratio", d.ratio(d.cached)},
         {"one_minus_allocated_over_reserved", d.reserved ? 1 - d.ratio(d.allocated) : 0.0},
         {"largest_free_block_bytes", d.largest_free_block},
         {"expandable_segments", d.expandable_segments},
         {"ooms", ooms},
         {"top_sites", sites(d.top_sites)},
         {"size_classes", classes},
         {"segment_maps", d.segment_maps},
         {"trace_growth_bytes", d.trace_growth_bytes ? nlohmann::json(*d.trace_growth_bytes) : nlohmann::json(nullptr)},
         {"trace_growth_quarters_bytes", d.trace_quarters},
         {"growth_sites", sites(d.growth_sites)},
         {"peak_live_bytes", d.peak_live ? nlohmann::json(*d.peak_live) : nlohmann::json(nullptr)},
         {"peak_time_us", d.peak_time_us ? nlohmann::json(*d.peak_time_us) : nlohmann::json(nullptr)},
         {"peak_sites", sites(d.peak_sites)}});
  }
  return {{"schema", kMemorySchema}, {"origin", r.origin},
          {"format", r.format},      {"allocator_settings", r.allocator_settings},
          {"devices", devices},      {"findings", r.findings}};
}

std::vector<SiteGrowth> memory_growth(const MemorySnapshot& before, const MemorySnapshot& after, size_t top) {
  std::map<std::pair<int, std::string>, int64_t> delta;
  for (const auto& seg : after.segments)
    for (const auto& b : seg.blocks)
      if (b.state == BlockState::active) delta[{seg.device, b.site}] += static_cast<int64_t>(b.size);
  for (const auto& seg : before.segments)
    for (const auto& b : seg.blocks)
      if (b.state == BlockState::active) delta[{seg.device, b.site}] -= static_cast<int64_t>(b.size);
  std::vector<SiteGrowth> out;
  for (const auto& [k, v] : delta)
    if (v != 0) out.push_back({k.first, k.second, v});
  std::sort(out.begin(), out.end(), [](const SiteGrowth& a, const SiteGrowth& b) { return a.bytes > b.bytes; });
  if (out.size() > top) out.resize(top);
  return out;
}

}  // namespace gsq::triage
