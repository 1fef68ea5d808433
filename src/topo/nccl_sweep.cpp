// The env sweep's settings and judgement (see nccl_sweep.hpp).
#include "topo/nccl_sweep.hpp"

#include "core/error.hpp"
#include "core/nccl_env.hpp"
#include "core/stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

namespace gsq::topo {

std::vector<SweepSetting> default_sweep() {
  std::vector<SweepSetting> s{{"as is", {}}};
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{{"NCCL_ALGO", "Ring"},
                                                                             {"NCCL_ALGO", "Tree"},
                                                                             {"NCCL_PROTO", "Simple"},
                                                                             {"NCCL_PROTO", "LL128"},
                                                                             {"NCCL_MIN_CTAS", "32"},
                                                                             {"NCCL_P2P_LEVEL", "SYS"},
                                                                             {"NCCL_NVLS_ENABLE", "0"}})
    s.push_back({fmt::format("{}={}", k, v), {{k, v}}});
  return s;
}

std::vector<SweepSetting> parse_sweep(const std::vector<std::string>& specs) {
  std::vector<SweepSetting> out{{"as is", {}}};
  for (const auto& spec : specs) {
    SweepSetting s{spec, {}};
    std::stringstream in(spec);
    for (std::string kv; std::getline(in, kv, ',');) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        throw_bad_input(fmt::format("--env {}: expected NAME=VALUE[,NAME=VALUE]", spec));
      const std::string name = kv.substr(0, eq);
      if (!name.starts_with("NCCL_"))
        throw_bad_input(fmt::format("--env {}: {} is not an NCCL setting (NCCL_*)", spec, name));
      if (const auto it = nccl_env_notes().find(name);
          it != nccl_env_notes().end() && it->second.kind != NcclEnvKind::debug)
        throw_bad_input(fmt::format("--env {}: {}; {}", spec, it->second.truth, it->second.instead));
      s.env.emplace_back(name, kv.substr(eq + 1));
    }
    if (s.env.empty()) throw_bad_input(fmt::format("--env '{}': no setting", spec));
    out.push_back(std::move(s));
  }
  return out;
}

double large_size_busbw(const nlohmann::json& j, const std::string& collective) {
  if (!j.is_object() || !j.contains("rows") || !j["rows"].is_array()) throw_bad_input("probe nccl --json: no rows");
  // Rows of this collective with a numeric size and busbw; anything else in the document is not read.
  std::vector<std::pair<uint64_t, double>> rows;
  for (const auto& r : j["rows"])
    if (r.is_object() && r.contains("collective") && r["collective"] == collective && r.contains("bytes") &&
        r["bytes"].is_number_integer() && r["bytes"] >= 0 && r.contains("busbw_gbs") && r["busbw_gbs"].is_number())
      rows.emplace_back(r["bytes"].get<uint64_t>(), r["busbw_gbs"].get<double>());
  uint64_t largest = 0;
  for (const auto& [bytes, bw] : rows) largest = std::max(largest, bytes);
  double sum = 0;
  int n = 0;
  for (const auto& [bytes, bw] : rows)
    if (largest > 0 && bytes >= largest / 4) {
      sum += bw;
      ++n;
    }
  if (n == 0) throw_bad_input(fmt::format("probe nccl --json: no {} rows", collective));
  return sum / n;
}

std::vector<SweepRow> judge_sweep(std::vector<SweepRow> rows) {
  if (rows.empty()) return rows;
  auto& base = rows.front();
  for (auto& r : rows) {
    if (r.busbw.empty()) {
      r.verdict = "did not run";
      continue;
    }
    r.median = stats::percentile(r.busbw, 0.5);
  }
  for (auto& r : rows) {
    if (&r == &base) {
      r.verdict = r.busbw.empty() ? "did not run" : "baseline";
      r.ratio = r.busbw.empty() ? 0 : 1;
      continue;
    }
    if (r.busbw.empty() || base.busbw.empty()) {
      if (!r.busbw.empty()) r.verdict = "no baseline to compare";
      continue;
    }
    if (base.median <= 0) {  // one GPU: busbw is 0 by its definition, whatever the setting
      r.verdict = "not comparable: the baseline's busbw is 0";
      continue;
    }
    r.ratio = r.median / base.median;
    const auto [blo, bhi] = std::minmax_element(base.busbw.begin(), base.busbw.end());
    const auto [lo, hi] = std::minmax_element(r.busbw.begin(), r.busbw.end());
    const bool one = r.busbw.size() < 2 || base.busbw.size() < 2;
    if (*lo > *bhi)
      r.verdict = one ? "faster once (one trial: no spread to judge by)" : "helps";
    else if (*hi < *blo)
      r.verdict = one ? "slower once (one trial: no spread to judge by)" : "hurts";
    else
      r.verdict = "no clear difference";
  }
  return rows;
}

nlohmann::json to_json(const std::vector<SweepRow>& rows) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& r : rows)
    a.push_back({{"setting", r.setting},
                 {"busbw_gbs", r.busbw},
                 {"median_busbw_gbs", r.median},
                 {"ratio", r.ratio},
                 {"verdict", r.verdict},
                 {"error", r.error}});
  return a;
}

}  // namespace gsq::topo
