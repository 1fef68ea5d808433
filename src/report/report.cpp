// Report assembly and its three renderers.
#include "report/report.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace gsq::report {

namespace {

using nlohmann::json;

std::string value_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return fmt::format("{:.1f}", v.get<double>());
  if (v.is_boolean()) return v.get<bool>() ? "on" : "off";
  if (v.is_object() && v.contains("unsupported") && v.size() == 1) return "unsupported";
  if (v.is_array() && v.empty()) return "none";
  return v.dump();
}

std::string bytes_text(const json& v) {
  if (!v.is_number()) return value_text(v);
  return fmt::format("{:.1f} GiB", v.get<double>() / (1ULL << 30));
}

// " (recorded on NVIDIA A100-SXM4-80GB)" after a verdict line of a file from another machine.
std::string recorded_on_text(const TopFinding& t) {
  return t.recorded_on.empty() ? "" : " (recorded on " + t.recorded_on + ")";
}

std::string verdict_heading(const Report& r) {
  if (!r.verdict_title.empty()) return r.verdict_title;
  return r.this_machine ? "Verdict on this machine" : "Verdict on the recorded machine (not this one)";
}

std::string alike_text(const TopFinding& t) {
  return t.alike ? fmt::format(" and {} more like it", t.alike) : "";
}

std::string evidence_text(const Finding& f) {
  std::string s;
  for (const auto& e : f.evidence) s += fmt::format("{}{}={}", s.empty() ? "" : "; ", e.name, e.value);
  return s;
}

}  // namespace

std::string_view step_name(int step) noexcept {
  switch (step) {
    case 0:
      return "machine";
    case 1:
      return "baseline";
    case 2:
      return "bottleneck";
    case 3:
      return "memory bandwidth";
    case 4:
      return "compute";
    case 5:
      return "multi-GPU";
    case 6:
      return "tuning";
    case 7:
      return "monitoring";
    case kTriageStep:
      return "field triage";
    default:
      return "other";
  }
}

std::string_view step_hint(int step) noexcept {
  switch (step) {
    case 0:
      return "gpusqueeze env --save env.json; gpusqueeze doctor";
    case 1:
      return "gpusqueeze bench core -o run.json, then report --bench run.json";
    case 2:
      return "gpusqueeze trace -o app.gsqt -- CMD (or a PyTorch profiler trace), then report --trace FILE";
    case 3:
      return "gpusqueeze bench mem -o mem.json (also l2, pcie, launch), then report --bench mem.json";
    case 4:
      return "gpusqueeze bench kernels -o kernels.json, then report --bench kernels.json; gpusqueeze occupancy";
    case 5:
      return "on a multi-GPU machine report reads the topology itself; elsewhere report --topo (saved nvidia-smi "
             "topo -m) --nccl (NCCL_DEBUG=INFO log)";
    case 6:
      return "gpusqueeze tune capture -o my.toml, install it as /etc/gpusqueeze/tune.toml (or report --tune FILE)";
    case 7:
      return "gpusqueeze exporter and gpusqueeze rules generate: deployed beside the service, not on this page";
    case kTriageStep:
      return "report --memory SNAPSHOT.pickle, --jitter REC.gsqt, --trt TRTEXEC.log";
    default:
      return "";
  }
}

std::string_view to_string(StepStatus s) noexcept {
  switch (s) {
    case StepStatus::ok:
      return "ok";
    case StepStatus::look:
      return "look";
    case StepStatus::fix:
      return "fix";
    case StepStatus::not_measured:
      break;
  }
  return "not measured";
}

void Report::add(Section s) {
  const std::string base = s.id;
  for (int n = 2; std::any_of(sections.begin(), sections.end(), [&](const Section& o) { return o.id == s.id; }); ++n)
    s.id = fmt::format("{}-{}", base, n);
  sections.push_back(std::move(s));
}

