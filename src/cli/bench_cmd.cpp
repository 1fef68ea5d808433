// `gpusqueeze bench SUITE` and `gpusqueeze compare BASE NEW`.
#include "cli/common.hpp"
#include "cli/probe_multi.hpp"

#include "bench/compare.hpp"
#include "bench/runner.hpp"
#include "core/error.hpp"
#include "core/json_io.hpp"
#include "core/table.hpp"
#include "kernels/suite_support.hpp"
#include "probes/host_probes.hpp"

#include "cuda/check.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <iostream>
#include <sstream>

namespace gsq::cli {

namespace {

struct BenchOptions {
  std::string suite = "core";
  bench::RunOptions run;
  std::vector<std::string> axis_overrides;
  std::string mode = "both", output, format = "md";
  bool list = false, no_samples = false;
};

bench::Suite suite_named(const std::string& name) {
  if (name == "core") return bench::core_suite();
  if (name == "mem") return bench::mem_suite();
  if (name == "pcie") return bench::pcie_suite();
  if (name == "l2") return bench::l2_suite();
  if (name == "overlap") return bench::overlap_suite();
  if (name == "kernels") return kernels::kernels_suite();
  if (name == "quant") return kernels::quant_suite();
  throw_bad_input(fmt::format("unknown suite '{}' (available: core, mem, pcie, l2, overlap, kernels, quant)", name));
}

std::map<std::string, std::vector<std::string>> parse_overrides(const std::vector<std::string>& items) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      throw_bad_input(fmt::format("-a {}: expected NAME=VALUE[,VALUE...]", item));
    }
    std::vector<std::string> values;
    std::string rest = item.substr(eq + 1);
    for (size_t pos = 0; pos <= rest.size();) {
      const auto comma = rest.find(',', pos);
      const std::string v = rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      if (v.empty()) throw_bad_input(fmt::format("-a {}: empty value", item));
      values.push_back(v);
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    out[item.substr(0, eq)] = std::move(values);
  }
  return out;
}

int run_bench(BenchOptions& o) {
  const bench::Suite suite = suite_named(o.suite);
  if (o.list) {
    for (const auto& b : suite) {
      std::string axes;
      for (const auto& a : b.axes) {
        std::string vals;
        for (const auto& v : a.values) vals += (vals.empty() ? "" : ",") + v;
        axes += fmt::format(" -a {}={}", a.name, vals);
      }
      std::cout << fmt::format("{:<18} {}\n{:<18}{}\n", b.name, b.description, "", axes);
    }
    return 0;
  }
  o.run.settings.cold = o.mode == "cold" || o.mode == "both" || o.mode == "all";
  o.run.settings.batch = o.mode == "batch" || o.mode == "both" || o.mode == "all";
  o.run.settings.host = o.mode == "host" || o.mode == "all";
  o.run.overrides = parse_overrides(o.axis_overrides);
  o.run.progress = [](const std::string& s) { note(s); };
  const bench::Run run = bench::run_suite(o.suite, suite, o.run);
  if (!o.output.empty()) {
    write_json_file(o.output, bench::to_json(run, !o.no_samples));
    note("wrote " + o.output);
  }
  if (o.format == "json")
    std::cout << bench::to_json(run, !o.no_samples).dump(2) << '\n';
  else if (o.format == "csv")
    std::cout << bench::render_csv(run);
  else
    std::cout << bench::render_markdown(run) << '\n' << bench::ceilings_table(run).markdown();
  // What the probe's sweep says, in one line each (stderr when the table went to stdout as data).
  std::ostream& say = o.format == "md" ? std::cout : std::cerr;
  if (const auto t = probes::l2_transition(run)) {
    say << fmt::format(
        "\nL2 → HBM: reads run at up to {:.0f} GB/s while the data fits the L2 (up to {} MiB, above halfway to "
        "HBM's rate), and fall to {:.0f} GB/s ({}); the L2 is {} MiB.\n",
        t->l2_bytes_per_s / 1e9, t->last_l2_size >> 20, t->hbm_bytes_per_s / 1e9,
        t->first_hbm_size ? fmt::format("from {} MiB", t->first_hbm_size >> 20) : std::string("at the largest size"),
        run.l2_cache_bytes >> 20);
  }
  if (o.suite == "kernels")
    say << "\nEach kernel against cudaMemcpy D2D and the naive version, same run (cold mode: L2 flushed):\n"
        << kernels::copy_ratio_table(run).markdown();
  if (o.suite == "quant")
    say << "\nWeight-only GEMM against cuBLAS fp16, same run (cold: L2 flushed, weights rotated; × copy = bytes moved "
           "per second / cudaMemcpy D2D):\n"
        << kernels::quant_table(run).markdown();
  for (const auto& [memory, speedup] : probes::overlap_speedups(run))
    say << fmt::format(
        "overlap, {} host memory: serial / three streams = {:.2f}×{}\n", memory, speedup,
        memory == "pageable"
            ? " (pageable copies are staged through the driver's pinned buffer and block the host, so they "
              "barely overlap)"
            : "");
  return 0;
}

