// The fleet's result as JSON (gpusqueeze.fleet/1) and as findings for the page.
#include "fleet/fleet.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gsq::fleet {

using nlohmann::json;

namespace {

json difference_json(const Difference& d) {
  json j{{"field", d.field}, {"label", d.label}, {"kind", d.kind}, {"value", d.value}, {"group_value", d.group_value},
         {"fix", d.fix}};
  if (d.robust_z) j["robust_z"] = *d.robust_z;
  return j;
}

json outlier_json(const Result& r, const Outlier& o) {
  json gpus = json::array();
  for (size_t i : o.gpus)
    gpus.push_back(
        {{"node", r.gpus[i].node}, {"gpu", r.gpus[i].index}, {"uuid", r.gpus[i].uuid}, {"origin", r.gpus[i].origin}});
  json diffs = json::array();
  for (const auto& d : o.differences) diffs.push_back(difference_json(d));
  return {{"subject", subject(r, o)},
          {"group", o.group},
          {"severity", to_string(o.severity)},
          {"gpus", gpus},
          {"differences", diffs}};
}

std::string title_of(const Outlier& o) {
  std::vector<std::string> parts;
  for (const auto& d : o.differences)
    parts.push_back(d.kind == "health" ? fmt::format("{} {}", d.label, d.value)
                                       : fmt::format("{} {} (peers {})", d.label, d.value, d.group_value));
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace

size_t outlier_gpus(const Result& r) {
  size_t n = 0;
  for (const auto& o : r.outliers) n += o.gpus.size();
  return n;
}

json to_json(const Result& r) {
  json groups = json::array();
  for (const auto& g : r.groups) {
    json members = json::array();
    for (size_t i : g.gpus)
      members.push_back(r.gpus[i].uuid.empty() ? r.gpus[i].node + "/" + r.gpus[i].index : r.gpus[i].uuid);
    groups.push_back({{"model", g.model},
                      {"gpus", g.gpus.size()},
                      {"members", members},
                      {"config", g.config},
                      {"median", g.median},
                      {"notes", g.notes}});
  }
  json outliers = json::array(), watch = json::array();
  for (const auto& o : r.outliers) outliers.push_back(outlier_json(r, o));
  for (const auto& o : r.watch) watch.push_back(outlier_json(r, o));
  return {{"schema", kFleetSchema},
          {"source", r.source},
          {"gpus", r.gpus.size()},
          {"outlier_gpus", outlier_gpus(r)},
          {"groups", groups},
          {"outliers", outliers},
          {"watch", watch},
          {"notes", r.notes},
          {"rules",
           {{"majority", kMajority},
            {"robust_z", kZ},
            {"min_causes", kMinSignals},
            {"min_load_samples", kMinLoadSamples}}}};
}

std::vector<Finding> findings(const Result& r) {
  std::vector<Finding> out;
  auto add = [&](const Outlier& o, std::string id) {
    std::vector<Evidence> evidence;
    std::vector<std::string> fixes;
    for (const auto& d : o.differences) {
      evidence.push_back(
          {d.field, d.kind == "health" ? d.value : fmt::format("{} (peers {})", d.value, d.group_value)});
      if (!d.fix.empty() && std::find(fixes.begin(), fixes.end(), d.fix) == fixes.end()) fixes.push_back(d.fix);
    }
    out.push_back(make_finding(
        std::move(id), o.severity, title_of(o), std::move(evidence), fmt::format("{}", fmt::join(fixes, ". ")),
        "fleet: group majority (2/3) and robust z ≥ 3.5 (Iglewicz & Hoaglin)", 7, subject(r, o)));
  };
  // One check per field that differs first: the page's verdict folds lines of one check together ("and 2 more like
  // it"), which must be outliers of one kind.
  for (const auto& o : r.outliers) add(o, "fleet-" + o.differences.front().field);
  for (const auto& o : r.watch) add(o, "fleet-watch-" + o.differences.front().field);
  return out;
}

}  // namespace gsq::fleet
