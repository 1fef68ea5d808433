// NCCL's INFO lines captured around a probe (see nccl_capture.hpp).
#include "topo/nccl_capture.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

namespace gsq::topo {

namespace fs = std::filesystem;

NcclInfoCapture::NcclInfoCapture() {
  if (const char* d = std::getenv("NCCL_DEBUG"); d != nullptr && *d != '\0') return;
  std::error_code ec;
  fs::path dir = fs::temp_directory_path(ec) / fmt::format("gsq-nccl-{}", ::getpid());
  if (ec || !fs::create_directories(dir, ec) || ec) return;
  dir_ = dir;
  ::setenv("NCCL_DEBUG", "INFO", 1);
  ::setenv("NCCL_DEBUG_SUBSYS", "INIT,ENV", 1);  // printed at set-up only: nothing per collective call
  ::setenv("NCCL_DEBUG_FILE", (dir_ / "nccl.%h.%p").c_str(), 1);
}

NcclInfoCapture::~NcclInfoCapture() {
  discard();
}

void NcclInfoCapture::discard() const {
  if (dir_.empty()) return;
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::vector<std::string> NcclInfoCapture::tuning_env() const {
  return {"env", "NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=TUNING", "NCCL_DEBUG_FILE=" + (dir_ / "tuning.%h.%p").string()};
}

std::optional<NcclLog> NcclInfoCapture::read() const {
  if (dir_.empty()) return std::nullopt;
  std::string text;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec))
    if (e.is_regular_file(ec)) text += read_text_file(e.path());
  try {
    return parse_nccl_log(text, "NCCL's INFO lines");
  } catch (const Error&) {  // nothing NCCL's in them (it wrote nothing)
    return std::nullopt;
  }
}

namespace {

// Our collective names → NCCL's in its TUNING lines, and whether NCCL prints the bytes per rank.
const std::map<std::string, std::pair<const char*, bool>>& nccl_names() {
  static const std::map<std::string, std::pair<const char*, bool>> m{{"all_reduce", {"AllReduce", false}},
                                                                     {"all_gather", {"AllGather", true}},
                                                                     {"reduce_scatter", {"ReduceScatter", true}},
                                                                     {"broadcast", {"Broadcast", false}},
                                                                     {"reduce", {"Reduce", false}}};
  return m;
}

}  // namespace

void annotate(NcclRun& run, const NcclLog& log) {
  std::set<std::string> not_flat;
  for (auto& row : run.rows) {
    const auto name = nccl_names().find(row.collective);
    if (name == nccl_names().end()) continue;  // send/recv: no algorithm to choose
    const uint64_t bytes =
        name->second.second && run.ranks > 0 ? row.bytes / static_cast<uint64_t>(run.ranks) : row.bytes;
    const auto t = log.tuning.find({name->second.first, bytes});
    if (t == log.tuning.end()) continue;
    row.algo = t->second.algo;
    row.proto = t->second.proto;
    row.channels = t->second.channels;
    if (row.algo != "RING") not_flat.insert(row.collective + " on " + row.algo);
  }
  if (!log.nccl_version.empty()) run.notes.push_back("NCCL's own INFO lines say: version " + log.nccl_version);
  if (!log.transports.empty()) {
    std::string t;
    for (const auto& [k, n] : log.transports) t += fmt::format("{}{} ({} channel lines)", t.empty() ? "" : ", ", k, n);
    run.notes.push_back("transports NCCL set up: " + t);
  }
  if (run.ranks > 1) run.notes.push_back(log.nvls ? "NVLS (NVLink SHARP) in use" : "NVLS not in use");
  if (!not_flat.empty()) {
    std::string s;
    for (const auto& x : not_flat) s += (s.empty() ? "" : ", ") + x;
    run.notes.push_back(
        fmt::format("{}: busbw there is the flat-algorithm equivalent, not a link's rate (NVLS and Tree can exceed "
                    "it); against a link ceiling hold a Ring run: the rows marked (NCCL_ALGO=Ring) where the large "
                    "sizes ran so, else `gpusqueeze probe nccl --sweep-env --env NCCL_ALGO=Ring`",
                    s));
  }
  for (const auto& w : log.warnings) run.notes.push_back("NCCL WARN: " + w);
}

std::vector<std::string> collectives_off_ring(const NcclRun& run) {
  std::map<std::string, uint64_t> largest;
  for (const auto& r : run.rows) largest[r.collective] = std::max(largest[r.collective], r.bytes);
  std::vector<std::string> out;
  for (const auto& r : run.rows)
    if (!r.algo.empty() && r.algo != "RING" && r.bytes >= largest[r.collective] / 4 &&
        std::find(out.begin(), out.end(), r.collective) == out.end())
      out.push_back(r.collective);
  return out;
}

}  // namespace gsq::topo