int run_host_costs(const std::string& group, const BenchOptions& o, int samples, bool json) {
  const auto costs = probes::measure_host_costs(group, o.run.device, samples, [](const std::string& s) { note(s); });
  cudaDeviceProp prop{};
  GSQ_CUDA_CHECK(cudaGetDeviceProperties(&prop, o.run.device));
  const auto j = probes::host_costs_json(costs, prop.name);
  if (!o.output.empty()) {
    write_json_file(o.output, j);
    note("wrote " + o.output);
  }
  if (json)
    std::cout << j.dump(2) << '\n';
  else
    std::cout << probes::host_costs_table(costs).markdown();
  return 0;
}

void add_run_options(CLI::App* cmd, BenchOptions& o) {
  cmd->add_option("-b,--benchmark", o.run.filter, "Only benchmarks whose name matches this regex");
  cmd->add_option("-a,--axis", o.axis_overrides, "Override an axis: NAME=V1[,V2...] (sizes take Ki/Mi/Gi)");
  cmd->add_option("--max-seconds", o.run.settings.max_seconds, "Time limit per mode and configuration")
      ->check(CLI::Range(0.01, 3600.0))
      ->capture_default_str();
  cmd->add_option("--device", o.run.device, "CUDA device ordinal")->capture_default_str();
  cmd->add_flag("--interleave", o.run.settings.interleave,
                "Configurations take turns sample by sample instead of running one after the other (all are set up "
                "at once): drift in clocks or temperature then reaches each alike, for ratios between them");
  cmd->add_flag("--allow-busy", o.run.allow_busy,
                "Run even if other processes use the GPU (the result says so on stderr)");
  cmd->add_option("-o,--output", o.output, "Write the gpusqueeze.bench/1 JSON (raw samples included) to FILE");
  auto* format = cmd->add_option("--format", o.format, "What to print: md, csv or json")
                     ->check(CLI::IsMember({"md", "csv", "json"}))
                     ->capture_default_str();
  // Every other command says --json: the same word here.
  cmd->add_flag_callback(
         "--json", [&o] { o.format = "json"; }, "Print JSON (the same as --format json)")
      ->excludes(format);
}

}  // namespace

