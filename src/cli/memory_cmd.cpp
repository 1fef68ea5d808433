// `gpusqueeze memory SNAPSHOT [AFTER]`: a PyTorch allocator snapshot read without executing it: where the reserved
// memory is (live, rounding, cached, fragmented), whether an OOM was fragmentation or capacity, and who holds the
// bytes.
#include "cli/common.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "core/table.hpp"
#include "report/report.hpp"
#include "triage/memory.hpp"
#include "triage/oom.hpp"

#include <fmt/format.h>

#include <iostream>

namespace gsq::cli {

namespace {

struct MemoryCliOptions {
  std::string file, after;
  bool json = false;
  size_t top = 10, maps = 3;
};

std::string mib(uint64_t bytes) {
  return fmt::format("{:.1f}", static_cast<double>(bytes) / (1 << 20));
}

void print_device(const triage::DeviceMemory& d) {
  std::cout << fmt::format("\n## GPU {}: {} segments ({} expandable), {} blocks\n\n", d.device, d.segments,
                           d.expandable_segments, d.blocks);
  Table t{{"where the reserved memory is", "MiB", "of reserved"}, {}};
  auto row = [&](const char* what, uint64_t bytes) {
    t.rows.push_back({what, mib(bytes), fmt::format("{:.1f}%", 100 * d.ratio(bytes))});
  };
  row("reserved (segments from cudaMalloc)", d.reserved);
  row("  requested by live tensors", d.requested);
  row("  rounding (allocated − requested)", d.rounding);
  row("  awaiting free (other streams' use)", d.awaiting_free);
  row("  cached: whole free segments (empty_cache returns them)", d.cached);
  row("  fragmented: free blocks among live ones", d.fragmented);
  row("  free in private pools (CUDA graphs, MemPool)", d.other_pools);
  row("allocated (active_allocated blocks)", d.allocated);
  row("largest free block", d.largest_free_block);
  std::cout << t.markdown();
  std::cout << fmt::format(
      "1 − allocated/reserved = {:.3f} (what a naive alert calls fragmentation); fragmented "
      "ratio = {:.3f}\n",
      d.reserved ? 1 - d.ratio(d.allocated) : 0.0, d.ratio(d.fragmented));
  for (const auto& o : d.ooms)
    std::cout << fmt::format("OOM: asked {} MiB with {} MiB free on the device: {}\n", mib(o.requested),
                             mib(o.device_free), o.fragmentation ? "fragmentation" : "capacity");
  if (!d.top_sites.empty()) {
    Table s{{"live bytes by allocation site", "MiB", "blocks"}, {}};
    for (const auto& x : d.top_sites)
      s.rows.push_back({x.site.empty() ? "(no frames recorded)" : x.site, mib(x.bytes), std::to_string(x.blocks)});
    std::cout << '\n' << s.markdown();
  }
  if (!d.size_classes.empty()) {
    Table c{{"segments by size class", "segments", "MiB"}, {}};
    for (const auto& [name, v] : d.size_classes) c.rows.push_back({name, std::to_string(v.first), mib(v.second)});
    std::cout << '\n' << c.markdown();
  }
  if (!d.segment_maps.empty()) {
    std::cout << "\nMost fragmented segments (# live, + partly live, . free; one character per 1/64 of the segment):\n";
    for (const auto& m : d.segment_maps) std::cout << "  " << m << '\n';
  }
  if (d.trace_growth_bytes)
    std::cout << fmt::format("\nOver the recorded trace live memory changed by {:+.1f} MiB\n",
                             static_cast<double>(*d.trace_growth_bytes) / (1 << 20));
  if (d.peak_live && !d.peak_sites.empty()) {
    Table p{{fmt::format("live bytes at the trace's peak ({} MiB) by site", mib(*d.peak_live)), "MiB", "blocks"}, {}};
    for (const auto& x : d.peak_sites)
      p.rows.push_back({x.site.empty() ? "(no frames recorded)" : x.site, mib(x.bytes), std::to_string(x.blocks)});
    std::cout << '\n' << p.markdown();
  }
}

// A pasted CUDA out-of-memory error: each message's figures and what held the memory.
int run_oom(const MemoryCliOptions& o, const std::string& text) {
  const auto r = triage::read_oom_text(text, o.file);
  if (o.json) {
    std::cout << triage::to_json(r).dump(2) << '\n';
  } else {
    std::cout << fmt::format(
        "# CUDA out of memory: {}\n\n{} message{} read over {} lines{}\n\n", r.origin, r.messages.size(),
        r.messages.size() == 1 ? "" : "s", r.lines,
        r.bare ? fmt::format("; {} line(s) say out of memory without the allocator's figures", r.bare) : "");
    if (!r.messages.empty()) {
      std::cout << triage::oom_table(r, 20).markdown();
      if (r.messages.size() > 20) std::cout << fmt::format("… and {} more\n", r.messages.size() - 20);
    }
    std::cout << "\n## Findings\n\n" << report::findings_table(r.findings).markdown();
  }
  return worst(r.findings) == Severity::fail ? static_cast<int>(ExitCode::findings) : 0;
}

int run_memory(const MemoryCliOptions& o) {
  // Text holding an OOM error is read as one; anything else as a snapshot, from the bytes already read.
  const std::string bytes = read_text_file(o.file);
  if (o.after.empty() && triage::looks_like_oom_text(bytes)) return run_oom(o, bytes);
  const auto snap = triage::parse_memory_snapshot(bytes, o.file);
  if (!o.after.empty()) {
    const auto after = triage::read_memory_snapshot(o.after);
    const auto growth = triage::memory_growth(snap, after, o.top);
    if (o.json) {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& g : growth) a.push_back({{"device", g.device}, {"site", g.site}, {"bytes", g.bytes}});
      std::cout << nlohmann::json{{"schema", "gpusqueeze.memory-growth/1"},
                                  {"before", o.file},
                                  {"after", o.after},
                                  {"growth", a}}
                       .dump(2)
                << '\n';
      return 0;
    }
    Table t{{"GPU", "allocation site", "live MiB after − before"}, {}};
    for (const auto& g : growth)
      t.rows.push_back({std::to_string(g.device), g.site.empty() ? "(no frames recorded)" : g.site,
                        fmt::format("{:+.1f}", static_cast<double>(g.bytes) / (1 << 20))});
    std::cout << "# Live memory growth by allocation site (the leak suspects first)\n\n" << t.markdown();
    return 0;
  }
  const auto r = triage::analyze_memory(snap, {o.top, o.maps, 64});
  if (o.json) {
    std::cout << triage::to_json(r).dump(2) << '\n';
  } else {
    std::cout << fmt::format(
        "# PyTorch allocator snapshot: {}\n\nformat: {}; allocator settings: {}\n", r.origin, r.format,
        r.allocator_settings.is_null() ? "not recorded (older PyTorch)" : r.allocator_settings.dump());
    for (const auto& d : r.devices) print_device(d);
    if (!r.findings.empty()) std::cout << "\n## Findings\n\n" << report::findings_table(r.findings).markdown();
  }
  return worst(r.findings) == Severity::fail ? static_cast<int>(ExitCode::findings) : 0;
}

}  // namespace

