// JSON form of findings and the severity order.
#include "core/finding.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cmath>

namespace gsq {

std::string_view to_string(Severity s) noexcept {
  switch (s) {
    case Severity::pass:
      return "pass";
    case Severity::info:
      return "info";
    case Severity::warn:
      return "warn";
    case Severity::fail:
      return "fail";
  }
  return "fail";
}

Severity severity_from_string(std::string_view s) {
  for (Severity v : {Severity::pass, Severity::info, Severity::warn, Severity::fail}) {
    if (to_string(v) == s) return v;
  }
  throw_bad_input("unknown severity '" + std::string(s) + "' (expected pass, info, warn or fail)");
}

Finding make_finding(std::string id, Severity severity, std::string title, std::vector<Evidence> evidence,
                     std::string fix, std::string source, int step, std::string subject) {
  Finding f;
  f.id = std::move(id);
  f.severity = severity;
  f.title = std::move(title);
  f.evidence = std::move(evidence);
  f.fix = std::move(fix);
  f.source = std::move(source);
  f.step = step;
  f.subject = std::move(subject);
  return f;
}

void to_json(nlohmann::json& j, const Finding& f) {
  nlohmann::json ev = nlohmann::json::object();
  for (const auto& e : f.evidence) ev[e.name] = e.value;
  j = {{"id", f.id},       {"severity", to_string(f.severity)},
       {"title", f.title}, {"evidence", ev},
       {"fix", f.fix},     {"source", f.source},
       {"step", f.step},   {"subject", f.subject}};
  j["saving_ratio"] = f.saving_ratio ? nlohmann::json(*f.saving_ratio) : nlohmann::json(nullptr);
}

void from_json(const nlohmann::json& j, Finding& f) {
  f.id = j.at("id").get<std::string>();
  f.severity = severity_from_string(j.at("severity").get<std::string>());
  f.title = j.at("title").get<std::string>();
  f.evidence.clear();
  for (const auto& [k, v] : j.at("evidence").items()) f.evidence.push_back({k, v.get<std::string>()});
  f.fix = j.value("fix", "");
  f.source = j.value("source", "");
  f.step = j.value("step", 0);
  f.subject = j.value("subject", "");
  if (j.contains("saving_ratio") && !j["saving_ratio"].is_null()) f.saving_ratio = j["saving_ratio"].get<double>();
}

Severity worst(const std::vector<Finding>& findings) noexcept {
  Severity w = Severity::pass;
  for (const auto& f : findings) w = std::max(w, f.severity);
  return w;
}

std::vector<double> rank_keys(const std::vector<Finding>& findings) {
  // A specific cause and the broader finding it is part of.
  static constexpr std::pair<std::string_view, std::string_view> kPartOf[] = {{"unfused-optimizer", "launch-bound"},
                                                                              {"sync-point", "launch-bound"}};
  std::vector<double> keys;
  for (const auto& f : findings) keys.push_back(f.saving_ratio.value_or(0));
  for (size_t i = 0; i < findings.size(); ++i)
    for (const auto& [part, whole] : kPartOf) {
      if (findings[i].id != part) continue;
      for (size_t j = 0; j < findings.size(); ++j)
        if (findings[j].id == whole && findings[j].severity == findings[i].severity &&
            3 * keys[i] >= findings[j].saving_ratio.value_or(0) && findings[j].saving_ratio.value_or(0) >= keys[i])
          keys[i] = std::nextafter(findings[j].saving_ratio.value_or(0), 2.0);  // just before the broader one
    }
  return keys;
}

void rank_findings(std::vector<Finding>& findings) {
  const auto keys = rank_keys(findings);
  std::vector<size_t> order(findings.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (findings[a].severity != findings[b].severity) return findings[a].severity > findings[b].severity;
    return keys[a] > keys[b];
  });
  std::vector<Finding> sorted;
  sorted.reserve(findings.size());
  for (size_t i : order) sorted.push_back(std::move(findings[i]));
  findings = std::move(sorted);
}

}  // namespace gsq
