// The analysis as JSON (gpusqueeze.analysis/1), tables and markdown.
#include "analyze/analysis.hpp"

#include "analyze/text.hpp"
#include "core/stats.hpp"
#include "core/table.hpp"

#include <fmt/format.h>

namespace gsq::analyze {

using detail::ms;
using detail::pct;
using detail::us;

nlohmann::json to_json(const Analysis& a) {
  using nlohmann::json;
  const auto& b = a.breakdown;
  json top = json::array();
  for (const auto& g : a.top_kernels) {
    top.push_back({{"name", g.name},
                   {"count", g.count},
                   {"total_ns", g.total_ns},
                   {"mean_ns", g.mean_ns},
                   {"p50_ns", g.p50_ns},
                   {"p99_ns", g.p99_ns},
                   {"share", g.share}});
  }
  json syncs = json::array();
  for (const auto& s : a.syncs)
    syncs.push_back({{"call", s.call}, {"cause", s.cause}, {"count", s.count}, {"wait_ns", s.wait_ns}});
  json findings = json::array();
  for (const auto& f : a.findings) {
    json jf = f;
    json evd = json::object();
    for (const auto& e : f.evidence) {
      // Numbers stay numbers for scripts; text stays text.
      char* end = nullptr;
      const long long v = std::strtoll(e.value.c_str(), &end, 10);
      if (!e.value.empty() && end && *end == '\0')
        evd[e.name] = v;
      else
        evd[e.name] = e.value;
    }
    jf["evidence"] = evd;
    jf["saving_ns"] = evd.value("saving_ns", 0LL);
    findings.push_back(jf);
  }
  json steps = a.step_ns;
  return json{
      {"schema", kAnalysisSchema},
      {"origin", a.origin},
      {"source", a.source},
      {"rank", a.rank},
      {"events", a.events},
      {"window", a.window},
      {"hardware",
       {{"busy_samples", a.hardware.busy_samples},
        {"mean", a.hardware.mean},
        {"throttled_share", a.hardware.throttled_share}}},
      {"verdict",
       {{"class", a.verdict.cls},
        {"subclass", a.verdict.subclass},
        {"share", a.verdict.share},
        {"summary", a.verdict.summary}}},
      {"critical_path", to_json(a.critical_path)},
      {"breakdown",
       {{"wall_ns", b.wall_ns},
        {"gpu_busy_ns", b.gpu_busy_ns},
        {"kernel_busy_ns", b.kernel_busy_ns},
        {"copy_only_ns", b.copy_only_ns},
        {"idle_host_ns", b.idle_host_ns},
        {"idle_sync_ns", b.idle_sync_ns},
        {"idle_launch_ns", b.idle_launch_ns},
        {"idle_queued_ns", b.idle_queued_ns},
        {"idle_startup_ns", b.idle_startup_ns},
        {"gaps", b.gaps},
        {"gpu_utilization", b.wall_ns ? static_cast<double>(b.gpu_busy_ns) / static_cast<double>(b.wall_ns) : 0}}},
      {"kernels",
       {{"count", a.kernels},
        {"short_count", a.short_kernels},
        {"median_launch_call_ns", a.median_launch_call_ns},
        {"median_eager_launch_ns", a.median_eager_launch_ns}}},
      {"top_kernels", top},
      {"copies",
       {{"count", a.copies.count},
        {"pageable", a.copies.pageable},
        {"synchronous", a.copies.synchronous},
        {"unoverlapped", a.copies.unoverlapped},
        {"bytes", a.copies.bytes},
        {"time_ns", a.copies.total_ns},
        {"size_histogram", a.copies.size_histogram},
        {"bytes_per_ns_by_kind", a.copies.gbps_by_kind}}},
      {"syncs", syncs},
      {"gpu_ns_by_op", a.gpu_ns_by_op},
      {"step_ns", steps},
      {"communication",
       {{"nccl_kernels", a.comm_kernels},
        {"time_ns", a.comm_ns},
        {"exposed_ns", a.comm_exposed_ns},
        {"overlap_ratio",
         a.comm_ns ? 1 - static_cast<double>(a.comm_exposed_ns) / static_cast<double>(a.comm_ns) : 0}}},
      {"findings", findings}};
}

Table breakdown_table(const Analysis& a) {
  const auto& b = a.breakdown;
  const double w = std::max<double>(1, static_cast<double>(b.wall_ns));
  Table tb{{"where the wall time went", "time", "share"}, {}};
  tb.rows.push_back({"GPU kernels running", ms(b.kernel_busy_ns), pct(static_cast<double>(b.kernel_busy_ns) / w)});
  tb.rows.push_back(
      {"copies only (no kernel running)", ms(b.copy_only_ns), pct(static_cast<double>(b.copy_only_ns) / w)});
  tb.rows.push_back(
      {"GPU idle: host busy elsewhere", ms(b.idle_host_ns), pct(static_cast<double>(b.idle_host_ns) / w)});
  tb.rows.push_back({"GPU idle: after a host sync", ms(b.idle_sync_ns), pct(static_cast<double>(b.idle_sync_ns) / w)});
  tb.rows.push_back(
      {"GPU idle: waiting on launches", ms(b.idle_launch_ns), pct(static_cast<double>(b.idle_launch_ns) / w)});
  if (b.idle_startup_ns > 0)
    tb.rows.push_back(
        {"GPU idle: one-off start-up", ms(b.idle_startup_ns), pct(static_cast<double>(b.idle_startup_ns) / w)});
  if (b.idle_queued_ns > 0)
    tb.rows.push_back({"GPU idle: next work queued (dependency)", ms(b.idle_queued_ns),
                       pct(static_cast<double>(b.idle_queued_ns) / w)});
  return tb;
}

Table kernels_table(const Analysis& a, size_t rows) {
  Table tk{{"kernel (normalised)", "count", "total", "mean", "P50", "P99", "share"}, {}};
  for (size_t i = 0; i < a.top_kernels.size() && i < rows; ++i) {
    const auto& g = a.top_kernels[i];
    tk.rows.push_back({abbreviate(g.name, 70), std::to_string(g.count), us(g.total_ns),
                       us(static_cast<int64_t>(g.mean_ns)), us(static_cast<int64_t>(g.p50_ns)),
                       us(static_cast<int64_t>(g.p99_ns)), pct(g.share)});
  }
  return tk;
}

nlohmann::json to_json(const PathJudgement& p) {
  if (!p.replayed) return nullptr;
  nlohmann::json j{{"ok", p.ok}, {"model", p.model}};
  if (!p.has_path) return j;
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& [op, ns] : p.top_ops) ops.push_back({{"op", op}, {"ns", ns}});
  j.update({{"verdict", p.verdict},
            {"host_share", p.host_share},
            {"cpu_ops_share", p.cpu_ops_share},
            {"wait_kernels_share", p.wait_kernels_share},
            {"wait_copies_share", p.wait_copies_share},
            {"replayed_step_p50_ns", p.replayed_step_p50_ns},
            {"recorded_step_p50_ns", p.recorded_step_p50_ns},
            {"untraced_step_p50_ns", p.untraced_step_p50_ns},
            {"correction", p.correction},
            {"host_scale", p.host_scale},
            {"host_ns", p.host_ns},
            {"records", p.records},
            {"launch_queue", {{"depth", p.queue_depth}, {"blocked_launches", p.queued_launches}}},
            {"top_ops", std::move(ops)},
            {"fidelity", p.fidelity},
            {"launched_gpu_share", p.launched_gpu_share}});
  if (!p.why.empty()) j["why"] = p.why;
  if (p.host_free_step_p50_ns) j["host_free_step_p50_ns"] = *p.host_free_step_p50_ns;
  return j;
}

