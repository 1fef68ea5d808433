// Snapshot acquisition and shared CLI plumbing.
#include "cli/common.hpp"

#include "gpu/collect.hpp"
#include "gpu/load_probe.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace gsq::cli {

void note(const std::string& text) {
  std::fprintf(stderr, "gpusqueeze: %s\n", text.c_str());
}

void add_snapshot_options(CLI::App& cmd, SnapshotOptions& o, bool with_load) {
  cmd.add_option(
         "--snapshot", o.snapshot_file,
         "Replay a snapshot file (from `env --save`, `doctor --save-snapshot` or a colleague) instead of reading "
         "this machine")
      ->check(CLI::ExistingFile);
  if (with_load) {
    cmd.add_flag("--no-load", o.no_load,
                 "Skip the load phase (clock reasons and PCIe generation are then judged idle)");
    cmd.add_option("--load-seconds", o.load_seconds, "Seconds of FMA load per GPU while NVML is sampled every 100 ms")
        ->check(CLI::Range(0.3, 60.0))
        ->capture_default_str();
  }
}

gpu::Snapshot acquire_snapshot(const SnapshotOptions& o, bool with_load) {
  if (!o.snapshot_file.empty()) return gpu::load_snapshot(o.snapshot_file);
  const auto nvml = gpu::Nvml::open();
  gpu::Snapshot s = gpu::collect_snapshot(nvml);
  s.tool_version = GSQ_VERSION;
  if (with_load && !o.no_load) {
    gpu::sample_under_load(nvml, s, o.load_seconds, [&](uint32_t i) {
      note(fmt::format("loading GPU {} for {:.1f} s to read clocks, throttle reasons and the PCIe link under load…", i,
                       o.load_seconds));
    });
  }
  return s;
}

std::optional<std::filesystem::path> bundled_snapshot() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates{fs::path(GSQ_FIXTURE_DIR)};
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / "share" / "gpusqueeze");
  for (const auto& dir : candidates) {
    const fs::path p = dir / "h200-snapshot.json";
    if (fs::exists(p, ec)) return p;
  }
  return std::nullopt;
}

}  // namespace gsq::cli
