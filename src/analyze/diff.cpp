// Trace diff and per-rank straggler detection.
#include "analyze/diff.hpp"

#include "core/stats.hpp"
#include "core/table.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

namespace gsq::analyze {

namespace {

double step_p50(const Analysis& a) {
  if (a.step_ns.empty()) return 0;
  return stats::percentile(std::vector<double>(a.step_ns.begin(), a.step_ns.end()), 0.5);
}

std::set<std::string> finding_ids(const Analysis& a, Severity at_least) {
  std::set<std::string> s;
  for (const auto& f : a.findings)
    if (f.severity >= at_least) s.insert(f.id);
  return s;
}

std::string ms(double ns) {
  return fmt::format("{:.3f} ms", ns / 1e6);
}
std::string us(double ns) {
  return ns > 0 ? fmt::format("{:.2f} µs", ns / 1e3) : std::string("-");
}
std::string change(double before, double after) {
  if (before == 0) return after == 0 ? "=" : "new";
  return fmt::format("{:+.1f}%", 100 * (after / before - 1));
}

}  // namespace

double host_speed_ratio(const Analysis& before, const Analysis& after) {
  if (before.median_eager_launch_ns <= 0 || after.median_eager_launch_ns <= 0) return 0;
  return static_cast<double>(before.median_eager_launch_ns) / static_cast<double>(after.median_eager_launch_ns);
}

double kernels_per_step_ratio(const Analysis& before, const Analysis& after) {
  if (before.step_ns.empty() || after.step_ns.empty() || before.kernels == 0) return 0;
  return (static_cast<double>(after.kernels) / static_cast<double>(after.step_ns.size())) /
         (static_cast<double>(before.kernels) / static_cast<double>(before.step_ns.size()));
}

nlohmann::json diff_json(const Analysis& before, const Analysis& after) {
  using nlohmann::json;
  const auto fb = finding_ids(before, Severity::info), fa = finding_ids(after, Severity::info);
  json gained = json::array(), lost = json::array();
  for (const auto& id : fa)
    if (!fb.contains(id)) gained.push_back(id);
  for (const auto& id : fb)
    if (!fa.contains(id)) lost.push_back(id);
  std::map<std::string, std::pair<const KernelGroup*, const KernelGroup*>> k;
  for (const auto& g : before.top_kernels) k[g.name].first = &g;
  for (const auto& g : after.top_kernels) k[g.name].second = &g;
  json kernels = json::array();
  for (const auto& [name, p] : k) {
    kernels.push_back({{"name", name},
                       {"count_before", p.first ? p.first->count : 0},
                       {"count_after", p.second ? p.second->count : 0},
                       {"total_ns_before", p.first ? p.first->total_ns : 0},
                       {"total_ns_after", p.second ? p.second->total_ns : 0}});
  }
  auto side = [](const Analysis& a) {
    return json{{"verdict", a.verdict.cls},
                {"wall_ns", a.breakdown.wall_ns},
                {"steps", a.step_ns.size()},
                {"step_p50_ns", step_p50(a)},
                {"kernels", a.kernels},
                {"copies", a.copies.count},
                {"pageable_copies", a.copies.pageable},
                {"synchronous_copies", a.copies.synchronous},
                {"syncs",
                 [&] {
                   size_t n = 0;
                   for (const auto& s : a.syncs) n += s.count;
                   return n;
                 }()},
                {"idle_host_ns", a.breakdown.idle_host_ns},
                {"idle_sync_ns", a.breakdown.idle_sync_ns},
                {"idle_launch_ns", a.breakdown.idle_launch_ns},
                {"idle_queued_ns", a.breakdown.idle_queued_ns},
                {"kernel_busy_ns", a.breakdown.kernel_busy_ns},
                {"median_eager_launch_ns", a.median_eager_launch_ns}};
  };
  const double speed = host_speed_ratio(before, after);
  return json{{"schema", "gpusqueeze.diff/1"},
              {"before", side(before)},
              {"after", side(after)},
              {"findings_gained", gained},
              {"findings_lost", lost},
              {"kernels", kernels},
              {"host_speed", {{"launch_ratio", speed}, {"comparable", hosts_comparable(speed)}}}};
}

std::string diff_markdown(const Analysis& before, const Analysis& after) {
  const auto j = diff_json(before, after);
  const auto& b = j["before"];
  const auto& a = j["after"];
  Table t{{"", "before", "after", "change"}, {}};
  auto row = [&](const char* label, const char* key, bool time) {
    const double x = b[key].get<double>(), y = a[key].get<double>();
    t.rows.push_back(
        {label, time ? ms(x) : fmt::format("{:.0f}", x), time ? ms(y) : fmt::format("{:.0f}", y), change(x, y)});
  };
  t.rows.push_back({"verdict", b["verdict"], a["verdict"], b["verdict"] == a["verdict"] ? "=" : "changed"});
  row("step time P50", "step_p50_ns", true);
  row("wall time", "wall_ns", true);
  row("GPU kernels running", "kernel_busy_ns", true);
  row("GPU idle: host", "idle_host_ns", true);
  row("GPU idle: after syncs", "idle_sync_ns", true);
  row("GPU idle: launches", "idle_launch_ns", true);
  row("GPU idle: next work queued", "idle_queued_ns", true);
  row("kernels", "kernels", false);
  row("copies", "copies", false);
  row("pageable copies", "pageable_copies", false);
  row("synchronous copies", "synchronous_copies", false);
  row("host syncs", "syncs", false);
  const double lb = b["median_eager_launch_ns"].get<double>(), la = a["median_eager_launch_ns"].get<double>();
  t.rows.push_back({"median cudaLaunchKernel call", us(lb), us(la), change(lb, la)});
  std::string md = t.markdown();
  if (const double r = j["host_speed"]["launch_ratio"].get<double>(); !hosts_comparable(r))
    md += fmt::format(
        "\nthe host ran {:.2f}× {} per CUDA call in the before recording than in the after one (median "
        "cudaLaunchKernel {} against {}; one program recorded twice on one machine stays within {:.2f}×): another "
        "load on the machine or other CPU clocks during one recording. Its host-side rows (host idle, launches, step "
        "time where the host sets it) compare the recordings as much as the change; record both again, or compare "
        "untraced step times.\n",
        r > 1 ? r : 1 / r, r > 1 ? "slower" : "faster", us(lb), us(la), kHostSpeedSpread);
  auto list = [](const nlohmann::json& arr) {
    std::string s;
    for (const auto& x : arr) s += (s.empty() ? "" : ", ") + x.get<std::string>();
    return s.empty() ? std::string("none") : s;
  };
  md += fmt::format("\nfindings gone: {}\nfindings new: {}\n", list(j["findings_lost"]), list(j["findings_gained"]));
  auto path = [](const Analysis& x) {
    const auto& c = x.critical_path;
    if (!c.ok) return std::string("not judged");
    return fmt::format("{} (host {:.0f}%, CPU ops {:.0f}%, kernels {:.0f}%, copies {:.0f}%)", c.verdict,
                       100 * c.host_share, 100 * c.cpu_ops_share, 100 * c.wait_kernels_share,
                       100 * c.wait_copies_share);
  };
  md += fmt::format("critical path: {} → {}\n", path(before), path(after));
  return md;
}

std::vector<Finding> rank_stragglers(const std::vector<Analysis>& ranks) {
  std::vector<Finding> out;
  if (ranks.size() < 2) return out;
  std::vector<double> t;
  for (const auto& r : ranks) t.push_back(r.step_ns.empty() ? static_cast<double>(r.breakdown.wall_ns) : step_p50(r));
  const double med = stats::percentile(t, 0.5);
  constexpr double kStragglerRatio = 1.2;  // 20% slower than the median rank
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (med <= 0 || t[i] <= kStragglerRatio * med) continue;
    Finding f;
    f.id = "rank-straggler";
    f.severity = Severity::warn;
    f.subject = fmt::format("rank {}", ranks[i].rank >= 0 ? ranks[i].rank : static_cast<int>(i));
    f.title = fmt::format("{} is {:.0f}% slower than the median rank", f.subject, 100 * (t[i] / med - 1));
    f.evidence = {{"time_ns", fmt::format("{:.0f}", t[i])},
                  {"median_rank_ns", fmt::format("{:.0f}", med)},
                  {"verdict_of_rank", ranks[i].verdict.cls}};
    f.saving_ratio = 1 - med / t[i];
    f.fix =
        "Every rank waits for the slowest at each collective: check that rank's GPU with `gpusqueeze doctor`, its data "
        "shard sizes, and its host (CPU affinity, other processes).";
    f.source = "step time above 1.2 × the median rank";
    f.step = 5;
    out.push_back(std::move(f));
  }
  return out;
}