Action register_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  auto* cmd =
      app.add_subcommand("bench", "Time a benchmark suite with CUDA events: P50/P90/P99 with confidence intervals");
  cmd->footer(
      "Timing protocol: warmup (10 launches and 50 ms) kept out of the results; then two modes per configuration:\n"
      "  cold   L2 flushed before each sample (by reading twice its size, which leaves no dirty lines to write back\n"
      "         during the timed call) and the launch queued behind a blocking kernel, so neither cached data nor CPU\n"
      "         launch cost is timed: the latency of one call;\n"
      "  batch  up to 256 launches queued behind the blocking kernel, then released (each sample about 2 ms): what\n"
      "         back-to-back calls cost the GPU, free of host jitter;\n"
      "  host   launches back to back as fast as this thread issues them: includes the CPU launch cost, so it moves\n"
      "         with the host (launch.empty always adds it; --mode host|all for the others).\n"
      "Each mode stops when the 95% CI of the median is within ±0.5% (--target-ci) after at least --min-seconds, or "
      "at\n"
      "--max-seconds. The launching thread is pinned to one CPU near the GPU (--no-pin to keep it free). The SM clock "
      "is\n"
      "read from NVML with every sample while the GPU is busy (cold: during the blocking kernel; batch: during the\n"
      "batch); samples with a slowdown reason or a clock below 95% of the run's highest are\n"
      "flagged and left out unless --keep-throttled (or unless more than half are flagged).\n"
      "Sample sets: default; stress (>= 1000 samples, for P99); boundary (each axis's smallest and largest value);\n"
      "warmup (the first 10 calls, no warmup: module loading and first-touch costs).\n"
      "Examples:\n"
      "  gpusqueeze bench core -o base.json\n"
      "  gpusqueeze bench core -b copy -a bytes=256Mi,2Gi --set stress\n"
      "  gpusqueeze compare base.json new.json");
  cmd->add_option("suite", o->suite, "Suite to run: core, mem, pcie, l2, overlap, kernels")->capture_default_str();
  add_run_options(cmd, *o);
  cmd->add_option("--suite", o->suite, "kernels (norms, softmax, layout) or quant (W4A16/W8A16 vs cuBLAS fp16)")
      ->check(CLI::IsMember({"kernels", "quant"}))
      ->capture_default_str();
  cmd->add_flag("--list", o->list, "List the suite's benchmarks and axes, then exit");
  cmd->add_option("--set", o->run.set, "Sample set: default, stress, boundary, warmup")
      ->check(CLI::IsMember({"default", "stress", "boundary", "warmup"}))
      ->capture_default_str();
  cmd->add_option("--mode", o->mode, "Timing modes: cold, batch, host, both (cold+batch) or all")
      ->check(CLI::IsMember({"cold", "batch", "host", "both", "all"}))
      ->capture_default_str();
  cmd->add_option("--min-samples", o->run.settings.min_samples, "Samples before the stopping rule may stop")
      ->check(CLI::Range(5u, 10000000u))
      ->capture_default_str();
  cmd->add_option("--max-samples", o->run.settings.max_samples, "Hard cap on samples per mode")
      ->check(CLI::Range(5u, 10000000u))
      ->capture_default_str();
  cmd->add_option("--min-seconds", o->run.settings.min_seconds, "Measure each mode at least this long")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--target-ci", o->run.settings.target_rel_ci, "Relative half-width of the median's 95% CI to stop at")
      ->check(CLI::Range(0.0001, 0.5))
      ->capture_default_str();
  cmd->add_option("--warmup", o->run.settings.warmup_launches, "Warmup launches (at least 50 ms of warmup also runs)")
      ->capture_default_str();
  cmd->add_flag("!--no-pin", o->run.settings.pin_cpu, "Do not pin the launching thread to a CPU near the GPU");
  cmd->add_flag("--keep-throttled", o->run.settings.keep_throttled, "Keep throttle-flagged samples in the statistics");
  cmd->add_flag("--no-samples", o->no_samples, "Leave raw samples out of the JSON (compare needs them)");
  return [o]() { return run_bench(*o); };
}

namespace {
struct CompareCliOptions {
  std::string base, next;
  bench::CompareOptions cmp;
  std::vector<std::string> ignore_axes;
  bool json = false, require_same_env = false;
};
}  // namespace

