// Snapshot acquisition and shared CLI plumbing.
#include "cli/common.hpp"

#include "core/process.hpp"
#include "gpu/collect.hpp"
#include "probes/load_probe.hpp"

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
    probes::sample_under_load(nvml, s, o.load_seconds, [&](uint32_t i) {
      note(fmt::format("loading GPU {} for {:.1f} s to read clocks, throttle reasons and the PCIe link under load…", i,
                       o.load_seconds));
    });
  }
  return s;
}

namespace {
// The binary's folder and its parent: a build tree keeps data beside the binary, an installation one level up.
std::vector<std::filesystem::path> install_roots() {
  const auto exe = this_program();
  if (!exe) return {};
  return {exe->parent_path(), exe->parent_path().parent_path()};
}
}  // namespace

std::optional<std::filesystem::path> data_file(const std::string& name) {
  std::error_code ec;
  for (const auto& root : install_roots())
    if (const auto p = root / "share" / "gpusqueeze" / name; std::filesystem::exists(p, ec)) return p;
  return std::nullopt;
}

std::optional<std::filesystem::path> kernels_library() {
  std::error_code ec;
  for (const auto& root : install_roots())
    if (const auto p = root / "lib" / "libgsqkernels.so"; std::filesystem::exists(p, ec)) return p;
  return std::nullopt;
}

std::optional<std::filesystem::path> bundled_snapshot() {
  return data_file("h200-snapshot.json");
}

}  // namespace gsq::cli