std::string render_markdown(const Analysis& a) {
  const auto& b = a.breakdown;
  std::string md = fmt::format("verdict: **{}**{} — {}\n\n", a.verdict.cls,
                               a.verdict.subclass.empty() ? "" : " (" + a.verdict.subclass + ")", a.verdict.summary);
  const auto& c = a.critical_path;
  if (!c.why.empty()) md += fmt::format("critical path: not judged — {}\n\n", c.why);
  if (c.ok) {
    md += fmt::format(
        "critical path ({}): host work {} · CPU ops (dispatch, launches) {} · waiting on kernels {} · waiting on "
        "copies {}; `--what-if` predicts fixes from it\n\nuntraced step P50 predicted {} (recorded {}); the "
        "recorder's cost: {}\n\n",
        c.model, pct(c.host_share), pct(c.cpu_ops_share), pct(c.wait_kernels_share), pct(c.wait_copies_share),
        ms(c.untraced_step_p50_ns), ms(c.recorded_step_p50_ns), c.correction);
    if (!c.top_ops.empty()) md += fmt::format("(the CPU op holding most of it: {})\n\n", c.top_ops.front().first);
  }
  md += fmt::format("{} events, wall {}, {} kernels, {} copies{}\n\n{}\n", a.events, ms(b.wall_ns), a.kernels,
                    a.copies.count, a.window.empty() ? "" : "; judged over the steps: " + a.window,
                    breakdown_table(a).markdown());
  if (!a.step_ns.empty()) {
    const auto s = stats::summarize(std::vector<double>(a.step_ns.begin(), a.step_ns.end()));
    md += fmt::format("steps: {} (ProfilerStep#), P50 {}, max {}\n\n", a.step_ns.size(),
                      ms(static_cast<int64_t>(s.p50)), ms(static_cast<int64_t>(s.max)));
  }
  md += kernels_table(a).markdown() + "\n";
  if (!a.findings.empty()) {
    Table tf{{"severity", "finding", "title", "saving", "fix"}, {}};
    for (const auto& f : a.findings) {
      tf.rows.push_back({std::string(to_string(f.severity)), f.id, f.title,
                         f.saving_ratio ? pct(*f.saving_ratio) + " of wall" : "", abbreviate(f.fix, 90)});
    }
    md += tf.markdown();
  }
  return md;
}

}  // namespace gsq::analyze
