// The probes' JSON documents read back: a probe nccl child's output, a saved probe p2p document.
#include "core/error.hpp"
#include "topo/multigpu_probe.hpp"

#include <fmt/format.h>

namespace gsq::topo {

NcclRun nccl_run_from_json(const nlohmann::json& j) {
  NcclRun run;
  run.library = j.at("library");
  run.version = j.at("version");
  run.ranks = j.at("ranks");
  for (const auto& x : j.at("rows"))
    run.rows.push_back({x.at("collective"), x.at("bytes"), x.at("time_us"), x.at("algbw_gbs"), x.at("busbw_gbs"),
                        x.at("wrong"), x.value("algo", ""), x.value("proto", ""), x.value("channels", 0)});
  run.notes = j.at("notes").get<std::vector<std::string>>();
  return run;
}

namespace {

// A gpus × gpus matrix of numbers under `key`, or empty when the document has none and `optional`.
std::vector<std::vector<double>> matrix(const nlohmann::json& j, const char* key, int gpus, const std::string& origin,
                                        bool optional) {
  if (!j.contains(key)) {
    if (optional) return {};
    throw_bad_input(fmt::format("{}: no \"{}\" (a gpusqueeze.p2p/1 document from probe p2p --json)", origin, key));
  }
  const auto& m = j[key];
  auto bad = [&] {
    throw_bad_input(fmt::format("{}: \"{}\" is not a {}×{} matrix of numbers", origin, key, gpus, gpus));
  };
  if (!m.is_array() || m.size() != static_cast<size_t>(gpus)) bad();
  std::vector<std::vector<double>> out;
  for (const auto& row : m) {
    if (!row.is_array() || row.size() != static_cast<size_t>(gpus)) bad();
    out.emplace_back();
    for (const auto& v : row) {
      if (!v.is_number()) bad();
      out.back().push_back(v.get<double>());
    }
  }
  return out;
}

}  // namespace

P2pResult p2p_from_json(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string() || j["schema"] != "gpusqueeze.p2p/1")
    throw_bad_input(origin + ": not a gpusqueeze.p2p/1 document (gpusqueeze probe p2p --json writes one)");
  P2pResult r;
  if (!j.contains("gpus") || !j["gpus"].is_number_integer() || j["gpus"].get<int64_t>() < 1 ||
      j["gpus"].get<int64_t>() > 1024)
    throw_bad_input(origin + ": \"gpus\" is not a GPU count");
  r.gpus = j["gpus"].get<int>();
  r.uni_gbs = matrix(j, "uni_gbs", r.gpus, origin, false);
  r.bi_gbs = matrix(j, "bi_gbs", r.gpus, origin, false);
  r.latency_us = matrix(j, "latency_us", r.gpus, origin, false);
  r.sm_uni_gbs = matrix(j, "sm_uni_gbs", r.gpus, origin, true);
  r.sm_latency_us = matrix(j, "sm_latency_us", r.gpus, origin, true);
  for (const auto& row : matrix(j, "peer_access", r.gpus, origin, true)) {
    r.peer_access.emplace_back();
    for (double v : row) r.peer_access.back().push_back(v != 0 ? 1 : 0);
  }
  auto strings = [&](const char* key) {
    std::vector<std::string> out;
    if (j.contains(key) && j[key].is_array())
      for (const auto& s : j[key])
        if (s.is_string()) out.push_back(s.get<std::string>());
    return out;
  };
  r.names = strings("names");
  r.notes = strings("notes");
  return r;
}

}  // namespace gsq::topo
