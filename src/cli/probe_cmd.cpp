// `gpusqueeze probe mem|l2|pcie|overlap|launch|alloc|p2p|nccl`: this GPU's ceilings next to the theoretical ones.
#include "cli/bench_run.hpp"
#include "cli/common.hpp"
#include "jobs/multi_gpu.hpp"

#include "core/error.hpp"
#include "core/table.hpp"

#include <fmt/format.h>

#include <iostream>

namespace gsq::cli {

namespace {

using jobs::MultiGpuOptions;

std::string matrix_markdown(const std::vector<std::vector<double>>& m, const char* fmt_spec) {
  Table t{{"src \\ dst"}, {}};
  for (size_t j = 0; j < m.size(); ++j) t.header.push_back(fmt::format("GPU {}", j));
  for (size_t i = 0; i < m.size(); ++i) {
    std::vector<std::string> row{fmt::format("GPU {}", i)};
    for (double v : m[i]) row.push_back(v > 0 ? fmt::format(fmt::runtime(fmt_spec), v) : "-");
    t.rows.push_back(std::move(row));
  }
  return t.markdown();
}

int print_p2p(const topo::P2pResult& r, bool json) {
  if (json) {
    std::cout << topo::to_json(r).dump(2) << '\n';
    return 0;
  }
  std::cout << fmt::format("# P2P: {} GPU(s)\n\nOne way (GB/s):\n\n{}", r.gpus, matrix_markdown(r.uni_gbs, "{:.1f}"));
  if (r.gpus > 1) std::cout << "\nBoth ways at once (GB/s):\n\n" << matrix_markdown(r.bi_gbs, "{:.1f}");
  std::cout << "\nSM copy kernel, one way (GB/s):\n\n" << matrix_markdown(r.sm_uni_gbs, "{:.1f}");
  std::cout << "\nLatency of a 4-byte copy, copy engine (µs):\n\n" << matrix_markdown(r.latency_us, "{:.2f}");
  std::cout << "\nLatency of a store seen by the other side, SM ping-pong, one way (µs):\n\n"
            << matrix_markdown(r.sm_latency_us, "{:.2f}");
  for (const auto& n : r.notes) std::cout << "\nnote: " << n;
  std::cout << '\n';
  return 0;
}

// The job's table (exit 1 when a size came back wrong), the library alone, or nothing (a rank other than 0).
int print_nccl(const jobs::NcclJob& job, bool library_only, bool json) {
  if (library_only) {
    const auto& lib = job.library;
    std::cout << fmt::format("NCCL {}\n{}\nfound through {}\n", lib.version_text(), lib.path, lib.origin);
    return 0;
  }
  if (!job.run) return 0;
  const auto& r = *job.run;
  int64_t wrong = 0;
  for (const auto& x : r.rows) wrong += x.wrong;
  if (json) {
    std::cout << topo::to_json(r).dump(2) << '\n';
  } else {
    const bool algo = std::any_of(r.rows.begin(), r.rows.end(), [](const auto& x) { return !x.algo.empty(); });
    Table t{{"collective", "size (B)", "time (µs)", "algbw (GB/s)", "busbw (GB/s)", "#wrong"}, {}};
    if (algo) t.header.push_back("NCCL chose");
    for (const auto& x : r.rows) {
      t.rows.push_back({x.collective, std::to_string(x.bytes), fmt::format("{:.1f}", x.time_us),
                        fmt::format("{:.2f}", x.algbw_gbs), fmt::format("{:.2f}", x.busbw_gbs),
                        std::to_string(x.wrong)});
      if (algo) t.rows.back().push_back(x.algo.empty() ? "-" : fmt::format("{}/{} ×{}", x.algo, x.proto, x.channels));
    }
    std::cout << fmt::format("# NCCL {} on {} rank(s)\n\n{}", r.version, r.ranks, t.markdown());
    for (const auto& n : r.notes) std::cout << "\nnote: " << n;
    std::cout << '\n';
  }
  return wrong > 0 ? static_cast<int>(ExitCode::findings) : 0;
}

// The settings' table; exit 3 when the baseline did not run.
int print_sweep(const jobs::NcclSweep& sweep, int trials, bool json) {
  const auto& rows = sweep.rows;
  if (json) {
    std::cout << nlohmann::json{{"collective", sweep.collective}, {"trials", trials}, {"settings", topo::to_json(rows)}}
                     .dump(2)
              << '\n';
  } else {
    Table t{{"setting", "busbw at large sizes (GB/s, median)", "× as is", "trials", "verdict"}, {}};
    for (const auto& r : rows)
      t.rows.push_back({r.setting, r.busbw.empty() ? "-" : fmt::format("{:.2f}", r.median),
                        r.busbw.empty() ? "-" : fmt::format("{:.3f}", r.ratio), std::to_string(r.busbw.size()),
                        r.error.empty() ? r.verdict : r.verdict + ": " + r.error});
    std::cout << fmt::format("# NCCL settings against each other: {}, {} trial(s) each, interleaved\n\n{}",
                             sweep.collective, trials, t.markdown())
              << "\nbusbw is nccl-tests' bus bandwidth, averaged over the sizes of at least a quarter of the largest "
                 "(--max-bytes); a setting helps when all its trials beat all of the baseline's.\n";
  }
  if (rows.front().busbw.empty())
    throw Error(ExitCode::no_gpu, fmt::format("--sweep-env: the baseline did not run: {}", rows.front().error));
  return 0;
}

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
    const bool json = o->format == "json";
    if (o->suite == "p2p") return print_p2p(jobs::run_p2p(*multi, note), json);
    if (o->suite == "nccl" && multi->sweep_env)
      return print_sweep(jobs::run_nccl_sweep(*multi, note), multi->trials, json);
    if (o->suite == "nccl") return print_nccl(jobs::run_nccl(*multi, note), multi->library_only, json);
    if (o->suite == "launch" || o->suite == "alloc")
      return run_host_costs(o->suite, *o, *host_samples, o->format == "json");
    return run_bench(*o);
  };
}

}  // namespace gsq::cli