Action register_probe(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  auto host_samples = std::make_shared<int>(200);
  o->suite = "mem";
  auto* cmd = app.add_subcommand(
      "probe", "Measure this GPU's ceilings next to the theoretical limits: mem, l2, pcie, overlap, launch, alloc");
  cmd->footer(
      "probe mem      read, write, copy, triad (BabelStream byte counting) with 4/8/16-byte accesses over 16 MiB–4 "
      "GiB,\n"
      "               copy in five variants (flat: one access a thread, the fastest; grid-stride, evict-first\n"
      "               streaming, per-block tiles, TMA bulk copies through shared memory); cudaMemcpy D2D as the\n"
      "               reference (-b 'mem\\.(copy|memcpy_d2d)' -a variant=flat -a width=16 --interleave for the two\n"
      "               side by side, taking turns sample by sample; the ceilings table then gives the fastest\n"
      "               copy / cudaMemcpy at each size past four L2s);\n"
      "               theoretical HBM = memory clock × bus width × 2.\n"
      "probe l2       reads over 2 MiB–1 GiB with the data left in cache (batch mode): the L2 ceiling and the size\n"
      "               where bandwidth falls to HBM.\n"
      "probe pcie     H2D, D2H, both at once; pinned vs pageable; 4 KiB–256 MiB; against the link's generation × "
      "width.\n"
      "probe overlap  8 chunks of H2D + compute + D2H: serial on one stream vs spread over three streams, pinned vs\n"
      "               pageable; prints the pipelining speedup (pageable copies cannot overlap).\n"
      "probe launch   host-side costs (steady clock, many calls per sample): kernel launch enqueue, graph launch per\n"
      "               kernel, cudaStreamSynchronize/cudaDeviceSynchronize idle, launch+sync round trip. The GPU-side\n"
      "               launch cost with and without graphs: gpusqueeze bench core -b launch.\n"
      "probe alloc    cudaMalloc+cudaFree vs cudaMallocAsync+cudaFreeAsync from the stream-ordered pool, 4 KiB–1 GiB.\n"
      "probe p2p      copy-engine bandwidth between every pair of GPUs, one way and both ways (peer access on, or\n"
      "               staged through the host when the pair has none), and a 4-byte copy latency; on one GPU the\n"
      "               on-device copy. --p2p-mib sets the copy size.\n"
      "probe nccl     all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv from 8 B to\n"
      "               --max-bytes in one process driving every GPU (nccl-tests -g N), with nccl-tests' algbw and "
      "busbw;\n"
      "               NCCL is opened at run time ($GSQ_NCCL_LIBRARY, the loader path, the CUDA toolkit, PyPI's\n"
      "               nvidia-nccl in $VIRTUAL_ENV). --nccl-library only finds NCCL and prints its version (no GPU).\n"
      "mem, l2, pcie and overlap are bench suites: the same timing protocol, statistics, JSON (-o) and `compare`.\n"
      "Examples:\n"
      "  gpusqueeze probe mem\n"
      "  gpusqueeze probe pcie -o pcie.json      then: gpusqueeze compare old-pcie.json pcie.json\n"
      "  gpusqueeze probe launch --json\n"
      "  gpusqueeze probe nccl --procs 8 --ops all_reduce,all_gather");
  cmd->add_option("what", o->suite, "mem, l2, pcie, overlap, launch, alloc, p2p or nccl")
      ->check(CLI::IsMember({"mem", "l2", "pcie", "overlap", "launch", "alloc", "p2p", "nccl"}))
      ->capture_default_str();
  cmd->add_option("--samples", *host_samples, "launch/alloc: samples per probe")
      ->check(CLI::Range(10, 100000))
      ->capture_default_str();
  auto multi = std::make_shared<MultiGpuOptions>();
  cmd->add_option("--p2p-mib", multi->p2p_mib, "p2p: MiB per copy")->check(CLI::Range(1, 4096))->capture_default_str();
  cmd->add_option("--min-bytes", multi->nccl.min_bytes, "nccl: smallest size of the sweep")->capture_default_str();
  cmd->add_option("--nccl-warmup", multi->nccl.warmup, "nccl: untimed iterations per size")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->add_option("--nccl-iters", multi->nccl.iters, "nccl: timed iterations per size")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--max-bytes", multi->nccl.max_bytes, "nccl: largest size of the sweep")->capture_default_str();
  cmd->add_flag("--no-ring", multi->no_ring,
                "nccl: no Ring run beside a collective NCCL ran on NVLS or Tree at large sizes (by default one runs, "
                "NCCL_ALGO=Ring in a child process: busbw on NVLS/Tree is no link's rate)");
  cmd->add_option("--ops", multi->ops, "nccl: collectives to run (comma-separated)");
  cmd->add_flag("--nccl-library", multi->library_only, "nccl: find NCCL, print where and its version, and stop");
  cmd->add_flag("--sweep-env", multi->sweep_env,
                "nccl: run the collective (--ops, default all_reduce) in fresh processes under NCCL settings (--env, "
                "else NCCL_ALGO, NCCL_PROTO, NCCL_MIN_CTAS, NCCL_P2P_LEVEL, NCCL_NVLS_ENABLE variants) and say which "
                "helps here");
  cmd->add_option("--env", multi->env_sets,
                  "nccl --sweep-env: one setting to try, NAME=VALUE[,NAME=VALUE] (repeatable)");
  cmd->add_option("--procs", multi->procs,
                  "nccl: run as N processes with one GPU each (ncclCommInitRank; the bootstrap id passed to each), "
                  "like nccl-tests under mpirun")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--mpi", multi->mpi,
                "nccl under mpirun: rank, size and the GPU (the node-local rank) from MPI, the bootstrap id broadcast "
                "from rank 0 (MPI_Bcast), like nccl-tests built with MPI=1; needs the MPI plugin (built where "
                "Debian's libopenmpi-dev is installed)");
  cmd->add_option("--nccl-id-file", multi->id_file,
                  "nccl under mpirun/srun/torchrun: rank and size from the launcher's environment, the bootstrap id "
                  "written by rank 0 to this file on a file system every rank sees");
  cmd->add_option("--rank", multi->rank, "nccl: this process's rank (with --nccl-id)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--nranks", multi->nranks, "nccl: ranks in the job (with --nccl-id)")->check(CLI::PositiveNumber);
  cmd->add_option("--nccl-id", multi->nccl_id, "nccl: the job's bootstrap id (hex of ncclGetUniqueId)");
  cmd->add_option("--rank-device", multi->device, "nccl: the GPU this rank drives (default: its local rank)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--trials", multi->trials, "nccl --sweep-env: runs of each setting, interleaved")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  add_run_options(cmd, *o);
  return [o, host_samples, multi]() {
    if (o->suite == "p2p") return run_p2p(*multi, o->format == "json");
    if (o->suite == "nccl")
      return multi->sweep_env ? run_nccl_sweep(*multi, o->format == "json") : run_nccl(*multi, o->format == "json");
    if (o->suite == "launch" || o->suite == "alloc")
      return run_host_costs(o->suite, *o, *host_samples, o->format == "json");
    return run_bench(*o);
  };
}

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

