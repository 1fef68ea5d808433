// `gpusqueeze nccl analyze FILE...`: NCCL_DEBUG=INFO output, nccl-tests tables and PyTorch's ProcessGroupNCCL
// messages read on any machine: transports, versions, the environment NCCL saw, timeouts, network errors, bandwidth.
#include "cli/common.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "core/table.hpp"
#include "report/report.hpp"
#include "topo/flight_recorder.hpp"
#include "topo/nccl_logs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

namespace gsq::cli {

namespace {

struct NcclCliOptions {
  std::vector<std::string> files;
  bool json = false;
};

// Findings that only the ranks side by side can give: the same SeqNum in different collectives, a rank behind.
bool compares_ranks(const Finding& f) {
  return f.id == "nccl-collective-mismatch" || f.id == "nccl-lagging-rank";
}

// The files named, a folder standing for the files in it (a folder of per-rank logs or Flight Recorder dumps), in
// the order of the number in their names (rank_2 before rank_10), then by name.
std::vector<std::string> expand_folders(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const auto& p : paths) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      out.push_back(p);
      continue;
    }
    std::vector<std::pair<long long, std::string>> inside;
    for (const auto& e : fs::directory_iterator(p, ec)) {
      const std::string name = e.path().filename().string();
      if (!e.is_regular_file(ec) || name.empty() || name[0] == '.') continue;
      const auto digits = topo::last_number_in_name(name);
      inside.emplace_back(digits.empty() || digits.size() > 10 ? -1 : std::stoll(std::string(digits)),
                          e.path().string());
    }
    if (ec) throw_bad_input(fmt::format("{}: cannot list the folder ({})", p, ec.message()));
    if (inside.empty()) throw_bad_input(fmt::format("{}: the folder holds no files", p));
    std::sort(inside.begin(), inside.end());
    for (auto& [n, f] : inside) out.push_back(std::move(f));
  }
  return out;
}

// PyTorch's Flight Recorder dumps among the files: what was in flight on each rank, then the ranks compared.
Severity report_flight_recorder(const std::vector<topo::FrDump>& dumps, bool json, nlohmann::json& all) {
  const auto findings = topo::flight_recorder_findings(dumps);
  if (json) {
    if (dumps.size() == 1) {
      all.push_back(topo::to_json(dumps.front(), findings));
    } else {
      for (const auto& d : dumps) all.push_back(topo::to_json(d, {}));
      all.push_back({{"schema", topo::kFlightRecorderSchema},
                     {"origin", fmt::format("all {} Flight Recorder dumps, ranks compared", dumps.size())},
                     {"findings", findings}});
    }
    return worst(findings);
  }
  Table t{{"dump", "rank", "format", "groups", "entries", "in flight"}, {}};
  for (const auto& d : dumps) {
    t.rows.push_back({d.origin, d.rank < 0 ? "?" : std::to_string(d.rank),
                      d.version + (d.comm_lib_version.empty() ? "" : ", NCCL " + d.comm_lib_version),
                      std::to_string(d.groups.size()), std::to_string(d.entries.size()),
                      std::to_string(d.in_flight())});
  }
  std::cout << fmt::format("# PyTorch Flight Recorder: {} dump{}\n\n{}\n{}\n", dumps.size(),
                           dumps.size() == 1 ? "" : "s", t.markdown(), report::findings_table(findings).markdown());
  return worst(findings);
}

