// `report --compare`: what changed between two reports of one machine.
#include "report/report.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <map>

namespace gsq::report {

namespace {

using nlohmann::json;

// A finding's identity across reports: the section's kind (ids "locate-2" → "locate"), the check and its subject.
std::string finding_key(const json& f) {
  std::string section = f.value("section", "");
  if (const auto dash = section.find_last_of('-');
      dash != std::string::npos && dash + 1 < section.size() &&
      section.find_first_not_of("0123456789", dash + 1) == std::string::npos)
    section.resize(dash);
  return section + " / " + f.value("id", "") + " / " + f.value("subject", "");
}

std::map<std::string, json> findings_of(const json& report) {
  std::map<std::string, json> out;
  if (report.contains("findings") && report["findings"].is_array())
    for (const auto& f : report["findings"])
      if (f.is_object()) out.emplace(finding_key(f), f);
  return out;
}

std::string fingerprint_of(const json& report) {
  if (!report.contains("sections") || !report["sections"].is_object()) return "";
  const auto& s = report["sections"];
  if (s.contains("environment") && s["environment"].is_object())
    return s["environment"].value("fingerprint", std::string());
  return "";
}

std::string headlines_of(const json& step) {
  std::string line;
  if (step.contains("headlines") && step["headlines"].is_array())
    for (const auto& h : step["headlines"])
      if (h.is_string()) line += (line.empty() ? "" : "; ") + h.get<std::string>();
  return line;
}

}  // namespace

namespace {
Section compare_checked(const json& old, const json& now, const std::string& origin);
}  // namespace

Section compare_section(const json& old, const json& now, const std::string& origin) {
  try {
    return compare_checked(old, now, origin);
  } catch (const json::exception& e) {  // a field of the wrong type in an edited or foreign report.json
    throw_bad_input(fmt::format("{}: not a report gpusqueeze can compare with: {}", origin, e.what()));
  }
}

namespace {
Section compare_checked(const json& old, const json& now, const std::string& origin) {
  if (!old.is_object() || !old.contains("schema") || old["schema"] != kReportSchema)
    throw_bad_input(fmt::format("{}: not a gpusqueeze report (schema {} expected)", origin, kReportSchema));
  Section sec;
  sec.id = "changes";
  sec.title = "Since the last report: " + origin;
  sec.step = -1;  // first on the page, on no step's card

  const std::string fp_old = fingerprint_of(old), fp_now = fingerprint_of(now);
  json data{{"origin", origin},
            {"compared", {{"steps", old.contains("steps")}, {"findings", old.contains("findings")}}},
            {"fingerprint", {{"before", fp_old}, {"now", fp_now}, {"changed", fp_old != fp_now}}}};
  sec.notes.push_back(fp_old == fp_now
                          ? fmt::format("Same machine fingerprint {}: the locked fields (driver, clocks, links, …) did "
                                        "not change.",
                                        fp_now)
                          : fmt::format("The machine fingerprint changed: {} → {}. Something in the locked fields "
                                        "(driver, clocks, links, …) is different; `gpusqueeze env --check` names it.",
                                        fp_old.empty() ? "none" : fp_old, fp_now));

  Table steps{{"step", "before", "now", "headline before", "headline now"}, {}};
  json step_changes = json::array();
  if (old.contains("steps") && old["steps"].is_array() && now.contains("steps"))
    for (const auto& s_now : now["steps"])
      for (const auto& s_old : old["steps"]) {
        if (!s_old.is_object() || s_old.value("step", -1) != s_now.value("step", -2)) continue;
        const std::string st_old = s_old.value("status", ""), st_now = s_now.value("status", "");
        if (st_old == st_now && headlines_of(s_old) == headlines_of(s_now)) continue;
        steps.rows.push_back({fmt::format("{} {}", s_now.value("step", 0), s_now.value("name", "")), st_old, st_now,
                              headlines_of(s_old), headlines_of(s_now)});
        step_changes.push_back({{"step", s_now.value("step", 0)}, {"before", st_old}, {"now", st_now}});
      }
  const bool old_has_steps = old.contains("steps") && old["steps"].is_array();
  const bool old_has_findings = old.contains("findings") && old["findings"].is_array();
  if (!old_has_steps)
    sec.notes.push_back("The earlier report has no step cards (an older gpusqueeze made it): steps are not compared.");
  else if (steps.rows.empty())
    sec.notes.push_back("No step changed its status or headline figures.");
  else
    sec.tables.emplace_back("Steps that changed", steps);

  // Without the earlier list every finding would read as new: say so instead of claiming it.
  const auto before = findings_of(old), after = old_has_findings ? findings_of(now) : std::map<std::string, json>{};
  if (!old_has_findings)
    sec.notes.push_back(
        "The earlier report lists no findings (an older gpusqueeze made it): findings are not compared.");
  Table gained{{"severity", "finding", "where (section / check / subject)"}, {}};
  Table lost = gained;
  json j_gained = json::array(), j_lost = json::array();
  for (const auto& [key, f] : after)
    if (!before.count(key)) {
      gained.rows.push_back({f.value("severity", ""), f.value("title", ""), key});
      j_gained.push_back(f);
    }
  for (const auto& [key, f] : before)
    if (!after.count(key)) {
      lost.rows.push_back({f.value("severity", ""), f.value("title", ""), key});
      j_lost.push_back(f);
    }
  if (!gained.rows.empty()) sec.tables.emplace_back("New findings", gained);
  if (!lost.rows.empty()) sec.tables.emplace_back("Findings gone since", lost);
  sec.headline = old_has_findings ? fmt::format("{} new finding(s), {} gone, fingerprint {}", gained.rows.size(),
                                                lost.rows.size(), fp_old == fp_now ? "unchanged" : "changed")
                                  : fmt::format("fingerprint {}", fp_old == fp_now ? "unchanged" : "changed");
  sec.notes.push_back(sec.headline + ".");
  data["steps"] = std::move(step_changes);
  data["gained"] = std::move(j_gained);
  data["lost"] = std::move(j_lost);
  sec.data = std::move(data);
  return sec;
}
}  // namespace

}  // namespace gsq::report