RankBalance rank_balance(const std::vector<Analysis>& ranks) {
  RankBalance b;
  if (ranks.size() < 2) return b;
  b.table = Table{{"rank", "step P50", "compute (non-NCCL kernels)", "NCCL time", "NCCL not hidden", "verdict"}, {}};
  std::vector<double> compute;
  auto ms = [](double ns) { return fmt::format("{:.2f} ms", ns / 1e6); };
  for (size_t i = 0; i < ranks.size(); ++i) {
    const auto& r = ranks[i];
    const double c = static_cast<double>(std::max<int64_t>(0, r.breakdown.kernel_busy_ns - r.comm_ns));
    compute.push_back(c);
    b.table.rows.push_back({std::to_string(r.rank >= 0 ? r.rank : static_cast<int>(i)),
                            r.step_ns.empty() ? "-" : ms(step_p50(r)), ms(c), ms(static_cast<double>(r.comm_ns)),
                            ms(static_cast<double>(r.comm_exposed_ns)), r.verdict.cls});
  }
  const auto [lo, hi] = std::minmax_element(compute.begin(), compute.end());
  const size_t heavy = static_cast<size_t>(hi - compute.begin()), light = static_cast<size_t>(lo - compute.begin());
  constexpr double kUneven = 1.1;  // one rank computes 10% more than another: the others wait for it in collectives
  if (*lo > 0 && *hi > kUneven * *lo) {
    Finding f;
    f.id = "rank-uneven-work";
    f.severity = Severity::warn;
    const int hr = ranks[heavy].rank >= 0 ? ranks[heavy].rank : static_cast<int>(heavy);
    const int lr = ranks[light].rank >= 0 ? ranks[light].rank : static_cast<int>(light);
    f.subject = fmt::format("rank {}", hr);
    f.title = fmt::format("Rank {} runs {:.0f}% more GPU compute than rank {}; the lighter ranks wait for it in NCCL",
                          hr, 100 * (*hi / *lo - 1), lr);
    f.evidence = {{"compute_ns_heaviest", fmt::format("{:.0f}", *hi)},
                  {"compute_ns_lightest", fmt::format("{:.0f}", *lo)},
                  {"nccl_ns_lightest_rank", std::to_string(ranks[light].comm_ns)},
                  {"nccl_ns_heaviest_rank", std::to_string(ranks[heavy].comm_ns)}};
    f.saving_ratio = 1 - *lo / *hi;  // of the heaviest rank's compute: the most an even split could take off
    f.fix =
        "Give every rank the same work: split batches by tokens or samples evenly (pad or bucket variable-length "
        "inputs, DistributedSampler with drop_last), and check for a rank-0-only extra (logging, evaluation, "
        "checkpointing) inside the step.";
    f.source = "non-NCCL kernel time per rank, max above 1.1 × min";
    f.step = 5;
    b.findings.push_back(std::move(f));
  }
  return b;
}

}  // namespace gsq::analyze