int run_nccl_analyze(const NcclCliOptions& o) {
  Severity worst_seen = Severity::pass;
  nlohmann::json all = nlohmann::json::array();
  // Several files are usually one job's ranks (a log per rank from Slurm, torchrun --log-dir, Kubernetes pods): each is
  // read alone, and the ranks' timeouts and progress of all of them are then compared side by side.
  topo::NcclLog job;
  std::vector<Finding> per_file;
  std::vector<topo::FrDump> dumps;
  size_t logs = 0;
  const auto files = expand_folders(o.files);
  std::vector<std::string> unread;  // of several files, those with nothing to read (a quiet rank's log)
  for (const auto& f : files) {
    const std::string text = read_text_file(f);
    if (topo::looks_like_flight_recorder(text)) {
      dumps.push_back(topo::parse_flight_recorder(text, f));
      continue;
    }
    topo::NcclLog log;
    try {
      log = topo::parse_nccl_log(text, f);
    } catch (const Error& e) {
      // One rank's log of a job often holds nothing NCCL printed (the rank that hung says nothing): the others are
      // still read. Alone, the file is refused as before.
      if (files.size() == 1 || e.code() != ExitCode::bad_input) throw;
      unread.push_back(e.what());
      continue;
    }
    ++logs;
    const auto findings = topo::nccl_findings(log);
    per_file.insert(per_file.end(), findings.begin(), findings.end());
    job.timeouts.insert(job.timeouts.end(), log.timeouts.begin(), log.timeouts.end());
    for (const auto& [rank, p] : log.progress) job.progress.insert_or_assign(rank, p);
    worst_seen = std::max(worst_seen, worst(findings));
    if (o.json) {
      all.push_back(topo::to_json(log, findings));
      continue;
    }
    std::cout << fmt::format("# {}\n\n{} of {} lines read{}{}{}\n", f, log.recognized, log.lines,
                             log.nccl_version.empty() ? "" : "; NCCL " + log.nccl_version,
                             log.test.empty() ? "" : "; nccl-tests " + log.test,
                             log.ranks_seen.empty() ? "" : fmt::format("; {} ranks named", log.ranks_seen.size()));
    if (!log.transports.empty()) {
      Table t{{"transport", "channel lines"}, {}};
      for (const auto& [k, n] : log.transports) t.rows.push_back({k, std::to_string(n)});
      std::cout << '\n' << t.markdown();
    }
    if (!log.errors.empty()) {
      Table t{{"error", "lines", "first (line)", "ranks"}, {}};
      for (const auto& e : log.errors) {
        std::string ranks;
        for (int r : e.ranks) ranks += (ranks.empty() ? "" : " ") + std::to_string(r);
        t.rows.push_back({e.id, std::to_string(e.count), fmt::format("{} ({})", e.example.substr(0, 140), e.first_line),
                          ranks.empty() ? "-" : ranks});
      }
      std::cout << '\n' << t.markdown();
    }
    if (!log.warnings.empty()) {
      std::cout << fmt::format("\nNCCL WARN lines ({}, the first {}):\n", log.warn_lines, log.warnings.size());
      for (const auto& w : log.warnings) std::cout << "  " << w << '\n';
    }
    if (!log.timeouts.empty() || !log.progress.empty()) {
      Table t{
          {"rank", "collective", "SeqNum", "NumelIn", "timeout (ms)", "ran (ms)", "last enqueued", "last completed"},
          {}};
      auto num = [](int64_t v) { return v < 0 ? std::string("-") : std::to_string(v); };
      for (const auto& x : log.timeouts)
        t.rows.push_back({num(x.rank), x.op, num(x.seq), num(x.numel), num(x.timeout_ms), num(x.ran_ms),
                          num(x.last_enqueued), num(x.last_completed)});
      for (const auto& [r, p] : log.progress)
        if (std::none_of(log.timeouts.begin(), log.timeouts.end(), [r = r](const auto& x) { return x.rank == r; }))
          t.rows.push_back({num(r), "-", "-", "-", "-", "-", num(p.last_enqueued), num(p.last_completed)});
      std::cout << '\n' << t.markdown();
    }
    if (!log.rows.empty()) {
      Table t{{"size (B)", "type", "out-of-place busbw GB/s", "in-place busbw GB/s", "#wrong"}, {}};
      for (const auto& r : log.rows)
        t.rows.push_back({std::to_string(r.bytes), r.type, fmt::format("{:.2f}", r.busbw[0]),
                          fmt::format("{:.2f}", r.busbw[1]),
                          fmt::format("{} / {}", r.wrong[0] < 0 ? std::string("N/A") : std::to_string(r.wrong[0]),
                                      r.wrong[1] < 0 ? std::string("N/A") : std::to_string(r.wrong[1]))});
      std::cout << '\n' << t.markdown();
      const auto peak = std::max_element(log.rows.begin(), log.rows.end(), [](const auto& a, const auto& b) {
        return std::max(a.busbw[0], a.busbw[1]) < std::max(b.busbw[0], b.busbw[1]);
      });
      std::cout << fmt::format("peak busbw {:.2f} GB/s at {} B (busbw: nccl-tests' flat-algorithm equivalent)\n",
                               std::max(peak->busbw[0], peak->busbw[1]), peak->bytes);
    }
    if (!findings.empty()) std::cout << '\n' << report::findings_table(findings).markdown();
    std::cout << '\n';
  }
  if (logs > 1) {  // only what no single file said
    job.origin = fmt::format("all {} files, ranks compared", logs);
    auto findings = topo::nccl_findings(job);
    std::erase_if(findings, [&](const Finding& x) {
      return !compares_ranks(x) || std::any_of(per_file.begin(), per_file.end(),
                                               [&](const Finding& y) { return y.id == x.id && y.title == x.title; });
    });
    if (!findings.empty()) {
      worst_seen = std::max(worst_seen, worst(findings));
      if (o.json)
        all.push_back(topo::to_json(job, findings));
      else
        std::cout << fmt::format("# {}\n\n{}\n", job.origin, report::findings_table(findings).markdown());
    }
  }
  if (!dumps.empty()) worst_seen = std::max(worst_seen, report_flight_recorder(dumps, o.json, all));
  if (logs == 0 && dumps.empty())
    throw_bad_input(
        fmt::format("none of the {} files holds an NCCL, nccl-tests or PyTorch distributed line", files.size()));
  for (const auto& why : unread) {
    if (o.json)
      all.push_back(
          {{"schema", topo::kNcclLogSchema}, {"error", why}, {"lines_read", 0}, {"findings", nlohmann::json::array()}});
    else
      std::cerr << "gpusqueeze: " << why << " (left out; the other files were read)\n";
  }
  if (o.json) std::cout << (all.size() == 1 ? all[0] : all).dump(2) << '\n';
  return worst_seen == Severity::fail ? static_cast<int>(ExitCode::findings) : 0;
}

}  // namespace

