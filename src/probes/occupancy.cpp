#include "probes/occupancy.hpp"

#include "core/error.hpp"
#include "core/process.hpp"

#include <cxxabi.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>

namespace gsq::probes {

namespace {

// CUDA C++ Programming Guide, "Technical Specifications per Compute Capability".
const std::vector<ArchLimits>& arch_table() {
  static const std::vector<ArchLimits> t = [] {
    auto make = [](int sm, int warps, int blocks, int smem_kib, int block_kib, int reserved) {
      ArchLimits a;
      a.sm = sm, a.max_warps_per_sm = warps, a.max_blocks_per_sm = blocks;
      a.smem_per_sm = smem_kib * 1024, a.max_smem_per_block = block_kib * 1024, a.reserved_smem_per_block = reserved;
      return a;
    };
    return std::vector<ArchLimits>{
        make(70, 64, 32, 96, 96, 0),      make(75, 32, 16, 64, 64, 0),       make(80, 64, 32, 164, 163, 1024),
        make(86, 48, 16, 100, 99, 1024),  make(87, 48, 16, 164, 163, 1024),  make(89, 48, 24, 100, 99, 1024),
        make(90, 64, 32, 228, 227, 1024), make(100, 64, 32, 228, 227, 1024), make(120, 48, 32, 128, 99, 1024),
    };
  }();
  return t;
}

std::string demangle(const std::string& s) {
  // Kernel names run to a few hundred characters; the demangler recurses on nesting, so a longer one stays mangled.
  if (s.size() > 4096) return s;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(abi::__cxa_demangle(s.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && d ? std::string(d.get()) : s;
}

int field(std::string_view line, std::string_view key) {
  const auto at = line.find(key);
  if (at == std::string_view::npos) return 0;
  return std::atoi(std::string(line.substr(at + key.size())).c_str());
}

int64_t round_up(int64_t v, int64_t unit) {
  return (v + unit - 1) / unit * unit;
}

}  // namespace

std::optional<ArchLimits> arch_limits(int sm) {
  for (const auto& a : arch_table())
    if (a.sm == sm) return a;
  return std::nullopt;
}

std::string known_archs() {
  std::string s;
  for (const auto& a : arch_table()) s += (s.empty() ? "sm_" : ", sm_") + std::to_string(a.sm);
  return s;
}

std::vector<KernelResources> parse_resource_usage(std::string_view dump) {
  std::vector<KernelResources> out;
  int arch = 0;
  bool saw_usage = false;
  std::string pending;  // a "Function NAME:" line waiting for its numbers
  size_t pos = 0;
  while (pos < dump.size()) {
    const size_t eol = std::min(dump.find('\n', pos), dump.size());
    std::string_view line = dump.substr(pos, eol - pos);
    pos = eol + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    const auto start = line.find_first_not_of(' ');
    if (start == std::string_view::npos) continue;
    line.remove_prefix(start);
    if (line.starts_with("arch = sm_")) {
      arch = std::atoi(std::string(line.substr(10)).c_str());
    } else if (line.starts_with("Resource usage:")) {
      saw_usage = true;
    } else if (line.starts_with("Function ") && line.ends_with(":")) {
      pending = std::string(line.substr(9, line.size() - 10));
    } else if (!pending.empty() && line.starts_with("REG:")) {
      KernelResources k;
      k.mangled = pending, k.name = demangle(pending), k.arch = arch;
      k.regs = field(line, "REG:"), k.stack = field(line, "STACK:"), k.shared = field(line, "SHARED:");
      k.local = field(line, "LOCAL:"), k.constant0 = field(line, "CONSTANT[0]:");
      // On sm_80+ cuobjdump counts the 1 KiB the system reserves per block in SHARED (1152 for a 128-byte array,
      // where cudaFuncGetAttributes says 128); keep the kernel's own static shared memory, as the runtime does.
      if (const auto lim = arch_limits(arch); lim && k.shared >= lim->reserved_smem_per_block && k.shared > 0)
        k.shared -= lim->reserved_smem_per_block;
      out.push_back(std::move(k));
      pending.clear();
    }
  }
  if (!saw_usage) throw_bad_input("no CUDA resource usage in the cuobjdump output: not a CUDA binary, or PTX only");
  return out;
}

Occupancy theoretical_occupancy(const ArchLimits& a, int block_threads, int regs_per_thread, int64_t smem_per_block) {
  Occupancy o;
  o.block_threads = block_threads;
  o.max_warps = a.max_warps_per_sm;
  if (block_threads < 1 || block_threads > a.max_threads_per_block) {
    o.limiter = fmt::format("block of {} threads: the limit is {}", block_threads, a.max_threads_per_block);
    return o;
  }
  if (regs_per_thread > a.max_regs_per_thread) {
    o.limiter = fmt::format("{} registers per thread: the limit is {}", regs_per_thread, a.max_regs_per_thread);
    return o;
  }
  if (smem_per_block > a.max_smem_per_block) {
    o.limiter = fmt::format("{} B of shared memory per block: the limit is {}", smem_per_block, a.max_smem_per_block);
    return o;
  }
  const int warps = (block_threads + 31) / 32;
  o.by_warps = a.max_warps_per_sm / warps;
  o.by_blocks = a.max_blocks_per_sm;
  // Registers are allocated per warp in units of 256; each of the 4 SM sub-partitions holds a quarter of the file.
  if (regs_per_thread > 0) {
    const int64_t per_warp = round_up(int64_t{regs_per_thread} * 32, a.reg_alloc_unit);
    const int64_t warps_by_regs = (a.regs_per_sm / 4 / per_warp) * 4;
    o.by_regs = static_cast<int>(warps_by_regs / warps);
  } else {
    o.by_regs = a.max_blocks_per_sm;
  }
  const int64_t smem = round_up(smem_per_block + a.reserved_smem_per_block, a.smem_alloc_unit);
  o.by_smem = smem > 0 ? static_cast<int>(a.smem_per_sm / smem) : a.max_blocks_per_sm;
  o.blocks_per_sm = std::min({o.by_warps, o.by_blocks, o.by_regs, o.by_smem});
  if (o.blocks_per_sm == 0) {
    o.limiter = o.by_regs == 0 ? "registers: one block needs more than the SM's register file" : "shared memory";
    return o;
  }
  o.active_warps = o.blocks_per_sm * warps;
  o.ratio = static_cast<double>(o.active_warps) / a.max_warps_per_sm;
  // Name the cap that binds; when several bind, the one a user can change most easily comes first.
  if (o.blocks_per_sm == o.by_regs && o.by_regs < o.by_warps)
    o.limiter = "registers";
  else if (o.blocks_per_sm == o.by_smem && o.by_smem < o.by_warps)
    o.limiter = "shared memory";
  else if (o.blocks_per_sm == o.by_blocks && o.by_blocks < o.by_warps)
    o.limiter = "blocks per SM";
  else
    o.limiter = "warps";
  return o;
}

std::string find_cuobjdump() {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  if (const char* path = std::getenv("PATH")) {
    std::string_view p(path);
    for (size_t i = 0; i <= p.size();) {
      const size_t colon = std::min(p.find(':', i), p.size());
      if (colon > i) candidates.push_back(fs::path(std::string(p.substr(i, colon - i))) / "cuobjdump");
      i = colon + 1;
    }
  }
  if (const char* home = std::getenv("CUDA_HOME")) candidates.push_back(fs::path(home) / "bin/cuobjdump");
  candidates.push_back("/usr/local/cuda/bin/cuobjdump");
  auto first_executable = [&]() -> std::string {
    for (const auto& c : candidates) {
      std::error_code ec;
      if (fs::is_regular_file(c, ec) && access(c.c_str(), X_OK) == 0) return c.string();
    }
    return "";
  };
  if (auto found = first_executable(); !found.empty()) return found;
  // pip install nvidia-cuda-cuobjdump puts it under site-packages/nvidia/cu13/bin: ask Python only when needed.
  candidates.clear();
  const ProcessOutput py = run_process(
      {"python3", "-c",
       "import importlib.util as u; s = u.find_spec('nvidia'); print('\\n'.join(s.submodule_search_locations) if s "
       "else '')"});
  if (py.exit_code == 0) {
    size_t i = 0;
    while (i < py.out.size()) {
      const size_t nl = std::min(py.out.find('\n', i), py.out.size());
      if (nl > i) candidates.push_back(fs::path(py.out.substr(i, nl - i)) / "cu13/bin/cuobjdump");
      i = nl + 1;
    }
  }
  return first_executable();
}

std::vector<KernelResources> read_resource_usage(const std::string& file) {
  if (!std::filesystem::exists(file)) throw_bad_input(fmt::format("{}: no such file", file));
  const std::string tool = find_cuobjdump();
  if (tool.empty())
    throw Error(ExitCode::no_gpu,
                "cuobjdump not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin): install the CUDA toolkit or "
                "`pip install nvidia-cuda-cuobjdump`");
  const ProcessOutput r = run_process({tool, "--dump-resource-usage", file});
  if (r.exit_code != 0) {
    std::string why = r.err.empty() ? r.out : r.err;
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    throw_bad_input(fmt::format("{}: cuobjdump failed ({}): {}", file, r.exit_code, why));
  }
  return parse_resource_usage(r.out);
}

}  // namespace gsq::probes