std::vector<TopFinding> top_findings(const Report& r, size_t max) {
  std::vector<TopFinding> all;
  std::vector<double> keys;  // each line's rank key (rank_keys(): the saving, a specific cause just before its whole)
  for (const auto& sec : r.sections) {
    const auto sec_keys = rank_keys(sec.findings);
    for (size_t i = 0; i < sec.findings.size(); ++i) {
      const auto& f = sec.findings[i];
      if (f.severity == Severity::pass) continue;
      const auto same = std::find_if(
          all.begin(), all.end(), [&](const TopFinding& t) { return t.section_id == sec.id && t.finding.id == f.id; });
      if (same == all.end()) {
        all.push_back({f, sec.id, sec.more, 0, sec.recorded_on});
        keys.push_back(sec_keys[i]);
      } else if (f.severity > same->finding.severity ||
                 (f.severity == same->finding.severity &&
                  f.saving_ratio.value_or(0) > same->finding.saving_ratio.value_or(0))) {
        same->finding = f;  // the line shows the worst of them
        keys[static_cast<size_t>(same - all.begin())] = sec_keys[i];
        ++same->alike;
      } else {
        ++same->alike;
      }
    }
  }
  // Stable: equal severity and key keep page order.
  std::vector<size_t> order(all.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (all[a].finding.severity != all[b].finding.severity) return all[a].finding.severity > all[b].finding.severity;
    return keys[a] > keys[b];
  });
  std::vector<TopFinding> ranked;
  for (size_t i = 0; i < order.size() && ranked.size() < max; ++i) ranked.push_back(std::move(all[order[i]]));
  return ranked;
}

std::vector<StepCard> step_cards(const Report& r) {
  std::vector<StepCard> cards;
  for (int step = 0; step <= kTriageStep; ++step) {
    StepCard c;
    c.step = step;
    for (const auto& sec : r.sections) {
      if (sec.step != step) continue;
      if (c.status == StepStatus::not_measured) c.status = StepStatus::ok;
      const Severity w = worst(sec.findings);
      if (w == Severity::fail) c.status = StepStatus::fix;
      if (w == Severity::warn && c.status != StepStatus::fix) c.status = StepStatus::look;
      if (!sec.headline.empty()) c.headlines.push_back(sec.headline);
      c.section_ids.push_back(sec.id);
    }
    cards.push_back(std::move(c));
  }
  return cards;
}

std::string display_name(const std::filesystem::path& file, const std::filesystem::path& cwd) {
  const auto normal = file.lexically_normal();
  if (normal.is_relative()) return normal.string();
  const auto rel = normal.lexically_relative(cwd.lexically_normal());
  if (!rel.empty() && *rel.begin() != "..") return rel.string();
  return normal.filename().string();
}

Table findings_table(const std::vector<Finding>& findings) {
  Table t{{"severity", "check", "subject", "finding", "evidence", "fix"}, {}};
  for (const auto& f : findings) {
    t.rows.push_back({std::string(to_string(f.severity)), f.id, f.subject, f.title, evidence_text(f), f.fix});
  }
  return t;
}

