// NCCL logs, nccl-tests tables and watchdog messages (see nccl_logs.hpp).
#include "topo/nccl_logs.hpp"

#include "core/nccl_env.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <sstream>

namespace gsq::topo {

namespace {

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  (void)std::strtod(s.c_str(), &end);
  return *end == '\0';
}

// A result row: size count type redop root, then time algbw busbw #wrong for out-of-place and in-place.
bool read_row(const std::string& line, NcclLog& log) {
  const auto w = words(line);
  if (w.size() < 13 || !is_number(w[0]) || !is_number(w[1])) return false;
  NcclTestRow r;
  r.bytes = std::strtoull(w[0].c_str(), nullptr, 10);
  r.count = std::strtoull(w[1].c_str(), nullptr, 10);
  r.type = w[2];
  r.redop = w[3];
  const size_t base = w.size() - 8;
  for (int k = 0; k < 2; ++k) {
    const auto& t = w[base + 4 * k];
    if (!is_number(t) || !is_number(w[base + 4 * k + 1]) || !is_number(w[base + 4 * k + 2])) return false;
    r.time_us[k] = std::strtod(t.c_str(), nullptr);
    r.algbw[k] = std::strtod(w[base + 4 * k + 1].c_str(), nullptr);
    r.busbw[k] = std::strtod(w[base + 4 * k + 2].c_str(), nullptr);
    const auto& wrong = w[base + 4 * k + 3];
    r.wrong[k] = is_number(wrong) ? std::strtoll(wrong.c_str(), nullptr, 10) : -1;
  }
  log.rows.push_back(r);
  return true;
}

bool read_line(const std::string& line, NcclLog& log) {
  static const std::regex version(R"(NCCL version ([0-9.]+\S*))");
  static const std::regex via(R"(via (NET/[A-Za-z]+(?:/\d+)?(?:/GDRDMA)?|P2P/[A-Za-z ]+|SHM\S*|NVLS))");
  static const std::regex env(R"((NCCL_[A-Z0-9_]+) set by environment to (\S+))");
  static const std::regex xenv(R"(-x\s+(NCCL_[A-Z0-9_]+)=(\S+))");
  static const std::regex completion(R"(Got completion from peer .* with status=(\d+))");
  static const std::regex timeout(
      R"(Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w+), NumelIn=(\d+).*Timeout\(ms\)=(\d+)\) ran for (\d+))");
  static const std::regex works(R"(last enqueued NCCL work: (-?\d+), last completed NCCL work: (-?\d+))");
  static const std::regex tuning(
      R"((\w+): (\d+) Bytes -> Algo (\w+) proto (\w+) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\})");
  std::smatch m;
  bool hit = false;
  if (line.starts_with("# nccl-tests version ")) log.tests_version = words(line).at(3), hit = true;
  if (line.starts_with("# Collective test starting: ")) log.test = line.substr(28), hit = true;
  if (line.starts_with("#  Rank ") && line.find(" device ") != std::string::npos)
    log.devices.push_back(line.substr(3)), hit = true;
  if (line.starts_with("# Avg bus bandwidth")) {
    const size_t c = line.find(':');
    if (c != std::string::npos) log.avg_busbw = std::strtod(line.c_str() + c + 1, nullptr);
    hit = true;
  }
  if (!line.starts_with("#") && read_row(line, log)) hit = true;
  if (log.nccl_version.empty() && line.find("NCCL version") != std::string::npos && std::regex_search(line, m, version))
    log.nccl_version = m[1], hit = true;
  if (line.find(" via ") != std::string::npos && std::regex_search(line, m, via)) {
    std::string t = m[1];
    if (t.starts_with("NET/")) {  // NET/IB/3/GDRDMA → NET/IB/GDRDMA: the device index is not a kind
      static const std::regex dev(R"(/\d+)");
      t = std::regex_replace(t, dev, "");
    }
    while (!t.empty() && t.back() == ' ') t.pop_back();
    ++log.transports[t];
    hit = true;
  }
  if (line.find("NET/Socket : Using") != std::string::npos) log.socket_fallback = true, hit = true;
  if (line.find("Failed to open libibverbs") != std::string::npos) log.ibverbs_missing = true, hit = true;
  if (line.find("NVLS") != std::string::npos && line.find("not available") == std::string::npos)
    log.nvls = true, hit = true;
  if (line.find(" Bytes -> Algo ") != std::string::npos && std::regex_search(line, m, tuning)) {
    auto& t = log.tuning[{m[1], std::stoull(m[2])}];
    const int channels = std::stoi(m[6]) - std::stoi(m[5]) + 1;
    if (t.calls == 0) {
      t.algo = m[3];
      t.proto = m[4];
      t.channels = channels;
    } else if (t.algo != m[3] || t.proto != m[4] || t.channels != channels) {
      t.varied = true;
    }
    ++t.calls;
    hit = true;
  }
  if (line.find("set by environment") != std::string::npos && std::regex_search(line, m, env)) {
    std::string value = m[2];
    if (value.ends_with(".")) value.pop_back();  // "set by environment to 1."
    log.env[m[1]] = value;
    hit = true;
  }
  // Cheap substring tests first: the regular expressions run only on lines that can match.
  if (line.find("-x ") != std::string::npos)
    for (auto it = std::sregex_iterator(line.begin(), line.end(), xenv); it != std::sregex_iterator(); ++it)
      log.env[(*it)[1]] = (*it)[2], hit = true;
  if (line.find("Got completion") != std::string::npos && std::regex_search(line, m, completion))
    log.ib_completion_status.push_back(std::stoi(m[1])), hit = true;
  if (line.find("NCCL WARN") != std::string::npos) {
    if (log.warnings.size() < 8) log.warnings.push_back(line.substr(line.find("NCCL WARN") + 10, 200));
    hit = true;
  }
  if (line.find("Watchdog caught") != std::string::npos && std::regex_search(line, m, timeout)) {
    NcclLog::Timeout t;
    t.seq = std::stoll(m[1]);
    t.op = m[2];
    t.numel = std::stoll(m[3]);
    t.timeout_ms = std::stoll(m[4]);
    t.ran_ms = std::stoll(m[5]);
    // PyTorch repeats the message when the watchdog thread ends: one timeout per collective.
    const bool seen = std::any_of(log.timeouts.begin(), log.timeouts.end(),
                                  [&](const NcclLog::Timeout& x) { return x.seq == t.seq && x.op == t.op; });
    if (!seen) log.timeouts.push_back(t);
    hit = true;
  }
  if (!log.timeouts.empty() && line.find("last enqueued") != std::string::npos && std::regex_search(line, m, works)) {
    log.timeouts.back().last_enqueued = std::stoll(m[1]);
    log.timeouts.back().last_completed = std::stoll(m[2]);
    hit = true;
  }
  return hit || line.find("NCCL INFO") != std::string::npos || line.find("ProcessGroupNCCL") != std::string::npos;
}

Finding make(const char* id, Severity sev, std::string title, std::vector<Evidence> ev, std::string fix) {
  return make_finding(id, sev, std::move(title), std::move(ev), std::move(fix),
                      "NCCL's env.rst and troubleshooting guides; nccl-tests' PERFORMANCE.md; PyTorch ProcessGroupNCCL",
                      5, "NCCL");
}

}  // namespace

