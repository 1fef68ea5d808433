// The analyses over one trace: the stages of stages.hpp in order, then the fixes users make, lost records and the
// critical path's judgement of the verdict.
#include "analyze/analysis.hpp"

#include "analyze/copies_syncs.hpp"
#include "analyze/fix_findings.hpp"
#include "analyze/stages.hpp"

#include "analyze/gaps.hpp"
#include "analyze/trace_facts.hpp"
#include "analyze/trace_finding.hpp"
#include "analyze/whatif.hpp"

#include <fmt/format.h>

#include <algorithm>
namespace gsq::analyze {

using namespace detail;

Analysis analyze(const Trace& t, const Thresholds& th) {
  Analysis a;
  a.origin = t.origin;
  a.source = t.source;
  a.rank = t.rank;
  a.events = t.events.size();
  a.window = t.window;

  const TraceIndex ix = index_trace(t, a);
  classify_gaps(
      t, th,
      {ix.gpu_busy, ix.wall_lo, ix.wall_hi, ix.gpu_ops, ix.runtime_by_corr, ix.runtime_by_thread, ix.outer, ix.one_off},
      a.breakdown);
  const KernelTally k = tally_kernels(t, ix, a);
  a.copies = detail::copy_stats(t, ix.runtime_by_corr, ix.kernel_busy, th);
  a.syncs = detail::sync_points(t, ix.outer);
  for (const auto& e : t.events)
    if (e.kind == Kind::annotation && is_step_marker(t.name(e))) a.step_ns.push_back(e.dur_ns);
  const Shares s = judge_by_shares(ix, k, a);
  refine_verdict(t, ix, k, s, th, a);
  time_findings(t, ix, k, s, th, a);
  // The fixes users make, each with a saving calibrated on the real-model corpus.
  auto& fs = a.findings;
  detail::fix_findings(t, a, k.fixes, k.kernel_sum, s.wall, a.breakdown.wall_ns, fs);
  if (t.lost_gpu_records + t.lost_cpu_records > 0) {
    Finding f = finding("incomplete-trace", 1.0,
                        fmt::format("The recorder lost {} GPU and {} CPU records: every figure here is judged on "
                                    "incomplete data",
                                    t.lost_gpu_records, t.lost_cpu_records),
                        {{"lost_gpu_records", std::to_string(t.lost_gpu_records)},
                         {"lost_cpu_records", std::to_string(t.lost_cpu_records)}},
                        0,
                        "Record again with a larger pool (gpusqueeze trace --buffer-mb 1024), a shorter window "
                        "(--delay/--duration), or --cpu-api none; the writer could not keep up with the program.",
                        "any record lost (the tracer's stats chunk)", a.breakdown.wall_ns);
    f.severity = Severity::warn;
    fs.insert(fs.begin(), std::move(f));
    a.verdict.summary += " Judged on incomplete data: records were lost.";
  }
  judge_by_critical_path(t, a, {.untraced_step_ns = th.untraced_step_ns, .record_ns = th.recorder_record_ns});
  rank_findings(a.findings);  // read in order: the worst and largest first, a specific cause before its whole
  // Lost records qualify every other finding: said first.
  std::stable_partition(a.findings.begin(), a.findings.end(),
                        [](const Finding& f) { return f.id == "incomplete-trace"; });
  return a;
}

}  // namespace gsq::analyze