Section environment_section(const gpu::Snapshot& s, const std::string& fingerprint) {
  Section sec;
  sec.id = "environment";
  sec.title = "Step 0 — machine: environment";
  sec.step = 0;
  sec.more = "gpusqueeze env";
  if (!s.gpus.empty())
    sec.headline = fmt::format("{} × {}, driver {}", s.gpus.size(), s.gpus[0].name.ok() ? *s.gpus[0].name : "GPU",
                               s.host.driver_version.ok() ? *s.host.driver_version : "unknown");
  const json j = s;
  const json& h = j.at("host");
  sec.notes.push_back(fmt::format(
      "Fingerprint {} over the locked fields (`gpusqueeze env --save` / `--check` track drift).", fingerprint));
  Table host{{"host field", "value"}, {}};
  for (const char* k :
       {"hostname", "os", "kernel", "cpu_model", "cpu_count", "cpu_governor", "driver_version", "cuda_driver_version",
        "cuda_runtime_version", "nvml_version", "aspm_policy", "iommu", "process_cpu_affinity"}) {
    host.rows.push_back({k, value_text(h.at(k))});
  }
  if (h.at("nvidia_params").is_object() && h.at("nvidia_params").contains("RmProfilingAdminOnly")) {
    host.rows.push_back({"RmProfilingAdminOnly", value_text(h.at("nvidia_params").at("RmProfilingAdminOnly"))});
  }
  std::string hints;
  for (const auto& c : s.host.container_hints) hints += (hints.empty() ? "" : "; ") + c;
  host.rows.push_back({"container", hints.empty() ? "none detected" : hints});
  sec.tables.emplace_back("Host", std::move(host));

  Table env{{"variable", "value"}, {}};
  for (const auto& [k, v] : s.host.env) env.rows.push_back({k, abbreviate(v)});
  if (env.rows.empty())
    sec.notes.push_back("No CUDA/PyTorch/NCCL environment variables set.");
  else
    sec.tables.emplace_back("Environment variables that change CUDA, PyTorch or NCCL behaviour", std::move(env));

  if (!s.gpus.empty()) {
    Table gpus{{"GPU field"}, {}};
    for (const auto& g : j.at("gpus")) gpus.header.push_back(fmt::format("GPU {}", g.at("index").get<unsigned>()));
    auto row = [&](const char* label, auto&& fmt_fn) {
      std::vector<std::string> r{label};
      for (const auto& g : j.at("gpus")) r.push_back(fmt_fn(g));
      gpus.rows.push_back(std::move(r));
    };
    auto plain = [](const char* k) { return [k](const json& g) { return value_text(g.at(k)); }; };
    auto bytes = [](const char* k) { return [k](const json& g) { return bytes_text(g.at(k)); }; };
    auto pair = [](const char* a, const char* b, const char* unit) {
      return [=](const json& g) { return fmt::format("{} / {}{}", value_text(g.at(a)), value_text(g.at(b)), unit); };
    };
    row("name", plain("name"));
    row("uuid", plain("uuid"));
    row("pci bus id", plain("pci_bus_id"));
    row("architecture / CC", pair("architecture", "compute_capability", ""));
    row("vbios", plain("vbios_version"));
    row("memory total", bytes("memory_total_bytes"));
    row("memory used", bytes("memory_used_bytes"));
    row("BAR1 total", bytes("bar1_total_bytes"));
    row("SM clock now / max", pair("sm_clock_mhz", "sm_clock_max_mhz", " MHz"));
    row("mem clock now / max", pair("mem_clock_mhz", "mem_clock_max_mhz", " MHz"));
    row("power draw / limit", pair("power_draw_w", "power_limit_w", " W"));
    row("temperature / slowdown", pair("temperature_c", "temperature_slowdown_c", " °C"));
    row("PCIe gen now / max", pair("pcie_gen_current", "pcie_gen_max", ""));
    row("PCIe width now / max", pair("pcie_width_current", "pcie_width_max", ""));
    row("persistence", plain("persistence_mode"));
    row("compute mode", plain("compute_mode"));
    row("ECC", plain("ecc_mode_current"));
    row("MIG", plain("mig_mode_current"));
    row("NUMA node", plain("numa_node"));
    row("GPM", plain("gpm_supported"));
    row("clock event reasons", [](const json& g) {
      const auto& m = g.at("clock_event_reasons_mask");
      if (!m.is_number()) return value_text(m);
      std::string names;
      for (const auto& n : gpu::clock_event_reason_names(m.get<uint64_t>())) names += (names.empty() ? "" : ", ") + n;
      return names.empty() ? std::string("none") : names;
    });
    sec.tables.emplace_back("GPUs", std::move(gpus));
  }
  for (const auto& n : s.notes) sec.notes.push_back(n);
  sec.data = json{{"fingerprint", fingerprint}, {"snapshot", s}};
  return sec;
}