Action register_memory(CLI::App& app) {
  auto o = std::make_shared<MemoryCliOptions>();
  auto* cmd = app.add_subcommand(
      "memory",
      "Read a PyTorch allocator snapshot, or a pasted CUDA out-of-memory error: cached vs fragmented memory, OOM "
      "cause, who holds the bytes");
  cmd->footer(
      "Make a snapshot in your program:\n"
      "  torch.cuda.memory._record_memory_history(max_entries=100000)   # optional: the trace and allocation sites\n"
      "  ... run the steps that grow ...\n"
      "  torch.cuda.memory._dump_snapshot(\"snapshot.pickle\")\n"
      "The pickle is read as data only: anything that would import or call Python code is refused (exit 2).\n"
      "Or give it the text of a CUDA out-of-memory error (\"CUDA out of memory. Tried to allocate …\", either\n"
      "PyTorch wording, wrapped or repeated by ranks): each message's figures, and whether the memory was in\n"
      "PyTorch's cache in pieces (fragmentation), outside this process's PyTorch (another process, a preallocating\n"
      "server, NCCL and the context) or in its live tensors (the workload does not fit).\n"
      "Reserved memory is split into live tensors, rounding, cached (whole free segments: the cache doing its job;\n"
      "empty_cache() returns them) and fragmented (free blocks inside segments that hold live ones: what causes OOMs\n"
      "with memory apparently free; expandable_segments:True or max_split_size_mb address it). 1 − allocated/reserved\n"
      "counts both and alarms on a healthy cache. What is not true: PyTorch's default allocator is its own caching\n"
      "allocator, not cudaMallocAsync with a 2 GB pool; max_split_size_mb does not touch unified memory (none is\n"
      "used); empty_cache() in a health check hides growth; CUDA_LAUNCH_BLOCKING=1 finds no leaks.\n"
      "Exit codes: 0 ok, 1 an OOM in the trace or the text, 2 unreadable, or neither a snapshot nor an OOM error.\n"
      "Examples:\n"
      "  gpusqueeze memory snapshot.pickle\n"
      "  gpusqueeze memory --json snapshot.pickle\n"
      "  gpusqueeze memory oom.txt                          a pasted OOM error: what held the memory\n"
      "  gpusqueeze memory step10.pickle step50.pickle     live bytes that grew, by allocation site");
  cmd->add_option("snapshot", o->file,
                  "Snapshot from torch.cuda.memory._dump_snapshot(), or a text file holding a CUDA OOM error")
      ->required();
  cmd->add_option("after", o->after, "A later snapshot of the same process: show growth by allocation site");
  cmd->add_flag("--json", o->json, "Print JSON: gpusqueeze.memory/1 (gpusqueeze.oom/1 for an OOM error)");
  cmd->add_option("--top", o->top, "Allocation sites to list")->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->add_option("--maps", o->maps, "Most fragmented segments to draw")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  return [o] { return run_memory(*o); };
}

}  // namespace gsq::cli
