// `gpusqueeze occupancy FILE [KERNEL]`: registers, shared memory, local memory and theoretical occupancy of the
// kernels in any CUDA binary, from cuobjdump's resource usage and the SM architecture's limits.
#include "cli/common.hpp"

#include "core/error.hpp"
#include "core/table.hpp"
#include "probes/occupancy.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>
#include <regex>

namespace gsq::cli {

namespace {

struct OccupancyOptions {
  std::string file, kernel, arch;
  int block_threads = 256;
  int64_t dynamic_smem = 0;
  bool json = false;
};

// "void ns::(anonymous namespace)::kernel<float, 4>(Args, int)" -> "ns::kernel<float, 4>": the template arguments
// are what tells one instantiation from the next; the table keeps them and drops the rest.
std::string display_name(std::string n) {
  for (const std::string_view junk : {std::string_view("(anonymous namespace)::")})
    for (size_t at; (at = n.find(junk)) != std::string::npos;) n.erase(at, junk.size());
  if (n.starts_with("void ")) n.erase(0, 5);
  if (!n.empty() && n.back() == ')') {
    int depth = 0;
    for (size_t i = n.size(); i-- > 0;) {
      if (n[i] == ')') ++depth;
      if (n[i] == '(' && --depth == 0) {
        n.erase(i);
        break;
      }
    }
  }
  return n;
}

int parse_arch(const std::string& s) {
  std::smatch m;
  if (!std::regex_match(s, m, std::regex(R"((?:sm_|compute_)?(\d+))")))
    throw_bad_input("--arch " + s + " (e.g. sm_90)");
  return std::stoi(m[1]);
}

int run_occupancy(const OccupancyOptions& o) {
  auto kernels = probes::read_resource_usage(o.file);
  const int forced_arch = o.arch.empty() ? 0 : parse_arch(o.arch);
  if (!o.kernel.empty()) {
    std::regex re;
    try {
      re = std::regex(o.kernel);
    } catch (const std::regex_error&) {
      throw_bad_input("KERNEL: not a valid regular expression: " + o.kernel);
    }
    std::erase_if(kernels,
                  [&](const auto& k) { return !std::regex_search(k.name, re) && !std::regex_search(k.mangled, re); });
    if (kernels.empty()) throw_bad_input(fmt::format("{}: no kernel matches '{}'", o.file, o.kernel));
  }
  if (kernels.empty()) throw_bad_input(o.file + ": the binary holds no compiled kernels (PTX only?)");
  nlohmann::json rows = nlohmann::json::array();
  Table t{{"kernel", "arch", "regs", "static smem", "local (spills)", "stack", "blocks/SM", "occupancy", "limited by",
           "at 128/256/512/1024 threads"},
          {}};
  for (const auto& k : kernels) {
    const int sm = forced_arch ? forced_arch : k.arch;
    const auto limits = probes::arch_limits(sm);
    nlohmann::json j{{"kernel", k.name},
                     {"mangled", k.mangled},
                     {"arch", fmt::format("sm_{}", sm)},
                     {"registers", k.regs},
                     {"static_shared_bytes", k.shared},
                     {"local_bytes", k.local},
                     {"stack_bytes", k.stack},
                     {"constant0_bytes", k.constant0}};
    std::vector<std::string> row{abbreviate(display_name(k.name), 90),
                                 fmt::format("sm_{}", sm),
                                 std::to_string(k.regs),
                                 std::to_string(k.shared),
                                 std::to_string(k.local),
                                 std::to_string(k.stack)};
    if (!limits) {
      j["occupancy"] = nullptr;
      j["note"] = fmt::format("no limits known for sm_{} (known: {}); pass --arch", sm, probes::known_archs());
      row.insert(row.end(), {"", "", "unknown arch", ""});
    } else {
      const int64_t smem = k.shared + o.dynamic_smem;
      const auto occ = probes::theoretical_occupancy(*limits, o.block_threads, k.regs, smem);
      std::string sweep;
      for (int b : {128, 256, 512, 1024}) {
        const auto s = probes::theoretical_occupancy(*limits, b, k.regs, smem);
        sweep += fmt::format("{}{:.0f}%", sweep.empty() ? "" : " / ", 100 * s.ratio);
      }
      j["occupancy"] = {{"block_threads", o.block_threads},
                        {"dynamic_shared_bytes", o.dynamic_smem},
                        {"blocks_per_sm", occ.blocks_per_sm},
                        {"active_warps", occ.active_warps},
                        {"max_warps", occ.max_warps},
                        {"ratio", occ.ratio},
                        {"limiter", occ.limiter},
                        {"blocks_by",
                         {{"warps", occ.by_warps},
                          {"registers", occ.by_regs},
                          {"shared_memory", occ.by_smem},
                          {"blocks_per_sm", occ.by_blocks}}}};
      row.insert(row.end(),
                 {std::to_string(occ.blocks_per_sm), fmt::format("{:.0f}%", 100 * occ.ratio), occ.limiter, sweep});
    }
    rows.push_back(std::move(j));
    t.rows.push_back(std::move(row));
  }
  if (o.json) {
    std::cout << nlohmann::json{{"schema", "gpusqueeze.occupancy/1"}, {"file", o.file}, {"kernels", rows}}.dump(2)
              << '\n';
    return 0;
  }
  std::cout << fmt::format("{}: {} kernel(s); occupancy for blocks of {} threads{}\n\n", o.file, kernels.size(),
                           o.block_threads,
                           o.dynamic_smem ? fmt::format(" and {} B of dynamic shared memory", o.dynamic_smem) : "")
            << t.markdown();
  size_t local = 0;
  for (const auto& k : kernels) local += k.local > 0;
  if (local)
    std::cout << fmt::format(
        "\n{} kernel(s) use local memory: register spills or arrays indexed at run time. Build with -Xptxas -v to see "
        "the spill stores and loads.\n",
        local);
  return 0;
}

}  // namespace

Action register_occupancy(CLI::App& app) {
  auto o = std::make_shared<OccupancyOptions>();
  auto* cmd = app.add_subcommand(
      "occupancy", "Registers, shared memory, spills and theoretical occupancy of the kernels in a CUDA binary");
  cmd->footer(
      "FILE: an executable, shared library, object, cubin or fatbin (ours or yours); read with cuobjdump\n"
      "--dump-resource-usage (CUDA toolkit, or `pip install nvidia-cuda-cuobjdump`). No GPU needed.\n"
      "Occupancy = resident warps / the SM's maximum, the smallest of four caps: warps per SM, registers (allocated\n"
      "per warp in units of 256, per SM sub-partition), shared memory (static + dynamic + 1 KiB reserved per block on\n"
      "sm_80+, largest carveout) and blocks per SM. 'local' > 0 means spills or local arrays.\n"
      "Examples:\n"
      "  gpusqueeze occupancy build/lib/libgsqkernels.so row_kernel --block-size 256\n"
      "  gpusqueeze occupancy my_app --arch sm_90 --dynamic-smem 49152 --json");
  cmd->add_option("file", o->file, "CUDA binary")->required();
  cmd->add_option("kernel", o->kernel, "Only kernels whose (demangled) name matches this regex");
  cmd->add_option("--block-size", o->block_threads, "Threads per block")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--dynamic-smem", o->dynamic_smem, "Dynamic shared memory per block, bytes")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--arch", o->arch, "SM architecture to assume (default: the one each kernel was compiled for)");
  cmd->add_flag("--json", o->json, "Print gpusqueeze.occupancy/1 JSON");
  return [o]() { return run_occupancy(*o); };
}

}  // namespace gsq::cli