Section doctor_section(const std::vector<Finding>& findings) {
  Section sec;
  sec.id = "doctor";
  sec.title = "Step 0 — machine: doctor";
  sec.step = 0;
  sec.more = "gpusqueeze doctor";
  std::map<Severity, int> counts;
  for (const auto& f : findings) counts[f.severity]++;
  sec.headline = fmt::format("doctor: {} fail, {} warn", counts[Severity::fail], counts[Severity::warn]);
  sec.notes.push_back(fmt::format("{} checks: {} fail, {} warn, {} info, {} pass.", findings.size(),
                                  counts[Severity::fail], counts[Severity::warn], counts[Severity::info],
                                  counts[Severity::pass]));
  sec.findings = findings;
  sec.data = json{{"findings", findings}, {"worst", to_string(worst(findings))}};
  return sec;
}

Section bench_section(const std::string& title_suffix, const std::vector<std::string>& header,
                      const std::vector<std::vector<std::string>>& rows, const std::vector<std::string>& notes,
                      json data) {
  Section sec;
  sec.id = "baseline";
  sec.title = "Step 1 — baseline: " + title_suffix;
  sec.step = 1;
  sec.notes = notes;
  sec.tables.emplace_back("P50/P90/P99 per benchmark and mode (CUDA events)", Table{header, rows});
  sec.data = std::move(data);
  return sec;
}

Section analysis_section(const std::string& origin, const std::string& verdict_line, const Table& breakdown,
                         const Table& kernels, const std::vector<Finding>& findings, json data) {
  Section sec;
  sec.id = "locate";
  sec.title = "Step 2 — locate the bottleneck: " + origin;
  sec.step = 2;
  sec.more = "gpusqueeze analyze " + origin;
  sec.notes.push_back(verdict_line);
  sec.tables.emplace_back("Where the wall time went", breakdown);
  sec.tables.emplace_back("Top kernels", kernels);
  sec.findings = findings;
  sec.data = std::move(data);
  return sec;
}

std::string render_markdown(const Report& r) {
  std::string md = fmt::format("# {}\n\n{}\n\n## {}\n\n", r.title, r.provenance, verdict_heading(r));
  const auto top = top_findings(r);
  if (top.empty()) md += "No check failed or asked for a look.\n";
  for (size_t i = 0; i < top.size(); ++i) {
    const auto& f = top[i].finding;
    md +=
        fmt::format("{}. **{}** {} — {}{}{}{}{}\n", i + 1, to_string(f.severity), f.title, f.subject,
                    recorded_on_text(top[i]), f.evidence.empty() ? "" : " (" + abbreviate(evidence_text(f), 160) + ")",
                    alike_text(top[i]), top[i].more.empty() ? "" : fmt::format(". More: `{}`", top[i].more));
  }
  Table steps{{"step", "status", "headline"}, {}};
  for (const auto& c : r.method_steps ? step_cards(r) : std::vector<StepCard>{}) {
    std::string line;
    for (const auto& h : c.headlines) line += (line.empty() ? "" : "; ") + h;
    steps.rows.push_back(
        {fmt::format("{} {}", c.step == kTriageStep ? std::string("F") : std::to_string(c.step), step_name(c.step)),
         std::string(to_string(c.status)), line.empty() ? std::string(step_hint(c.step)) : line});
  }
  if (r.method_steps) md += "\n## The method, step by step\n\n" + steps.markdown() + "\n";
  for (const auto& sec : r.sections) {
    md += fmt::format("## {}\n\n", sec.title);
    for (const auto& n : sec.notes) md += n + "\n\n";
    for (const auto& [caption, table] : sec.tables) md += fmt::format("**{}**\n\n{}\n", caption, table.markdown());
    if (!sec.findings.empty()) md += findings_table(sec.findings).markdown() + "\n";
    if (!sec.figures_svg.empty()) md += fmt::format("({} charts in index.html)\n\n", sec.figures_svg.size());
  }
  return md;
}