Action register_nccl(CLI::App& app) {
  auto o = std::make_shared<NcclCliOptions>();
  auto* nccl = app.add_subcommand("nccl", "NCCL: read its logs, nccl-tests results and PyTorch's watchdog messages");
  nccl->require_subcommand(1);
  auto* cmd = nccl->add_subcommand("analyze", "Transports, environment, timeouts, network errors and bandwidth");
  cmd->footer(
      "Reads NCCL_DEBUG=INFO output, nccl-tests output (every layout since 2.0) and PyTorch distributed logs as "
      "pasted:\n"
      "launcher prefixes (Open MPI --tag-output, Slurm --label, torchrun, Ray, vLLM, kubectl, timestamps) are taken\n"
      "off and wrapped lines rejoined. It names NCCL and PyTorch errors from a catalogue (IB completions, sockets,\n"
      "bootstrap mismatches, system/internal/invalid-usage/remote errors and their '-> N' chains, shm, CUDA, OOM),\n"
      "the watchdog's timeouts and progress rank by rank (a rank behind the others, different collectives at one\n"
      "SeqNum), desync reports, and judges nccl-tests against the bus bandwidth the hardware gives, with cliffs,\n"
      "wrong results and sweeps that stopped. Give every rank's log at once to compare ranks: each file is read\n"
      "alone, then all together, and what only the ranks side by side show (different collectives at one SeqNum, a\n"
      "rank behind the others) is reported for the job (in JSON, a last element \"all N files, ranks compared\").\n"
      "What is true, against common advice: NCCL has no collective timeout (NCCL_SOCKET_TIMEOUT does not exist;\n"
      "the timeout that fires is PyTorch's); NCCL_TREE_THRESHOLD was removed in 2.5; NCCL_MIN_NCHANNELS is\n"
      "NCCL_MIN_CTAS since 2.17; NCCL_IB_DISABLE=1 is a debugging switch that puts IB/RoCE clusters on TCP.\n"
      "PyTorch's Flight Recorder dumps (TORCH_NCCL_TRACE_BUFFER_SIZE=2000: one file per rank, written when the\n"
      "watchdog times out, pickle or JSON; read as data, nothing executed) are compared group by group: the rank that\n"
      "never issued the collective the others wait in, different collectives at one sequence number, or a collective\n"
      "every rank issued that never completed. A folder stands for the files in it.\n"
      "Exit codes: 0 nothing fatal, 1 the log records a failure (an error, a timeout, socket fallback between nodes,\n"
      "wrong results, a sweep that stopped, a rank that never joined), 2 unreadable.\n"
      "Examples:\n"
      "  NCCL_DEBUG=INFO torchrun ... 2>&1 | tee run.log;  gpusqueeze nccl analyze run.log\n"
      "  gpusqueeze nccl analyze all_reduce_perf.txt --json\n"
      "  gpusqueeze nccl analyze /tmp/nccl_trace_rank_*     (or the folder the dumps were copied to)");
  cmd->add_option("files", o->files, "Logs, nccl-tests output, Flight Recorder dumps, or folders of them")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_flag("--json", o->json, "Print gpusqueeze.nccl-log/2 JSON (an array for several files)");
  return [o, cmd] {
    if (!cmd->parsed()) return static_cast<int>(ExitCode::bad_input);
    return run_nccl_analyze(*o);
  };
}

}  // namespace gsq::cli