NcclLog parse_nccl_log(const std::string& text, const std::string& origin) {
  NcclLog log;
  log.origin = origin;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    ++log.lines;
    // A line longer than a screenful is not one NCCL wrote; reading it costs regex time for nothing.
    if (line.size() > 4096) continue;
    try {
      if (read_line(line, log)) ++log.recognized;
    } catch (const std::exception&) {  // stoi/stoll on digits out of range
    }
  }
  if (log.recognized == 0)
    throw_bad_input(origin +
                    ": no NCCL, nccl-tests or ProcessGroupNCCL line in the file (NCCL_DEBUG=INFO output, "
                    "an *_perf table or a PyTorch log are read)");
  return log;
}

std::vector<Finding> nccl_findings(const NcclLog& log) {
  std::vector<Finding> out;
  for (const auto& t : log.timeouts)
    out.push_back(make(
        "nccl-watchdog-timeout", Severity::fail,
        fmt::format("PyTorch's watchdog timed out {} #{} after {:.0f} s (last completed #{})", t.op, t.seq,
                    static_cast<double>(t.ran_ms) / 1e3, t.last_completed),
        {{"op", t.op},
         {"seq", std::to_string(t.seq)},
         {"timeout_ms", std::to_string(t.timeout_ms)},
         {"numel", std::to_string(t.numel)},
         {"last_enqueued", std::to_string(t.last_enqueued)},
         {"last_completed", std::to_string(t.last_completed)}},
        "NCCL has no collective timeout of its own (NCCL_SOCKET_TIMEOUT does not exist): this is PyTorch's. Find the "
        "rank that never entered the collective — TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 "
        "dumps each rank's last collectives; then test the intra-node path with NCCL_P2P_DISABLE=1 (if that works, "
        "P2P is the culprit: ACS, IOMMU, driver) and the network with NCCL_DEBUG=INFO"));
  const auto s12 = std::count(log.ib_completion_status.begin(), log.ib_completion_status.end(), 12);
  if (!log.ib_completion_status.empty())
    out.push_back(make(
        "nccl-ib-completion-error", Severity::fail,
        fmt::format("InfiniBand/RoCE completions failed {} times ({} with status 12, retry counter "
                    "exceeded)",
                    log.ib_completion_status.size(), s12),
        {{"completions_failed", std::to_string(log.ib_completion_status.size())}, {"status_12", std::to_string(s12)}},
        "Status 12 is RETRY_EXC_ERR: the peer was unreachable over RDMA within NCCL_IB_TIMEOUT × "
        "NCCL_IB_RETRY_CNT although TCP works. Check the links and ports (ibstatus, mlxlink, rdma "
        "statistic: local_ack_timeout_err, packet_seq_err), the RoCE GID index (NCCL_IB_GID_INDEX) and "
        "PFC/ECN on the switches"));
  if (log.socket_fallback || log.ibverbs_missing)
    out.push_back(make("nccl-socket-fallback", Severity::fail,
                       log.ibverbs_missing ? "libibverbs could not be loaded: NCCL fell back to TCP sockets"
                                           : "NCCL carries inter-node traffic over TCP sockets",
                       {{"ibverbs_missing", log.ibverbs_missing ? "yes" : "no"},
                        {"socket_in_use", log.socket_fallback ? "yes" : "no"}},
                       "On an InfiniBand/RoCE cluster install rdma-core (libibverbs) in the container and expose "
                       "/dev/infiniband; check that NCCL_IB_DISABLE is not set; NCCL_DEBUG=INFO should then say NET/IB "
                       "and the channels …/GDRDMA"));
  // Environment: invented, removed, deprecated, PyTorch's, debug-only (core/nccl_env).
  for (const auto& [name, value] : log.env) {
    const auto it = nccl_env_notes().find(name);
    if (it == nccl_env_notes().end()) continue;
    const bool debug_off = (name == "NCCL_IB_DISABLE" || name == "NCCL_P2P_DISABLE") && value == "0";
    if (debug_off) continue;
    out.push_back(make("nccl-env", name == "NCCL_IB_DISABLE" ? Severity::warn : Severity::info,
                       fmt::format("{}={} {}", name, value, it->second.truth), {{name, value}}, it->second.instead));
  }
  // nccl-tests: results checked wrong, and the peak.
  int64_t wrong = 0;
  for (const auto& r : log.rows) wrong += std::max<int64_t>(0, r.wrong[0]) + std::max<int64_t>(0, r.wrong[1]);
  if (wrong > 0)
    out.push_back(make("nccl-tests-wrong", Severity::fail,
                       fmt::format("nccl-tests counted {} wrong elements: the collective corrupts data", wrong),
                       {{"wrong", std::to_string(wrong)}},
                       "Data corruption, not performance: check GPU memory ECC (doctor), the P2P path "
                       "(NCCL_P2P_DISABLE=1 as a test), and NCCL/driver versions"));
  return out;
}