namespace {

constexpr const char* kCss = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:1200px;color:#1b1f24;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;border-bottom:2px solid #76b900;padding-bottom:.2rem;margin-top:2rem}
p.prov{color:#57606a;margin-top:0}table{border-collapse:collapse;margin:.4rem 0 1rem;font-size:13px}
th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top}th{background:#f6f8fa}
caption{text-align:left;font-weight:600;padding:.3rem 0}td.num{font-variant-numeric:tabular-nums}
.badge{display:inline-block;border-radius:3px;padding:0 .4rem;font-weight:600;font-size:12px;color:#fff}
.pass{background:#2da44e}.info{background:#0969da}.warn{background:#bf8700}.fail{background:#cf222e}
nav{margin-top:1rem}nav a{margin-right:1rem;color:#0969da;text-decoration:none}.figs{display:flex;flex-wrap:wrap;gap:.5rem}
.figs svg{border:1px solid #d0d7de;background:#fff;max-width:100%;height:auto}
footer{margin-top:3rem;color:#57606a;font-size:12px}.scroll{overflow-x:auto;max-width:100%}
ol.verdict li{margin:.3rem 0;overflow-wrap:anywhere}p{overflow-wrap:anywhere}.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:.5rem}
.card{border:1px solid #d0d7de;border-left:6px solid #8c959f;padding:.4rem .6rem;border-radius:4px}
.card h3{font-size:.95rem;margin:0}.card p{margin:.2rem 0;font-size:12px;overflow-wrap:anywhere}
.card p.hint{color:#57606a}.card.ok{border-left-color:#2da44e}.card.look{border-left-color:#bf8700}.card.fix{border-left-color:#cf222e}
td{overflow-wrap:anywhere}code{overflow-wrap:anywhere}
@media (prefers-color-scheme:dark){body{background:#0d1117;color:#e6edf3}th{background:#161b22}
th,td,.card,.figs svg{border-color:#30363d}p.prov,footer,.card p.hint{color:#8d96a0}a,nav a{color:#4493f8}}
@media print{nav{display:none}}
)";

std::string html_table(const Table& t, const std::string& caption) {
  std::string h = "<div class=\"scroll\"><table>";
  if (!caption.empty()) h += "<caption>" + html_escape(caption) + "</caption>";
  h += "<thead><tr>";
  for (const auto& c : t.header) h += "<th>" + html_escape(c) + "</th>";
  h += "</tr></thead><tbody>";
  for (const auto& row : t.rows) {
    h += "<tr>";
    for (const auto& c : row) h += "<td>" + html_escape(c) + "</td>";
    h += "</tr>";
  }
  return h + "</tbody></table></div>";
}

std::string html_findings(const std::vector<Finding>& findings) {
  std::string h =
      "<div "
      "class=\"scroll\"><table><thead><tr><th>severity</th><th>check</th><th>subject</th><th>finding</th><th>evidence</"
      "th><th>fix</th>"
      "<th>threshold source</th></tr></thead><tbody>";
  for (const auto& f : findings) {
    std::string ev;
    for (const auto& e : f.evidence)
      ev += "<div>" + html_escape(e.name) + ": <b>" + html_escape(e.value) + "</b></div>";
    h += fmt::format(
        "<tr><td><span class=\"badge {}\">{}</span></td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td></tr>",
        to_string(f.severity), to_string(f.severity), html_escape(f.id), html_escape(f.subject), html_escape(f.title),
        ev, html_escape(f.fix), html_escape(f.source));
  }
  return h + "</tbody></table></div>";
}

}  // namespace

std::string render_html(const Report& r) {
  std::string h = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + html_escape(r.title) +
                  "</title><style>" + kCss + "</style></head><body>";
  h += "<h1>" + html_escape(r.title) + "</h1><p class=\"prov\">" + html_escape(r.provenance) + "</p>";
  h += "<section id=\"verdict\"><h2>" + html_escape(verdict_heading(r)) + "</h2>";
  const auto top = top_findings(r);
  if (top.empty())
    h += "<p>No check failed or asked for a look.</p>";
  else
    h += "<ol class=\"verdict\">";
  for (const auto& t : top) {
    const auto& f = t.finding;
    h += fmt::format(
        "<li><span class=\"badge {0}\">{0}</span> <b>{1}</b> — {2}{6}{3}{4} <a href=\"#{5}\">details</a></li>",
        to_string(f.severity), html_escape(f.title), html_escape(f.subject),
        f.evidence.empty() ? "" : " (" + html_escape(abbreviate(evidence_text(f), 160)) + ")",
        t.more.empty() ? "" : ". More: <code>" + html_escape(t.more) + "</code>", html_escape(t.section_id),
        html_escape(recorded_on_text(t)));
  }
  if (!top.empty()) h += "</ol>";
  h += "<div class=\"cards\">";
  for (const auto& c : r.method_steps ? step_cards(r) : std::vector<StepCard>{}) {
    h += fmt::format("<div class=\"card {}\"><h3>{} {}</h3><p><b>{}</b></p>",
                     c.status == StepStatus::not_measured ? "none" : to_string(c.status),
                     c.step == kTriageStep ? std::string("F") : std::to_string(c.step), step_name(c.step),
                     to_string(c.status));
    for (const auto& line : c.headlines) h += "<p>" + html_escape(line) + "</p>";
    if (c.headlines.empty()) h += "<p class=\"hint\">" + html_escape(step_hint(c.step)) + "</p>";
    h += "</div>";
  }
  h += "</div></section><nav>";
  for (const auto& sec : r.sections) h += "<a href=\"#" + html_escape(sec.id) + "\">" + html_escape(sec.title) + "</a>";
  h += "</nav>";
  for (const auto& sec : r.sections) {
    h += "<section id=\"" + html_escape(sec.id) + "\"><h2>" + html_escape(sec.title) + "</h2>";
    for (const auto& n : sec.notes) h += "<p>" + html_escape(n) + "</p>";
    for (const auto& [caption, table] : sec.tables) h += html_table(table, caption);
    if (!sec.findings.empty()) h += html_findings(sec.findings);
    if (!sec.figures_svg.empty()) {
      h += "<div class=\"figs\">";
      for (const auto& f : sec.figures_svg) h += f;
      h += "</div>";
    }
    h += "</section>";
  }
  h += "<footer>gpusqueeze — report.md and report.json beside this file hold the same data.</footer></body></html>\n";
  return h;
}

json render_json(const Report& r) {
  json sections = json::object();
  json findings = json::array();  // every finding that is not a pass, for `report --compare` of a later report
  for (const auto& sec : r.sections) {
    sections[sec.id] = sec.data;
    for (const auto& f : sec.findings)
      if (f.severity != Severity::pass)
        findings.push_back({{"section", sec.id},
                            {"id", f.id},
                            {"subject", f.subject},
                            {"severity", to_string(f.severity)},
                            {"title", f.title}});
  }
  json verdict = json::array();
  for (const auto& t : top_findings(r))
    verdict.push_back({{"finding", t.finding},
                       {"section", t.section_id},
                       {"more", t.more},
                       {"alike", t.alike},
                       {"recorded_on", t.recorded_on}});
  json steps = json::array();
  for (const auto& c : r.method_steps ? step_cards(r) : std::vector<StepCard>{})
    steps.push_back({{"step", c.step},
                     {"name", step_name(c.step)},
                     {"status", to_string(c.status)},
                     {"headlines", c.headlines},
                     {"hint", c.status == StepStatus::not_measured ? step_hint(c.step) : ""},
                     {"sections", c.section_ids}});
  return json{{"schema", kReportSchema},        {"title", r.title},    {"provenance", r.provenance},
              {"this_machine", r.this_machine}, {"verdict", verdict},  {"steps", steps},
              {"findings", findings},           {"sections", sections}};
}

void write_report(const Report& r, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw_bad_input(fmt::format("{}: cannot create the report folder: {}", dir.string(), ec.message()));
  write_text_file(dir / "index.html", render_html(r));
  write_text_file(dir / "report.md", render_markdown(r));
  write_json_file(dir / "report.json", render_json(r));
}

}  // namespace gsq::report