Action register_compare(CLI::App& app) {
  auto o = std::make_shared<CompareCliOptions>();
  auto* cmd = app.add_subcommand(
      "compare", "Compare two bench runs: FASTER / SLOWER / SAME / UNCERTAIN per benchmark; exit 1 on regression");
  cmd->footer(
      "Pairs benchmarks by name, axes and mode. The ratio is median(new)/median(base) of the time per launch (> 1 is\n"
      "slower), with a 95% bootstrap CI over the raw samples (2000 resamples), widened by two timer steps (the "
      "smallest\n"
      "gap between sample values: 32 ns for CUDA events on an H200) relative to the base median. Verdict: SLOWER if "
      "the whole CI is above\n"
      "1 + threshold, FASTER if below 1 - threshold, SAME if inside the band, else UNCERTAIN (take more samples).\n"
      "The Mann-Whitney U p-value is printed for reference. Locked environment fields that differ are listed loudly;\n"
      "--require-same-env refuses (exit 2). Exit codes: 0 no regression, 1 a SLOWER, 2 bad input.\n"
      "Examples:\n"
      "  gpusqueeze compare base.json new.json --threshold 0.05\n"
      "  gpusqueeze compare a.json b.json --ignore-axis grid_fraction    A/B of one parameter");
  cmd->add_option("base", o->base, "Baseline run (gpusqueeze.bench/1)")->required()->check(CLI::ExistingFile);
  cmd->add_option("new", o->next, "New run")->required()->check(CLI::ExistingFile);
  cmd->add_option("--threshold", o->cmp.min_effect, "Smallest relative change that counts (fraction)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--ignore-axis", o->ignore_axes, "Pair configurations that differ only in this axis");
  cmd->add_flag("--require-same-env", o->require_same_env, "Refuse when locked environment fields differ");
  cmd->add_flag("--json", o->json, "Print gpusqueeze.compare/1 JSON");
  return [o]() {
    o->cmp.ignore_axes = {o->ignore_axes.begin(), o->ignore_axes.end()};
    const bench::Run base = bench::load_run(o->base), next = bench::load_run(o->next);
    const auto rep = bench::compare_runs(base, next, o->cmp);
    if (!rep.env_drift.empty()) {
      std::string fields;
      for (const auto& d : rep.env_drift)
        fields += fmt::format("\n  {}: {} → {}", d.field, abbreviate(d.before, 40), abbreviate(d.after, 40));
      const std::string msg =
          fmt::format("WARNING: the runs come from different environments ({} locked field(s) differ):{}",
                      rep.env_drift.size(), fields);
      if (o->require_same_env) throw_bad_input(msg);
      note(msg);
    }
    if (rep.rows.empty()) throw_bad_input("no benchmark appears in both runs");
    if (o->json) {
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& c : rep.rows) {
        rows.push_back({{"benchmark", c.label},
                        {"mode", c.mode},
                        {"base_p50_ns", c.base_p50_ns},
                        {"new_p50_ns", c.new_p50_ns},
                        {"ratio", c.ratio},
                        {"ci95", {c.ci.lo, c.ci.hi}},
                        {"p_value", c.p_value},
                        {"verdict", bench::to_string(c.verdict)},
                        {"base_n", c.base_n},
                        {"new_n", c.new_n}});
      }
      nlohmann::json drift = nlohmann::json::array();
      for (const auto& d : rep.env_drift) drift.push_back({{"field", d.field}, {"base", d.before}, {"new", d.after}});
      std::cout << nlohmann::json{{"schema", "gpusqueeze.compare/1"},
                                  {"base", o->base},
                                  {"new", o->next},
                                  {"threshold", o->cmp.min_effect},
                                  {"rows", rows},
                                  {"env_drift", drift},
                                  {"only_in_base", rep.only_in_base},
                                  {"only_in_new", rep.only_in_new},
                                  {"regression", rep.regression()}}
                       .dump(2)
                << '\n';
    } else {
      Table t{{"benchmark", "mode", "base P50", "new P50", "ratio", "95% CI", "p (M-W U)", "verdict"}, {}};
      for (const auto& c : rep.rows) {
        t.rows.push_back({c.label, c.mode, fmt::format("{:.0f} ns", c.base_p50_ns),
                          fmt::format("{:.0f} ns", c.new_p50_ns), fmt::format("{:.4f}", c.ratio),
                          fmt::format("{:.4f}–{:.4f}", c.ci.lo, c.ci.hi), fmt::format("{:.3g}", c.p_value),
                          std::string(bench::to_string(c.verdict))});
      }
      std::cout << fmt::format("{} vs {} (threshold ±{:.1f}%)\n\n{}", o->next, o->base, 100 * o->cmp.min_effect,
                               t.markdown());
      for (const auto& s : rep.only_in_base) std::cout << "only in base: " << s << '\n';
      for (const auto& s : rep.only_in_new) std::cout << "only in new: " << s << '\n';
      std::cout << (rep.regression() ? "REGRESSION: at least one benchmark is SLOWER\n" : "no regression\n");
    }
    return rep.regression() ? 1 : 0;
  };
}

}  // namespace gsq::cli
