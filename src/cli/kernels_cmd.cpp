// `gpusqueeze kernels`: the tuned kernels against naive versions, cudaMemcpy, cuBLAS and (--torch) PyTorch.
#include "cli/bench_run.hpp"
#include "cli/common.hpp"

#include "bench/compare.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <iostream>

namespace gsq::cli {

Action register_kernels(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  auto torch = std::make_shared<bool>(false);
  auto torch_rounds = std::make_shared<int>(1);
  o->suite = "kernels";
  auto* cmd = app.add_subcommand(
      "kernels", "Benchmark the tuned kernels against their naive versions and cudaMemcpy D2D (steps 3 and 4)");
  cmd->footer(
      "LayerNorm, RMSNorm, softmax, fused softmax + dropout over widths 256–65536 (bf16, 128 Mi elements = 256 MiB,\n"
      "four times the L2), NCHW <-> NHWC on three shapes, and cudaMemcpy D2D of the same bytes, all in one run: the\n"
      "last table gives each kernel's bandwidth as a fraction of this GPU's measured copy ceiling.\n"
      "Other widths or dtypes: -a cols=8192 -a dtype=f16. Only one kernel: -b softmax.\n"
      "--torch also runs PyTorch eager and torch.compile on the same shapes through the Python module\n"
      "(python/gpusqueeze_kernels.py; needs torch with CUDA); --torch-rounds 5 times them in five rounds, in a\n"
      "shuffled order each round, and gives ours / torch.compile with a 95% interval, so a gap of a few tenths of a\n"
      "percent is a measured difference or a tie.\n"
      "--suite quant: W4A16 and W8A16 GEMM for M = 1…16 on 4096², 8192², 8192x28672, 28672x8192 against cuBLAS fp16,\n"
      "weights rotated through ≥ 192 MiB of copies so the L2 never holds them.\n"
      "The kernels are a C library for your own code: include/gpusqueeze/kernels.h, build/lib/libgsqkernels.so.\n"
      "Examples:\n"
      "  gpusqueeze kernels\n"
      "  gpusqueeze kernels -b rms_norm -a cols=5120 --torch --torch-rounds 5\n"
      "  gpusqueeze kernels --suite quant -o quant.json");
  add_run_options(cmd, *o);
  cmd->add_option("--suite", o->suite, "kernels (norms, softmax, layout) or quant (W4A16/W8A16 vs cuBLAS fp16)")
      ->check(CLI::IsMember({"kernels", "quant"}))
      ->capture_default_str();
  cmd->add_flag("--list", o->list, "List the suite's benchmarks and axes, then exit");
  cmd->add_flag("--torch", *torch,
                "Also compare with PyTorch eager and torch.compile (torch_compare.py, installed in share/gpusqueeze)");
  cmd->add_option("--torch-rounds", *torch_rounds,
                  "With --torch: rounds, in a shuffled order each (past 1, ours / torch.compile gets a 95% interval)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  auto torch_out = std::make_shared<std::string>();
  cmd->add_option(
      "--torch-out", *torch_out,
      "With --torch: write the comparison as gpusqueeze.torch_compare/1 JSON (what `report --torch` reads)");
  return [o, torch, torch_rounds, torch_out]() {
    const int rc = run_bench(*o);
    if (rc != 0 || !*torch) return rc;
    const auto script = data_file("torch_compare.py");
    if (!script)
      throw Error(ExitCode::bad_input,
                  "torch_compare.py is not installed beside gpusqueeze (share/gpusqueeze): rebuild or reinstall");
    // The script loads the kernels through ctypes: point it at the library shipped with this binary.
    if (const auto lib = kernels_library(); lib && !std::getenv("GSQ_KERNELS_LIBRARY"))
      setenv("GSQ_KERNELS_LIBRARY", lib->c_str(), 0);
    note("running " + script->string());
    std::fflush(stdout);
    std::string command = fmt::format("python3 '{}' --rounds {}", script->string(), *torch_rounds);
    if (!torch_out->empty()) {
      if (torch_out->find('\'') != std::string::npos)
        throw_bad_input("--torch-out: a file name without quotes, please");
      command += fmt::format(" --out '{}'", *torch_out);
    }
    return std::system(command.c_str()) == 0 ? 0 : 1;
  };
}

}  // namespace gsq::cli
