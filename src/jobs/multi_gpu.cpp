// `probe p2p`, `probe nccl` and the NCCL env sweep (see multi_gpu.hpp).
#include "jobs/multi_gpu.hpp"

#include "core/error.hpp"
#include "core/process.hpp"
#include "topo/mpi.hpp"
#include "topo/multigpu_probe.hpp"
#include "topo/nccl_capture.hpp"
#include "topo/nccl_sweep.hpp"

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

namespace gsq::jobs {

topo::P2pResult run_p2p(const MultiGpuOptions& m, const Progress& note) {
  topo::P2pOptions o;
  o.bytes = static_cast<uint64_t>(m.p2p_mib) << 20;
  note("probe p2p: every ordered pair of GPUs: copy engine one way and both ways, SM copy kernel, latencies…");
  return topo::probe_p2p(o);
}

namespace {

// This program, to run again as a child; an internal error when /proc/self/exe does not say where it is.
std::filesystem::path program_for(const char* what) {
  const auto exe = this_program();
  if (!exe) throw Error(ExitCode::internal, fmt::format("{}: cannot find this program (/proc/self/exe)", what));
  return *exe;
}

// `PREFIX… gpusqueeze probe nccl --format json` with the sweep of `o` (sizes, warm-up, iterations), `--ops` when given,
// then `extra`: a child probe whose document this process reads. PREFIX: `env NAME=VALUE…`, or nothing.
std::vector<std::string> child_probe(std::vector<std::string> prefix, const topo::NcclOptions& o,
                                     const std::string& ops, const std::vector<std::string>& extra) {
  auto argv = std::move(prefix);
  argv.insert(argv.end(), {program_for("probe nccl").string(), "probe", "nccl", "--format", "json", "--min-bytes",
                           std::to_string(o.min_bytes), "--max-bytes", std::to_string(o.max_bytes), "--nccl-warmup",
                           std::to_string(o.warmup), "--nccl-iters", std::to_string(o.iters)});
  if (!ops.empty()) argv.insert(argv.end(), {"--ops", ops});
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

// A child's JSON document: what follows NCCL's own lines when the user's NCCL_DEBUG sends them to standard output
// (the document is printed last, from a line that is "{").
std::string json_part(const std::string& out) {
  if (out.starts_with("{")) return out;
  const auto at = out.find("\n{\n");
  return at == std::string::npos ? out : out.substr(at + 1);
}

// A child's last stderr line: its own message, what says why it failed.
std::string last_line(std::string err) {
  while (!err.empty() && err.back() == '\n') err.pop_back();
  const auto nl = err.rfind('\n');
  return nl == std::string::npos ? err : err.substr(nl + 1);
}

topo::NcclOptions nccl_options(const MultiGpuOptions& m) {
  topo::NcclOptions o = m.nccl;
  if (!m.ops.empty()) {
    o.collectives.clear();
    std::stringstream in(m.ops);
    for (std::string c; std::getline(in, c, ',');) o.collectives.push_back(c);
  }
  return o;
}

// A launcher's rank, size and local rank (mpirun, srun, torchrun), or nothing.
std::optional<std::array<int, 3>> launcher_rank() {
  static const std::array<std::array<const char*, 3>, 4> kNames{{
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
      {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
      {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
      {"RANK", "WORLD_SIZE", "LOCAL_RANK"},
  }};
  for (const auto& n : kNames) {
    const char *r = std::getenv(n[0]), *s = std::getenv(n[1]), *l = std::getenv(n[2]);
    if (r && s && *r && *s)
      return std::array<int, 3>{std::atoi(r), std::atoi(s), l && *l ? std::atoi(l) : std::atoi(r)};
  }
  return std::nullopt;
}

// Rank 0 writes the unique id to a file every rank can read (a shared file system across nodes); the others wait
// for it, up to two minutes.
std::string exchange_id(const topo::NcclLibrary& lib, const std::string& file, int rank) {
  namespace fs = std::filesystem;
  if (rank == 0) {
    const std::string id = topo::nccl_unique_id(lib);
    const std::string tmp = file + ".tmp";
    std::ofstream(tmp) << id << '\n';
    std::error_code ec;
    fs::rename(tmp, file, ec);
    if (ec) throw_bad_input(fmt::format("--nccl-id-file {}: cannot write it: {}", file, ec.message()));
    return id;
  }
  for (int waited = 0; waited < 1200; ++waited) {
    std::ifstream in(file);
    std::string id;
    if (in >> id && id.size() == 256) return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw_bad_input(
      fmt::format("--nccl-id-file {}: rank 0 wrote no id in 120 s (is the file on a file system every "
                  "rank sees?)",
                  file));
}

// --procs N: this machine's GPUs as N processes, each a `probe nccl --rank` child holding one GPU.
topo::NcclRun run_nccl_procs(const topo::NcclLibrary& lib, const MultiGpuOptions& m,
                             const topo::NcclInfoCapture& capture, const Progress& note) {
  const std::string id = topo::nccl_unique_id(lib);
  note(fmt::format("probe nccl: {} processes, one GPU each, bootstrap id from ncclGetUniqueId…", m.procs));
  std::vector<ProcessOutput> out(static_cast<size_t>(m.procs));
  std::vector<std::thread> threads;
  for (int r = 0; r < m.procs; ++r) {
    const auto argv = child_probe({}, m.nccl, m.ops,
                                  {"--rank", std::to_string(r), "--nranks", std::to_string(m.procs), "--nccl-id", id,
                                   "--rank-device", std::to_string(r)});
    threads.emplace_back([&out, argv, r] { out[static_cast<size_t>(r)] = run_process(argv); });
  }
  for (auto& t : threads) t.join();
  std::string failed;
  for (int r = 0; r < m.procs; ++r) {
    const auto& o = out[static_cast<size_t>(r)];
    if (o.exit_code == 0 || o.exit_code == static_cast<int>(ExitCode::findings)) continue;
    failed += fmt::format("\n  rank {}: exit {}: {}", r, o.exit_code, last_line(o.err));
  }
  if (!failed.empty()) {  // the first failing rank's code where it is one of ours (2 bad input, 3 no GPU), else 70
    ExitCode code = ExitCode::internal;
    for (const auto& o : out)
      if (o.exit_code == static_cast<int>(ExitCode::bad_input) || o.exit_code == static_cast<int>(ExitCode::no_gpu)) {
        code = static_cast<ExitCode>(o.exit_code);
        break;
      }
    throw Error(code, fmt::format("probe nccl --procs {}: ranks failed:{}", m.procs, failed));
  }
  try {
    auto run = topo::nccl_run_from_json(nlohmann::json::parse(json_part(out[0].out)));
    if (const auto log = capture.read()) topo::annotate(run, *log);
    return run;
  } catch (const nlohmann::json::exception& e) {
    throw Error(ExitCode::internal, fmt::format("probe nccl --procs: rank 0's output did not read: {}", e.what()));
  }
}

// NCCL's algorithm, protocol and channels per size: the same sweep once more in a child whose NCCL prints its TUNING
// lines (a line per call: kept out of the timed run), one untimed call per size.
void tuning_pass(const topo::NcclInfoCapture& capture, const MultiGpuOptions& m, topo::NcclRun& r,
                 const Progress& note) {
  note("probe nccl: one call per size again with NCCL's TUNING lines on, for the algorithm it chose…");
  auto once = m.nccl;
  once.warmup = 0;
  once.iters = 1;
  if (const auto out = run_process(child_probe(capture.tuning_env(), once, m.ops, {"--no-ring"})); out.exit_code != 0)
    r.notes.push_back(
        fmt::format("NCCL's choice per size not read: the pass with its TUNING lines on failed "
                    "(exit {}: {})",
                    out.exit_code, last_line(out.err)));
}

// Beside each collective NCCL ran on NVLS or Tree at large sizes, the same sizes under NCCL_ALGO=Ring in a child
// process (NCCL reads its settings once per process): rows "COLLECTIVE (NCCL_ALGO=Ring)", the figure to hold against
// a link's rate.
void add_ring_runs(topo::NcclRun& r, const MultiGpuOptions& m, const Progress& note) {
  for (const auto& coll : topo::collectives_off_ring(r)) {
    auto large = m.nccl;
    large.min_bytes = std::max<uint64_t>(m.nccl.max_bytes / 4, 8);
    note(fmt::format("probe nccl: {} ran on NVLS/Tree at large sizes; the same sizes under NCCL_ALGO=Ring…", coll));
    const auto out = run_process(child_probe({"env", "NCCL_ALGO=Ring"}, large, coll, {"--no-ring"}));
    try {
      if (out.exit_code != 0) throw_bad_input(fmt::format("exit {}: {}", out.exit_code, last_line(out.err)));
      for (auto row : topo::nccl_run_from_json(nlohmann::json::parse(json_part(out.out))).rows) {
        row.collective += " (NCCL_ALGO=Ring)";
        r.rows.push_back(std::move(row));
      }
      r.notes.push_back(fmt::format(
          "{} (NCCL_ALGO=Ring): the large sizes again on Ring, in a child process: against a link's rate, hold "
          "these rows' busbw",
          coll));
    } catch (const nlohmann::json::exception& e) {
      r.notes.push_back(fmt::format("{}: the Ring run's output did not read: {}", coll, e.what()));
    } catch (const Error& e) {
      r.notes.push_back(fmt::format("{}: the Ring run failed: {}", coll, e.what()));
    }
  }
}

// --mpi: this process is one rank of an mpirun job; rank 0 makes the id and MPI_Bcast hands it to the others. A rank
// that fails ends the whole job (MPI_Abort with our exit code), or the others would wait in NCCL's bootstrap.
std::optional<topo::NcclRun> run_nccl_mpi(const topo::NcclLibrary& lib, const MultiGpuOptions& m,
                                          const topo::NcclInfoCapture& capture, const Progress& note) {
  if (m.procs > 0 || !m.id_file.empty() || !m.nccl_id.empty())
    throw_bad_input("--mpi takes rank, size and id from MPI: not with --procs, --nccl-id-file or --nccl-id");
  topo::MpiSession mpi;
  try {
    const std::string id = mpi.broadcast(mpi.rank() == 0 ? topo::nccl_unique_id(lib) : std::string(), 256);
    const topo::NcclRank rank{mpi.rank(), mpi.size(), m.device < 0 ? mpi.local_rank() : m.device, id};
    note(fmt::format("probe nccl --mpi: rank {} of {} (node-local {}), GPU {}, bootstrap id {}…", rank.rank,
                     rank.nranks, mpi.local_rank(), rank.device, id.substr(0, 16)));
    mpi.barrier();  // every rank has said who it is before any can fail and end the job
    auto r = topo::probe_nccl(lib, nccl_options(m), rank);
    if (const auto log = capture.read()) topo::annotate(r, *log);
    if (rank.rank != 0) return std::nullopt;  // rank 0 prints the job's table, as nccl-tests does
    return r;
  } catch (const Error& e) {
    note(fmt::format("rank {} of {}: {}", mpi.rank(), mpi.size(), e.what()));
    capture.discard();  // MPI_Abort skips the destructors
    mpi.abort(static_cast<int>(e.code()));
  }
}

}  // namespace

NcclJob run_nccl(const MultiGpuOptions& m, const Progress& note) {
  // NCCL's own lines about this run (algorithm, protocol, transports), unless NCCL_DEBUG is the user's: set before
  // NCCL reads its settings, inherited by --procs children.
  std::optional<topo::NcclInfoCapture> capture;
  if (!m.library_only) capture.emplace();
  NcclJob job{topo::open_nccl(), std::nullopt};  // exit 3 with every place looked in
  const auto& lib = job.library;
  note(fmt::format("NCCL {} from {} ({})", lib.version_text(), lib.path, lib.origin));
  if (m.library_only) return job;
  if (m.mpi) {
    job.run = run_nccl_mpi(lib, m, *capture, note);
    return job;
  }
  if (m.procs > 0) {
    job.run = run_nccl_procs(lib, m, *capture, note);
    return job;
  }
  std::optional<topo::NcclRank> rank;
  if (!m.nccl_id.empty()) {  // a child of --procs, or started by hand with the id
    rank = topo::NcclRank{m.rank, m.nranks, m.device < 0 ? m.rank : m.device, m.nccl_id};
  } else if (!m.id_file.empty()) {  // under a launcher
    const auto l = launcher_rank();
    if (!l)
      throw_bad_input(
          "--nccl-id-file: no launcher rank in the environment (OMPI_COMM_WORLD_*, SLURM_PROCID, "
          "PMI_RANK or torchrun's RANK/WORLD_SIZE)");
    rank = topo::NcclRank{(*l)[0], (*l)[1], m.device < 0 ? (*l)[2] : m.device, exchange_id(lib, m.id_file, (*l)[0])};
  }
  auto r = topo::probe_nccl(lib, nccl_options(m), rank);
  if (!rank && capture->active()) tuning_pass(*capture, m, r, note);
  if (const auto log = capture->read()) topo::annotate(r, *log);
  if (!rank && !m.no_ring) add_ring_runs(r, m, note);
  if (rank && rank->rank != 0 && m.nccl_id.empty()) {  // under a launcher only rank 0 prints the table
    note(fmt::format("rank {} of {} done", rank->rank, rank->nranks));
    return job;
  }
  job.run = std::move(r);
  return job;
}

NcclSweep run_nccl_sweep(const MultiGpuOptions& m, const Progress& note) {
  const auto settings = m.env_sets.empty() ? topo::default_sweep() : topo::parse_sweep(m.env_sets);
  std::string op = m.ops.empty() ? "all_reduce" : m.ops;
  if (op.find(',') != std::string::npos)
    throw_bad_input(fmt::format("--sweep-env compares one collective; --ops {} names several", op));
  std::vector<topo::SweepRow> rows(settings.size());
  for (size_t i = 0; i < settings.size(); ++i) rows[i].setting = settings[i].name;
  bool no_baseline = false;
  for (int t = 0; t < m.trials && !no_baseline; ++t)
    for (size_t i = 0; i < settings.size() && !no_baseline; ++i) {
      if (!rows[i].error.empty()) continue;  // it failed once: it fails again
      std::vector<std::string> prefix{"env"};
      for (const auto& [k, v] : settings[i].env) prefix.push_back(k + "=" + v);
      const auto argv = child_probe(std::move(prefix), m.nccl, op, {"--no-ring"});
      note(fmt::format("probe nccl --sweep-env: {} {}, trial {} of {}…", op, settings[i].name, t + 1, m.trials));
      const auto out = run_process(argv);
      try {
        if (out.exit_code != 0) {
          throw_bad_input(fmt::format("exit {}: {}", out.exit_code, last_line(out.err)));
        }
        const auto doc = nlohmann::json::parse(json_part(out.out));
        if (i == 0 && doc.is_object() && doc.value("ranks", 2) < 2)
          throw Error(ExitCode::no_gpu,
                      "--sweep-env needs two or more GPUs: on one, every collective is a local copy and busbw is 0 "
                      "under every setting (nothing to compare)");
        rows[i].busbw.push_back(topo::large_size_busbw(doc, op));
      } catch (const nlohmann::json::exception& e) {
        rows[i].error = fmt::format("unreadable output: {}", e.what());
      } catch (const Error& e) {
        rows[i].error = e.what();
      }
      no_baseline = i == 0 && !rows[0].error.empty();  // nothing to compare the rest with
    }
  return {op, topo::judge_sweep(std::move(rows))};
}

}  // namespace gsq::jobs