nlohmann::json to_json(const NcclLog& log, const std::vector<Finding>& findings) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : log.rows)
    rows.push_back(
        {{"bytes", r.bytes},
         {"count", r.count},
         {"type", r.type},
         {"redop", r.redop},
         {"out_of_place",
          {{"time_us", r.time_us[0]}, {"algbw_gbps", r.algbw[0]}, {"busbw_gbps", r.busbw[0]}, {"wrong", r.wrong[0]}}},
         {"in_place",
          {{"time_us", r.time_us[1]}, {"algbw_gbps", r.algbw[1]}, {"busbw_gbps", r.busbw[1]}, {"wrong", r.wrong[1]}}}});
  nlohmann::json tuning = nlohmann::json::array();
  for (const auto& [k, t] : log.tuning)
    tuning.push_back({{"collective", k.first},
                      {"bytes", k.second},
                      {"algo", t.algo},
                      {"proto", t.proto},
                      {"channels", t.channels},
                      {"calls", t.calls},
                      {"varied", t.varied}});
  nlohmann::json timeouts = nlohmann::json::array();
  for (const auto& t : log.timeouts)
    timeouts.push_back({{"op", t.op},
                        {"seq", t.seq},
                        {"timeout_ms", t.timeout_ms},
                        {"ran_ms", t.ran_ms},
                        {"numel", t.numel},
                        {"last_enqueued", t.last_enqueued},
                        {"last_completed", t.last_completed}});
  return {{"schema", kNcclLogSchema},
          {"origin", log.origin},
          {"test", log.test},
          {"tests_version", log.tests_version},
          {"devices", log.devices},
          {"rows", rows},
          {"avg_busbw_gbps", log.avg_busbw ? nlohmann::json(*log.avg_busbw) : nlohmann::json(nullptr)},
          {"nccl_version", log.nccl_version},
          {"transports", log.transports},
          {"env", log.env},
          {"socket_fallback", log.socket_fallback},
          {"ibverbs_missing", log.ibverbs_missing},
          {"nvls", log.nvls},
          {"ib_completion_status", log.ib_completion_status},
          {"warnings", log.warnings},
          {"tuning", tuning},
          {"timeouts", timeouts},
          {"lines", log.lines},
          {"lines_read", log.recognized},
          {"findings", findings}};
}

}  // namespace gsq::topo
