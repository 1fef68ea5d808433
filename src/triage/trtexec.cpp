// The TensorRT audit's findings and JSON (see trtexec.hpp).
#include "triage/trtexec.hpp"
#include "triage/trt_inputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace gsq::triage {

namespace {

Finding make(const char* id, Severity sev, std::string title, std::vector<Evidence> ev, std::string fix,
             std::string subject) {
  return make_finding(id, sev, std::move(title), std::move(ev), std::move(fix),
                      "trtexec's own log lines (TensorRT 10); trtexec --help for the option syntax", 4,
                      std::move(subject));
}

int major_of(const std::string& version) {
  return version.empty() ? 0 : std::atoi(version.c_str());
}

// "x:8x1x28x28" → ("x", {8,1,28,28}).
std::pair<std::string, std::vector<int64_t>> observed_shape(const std::string& s) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos) return {"", {}};
  std::vector<int64_t> d;
  std::string cur;
  for (char c : s.substr(colon + 1)) {
    if (c == 'x' || c == ',') {
      if (!cur.empty()) d.push_back(std::atoll(cur.c_str()));
      cur.clear();
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      cur += c;
    }
  }
  if (!cur.empty()) d.push_back(std::atoll(cur.c_str()));
  return {s.substr(0, colon), d};
}

void run_findings(const TrtRun& r, size_t index, const std::vector<std::string>& observed, std::vector<Finding>& out) {
  const std::string subject = fmt::format("trtexec run {} ({})", index + 1, r.builds() ? "build" : "inference");
  std::string pool_flag;
  {
    std::istringstream in(r.command);
    for (std::string w; in >> w;)
      if (w.starts_with("--memPoolSize=")) pool_flag = w;
  }
  if (r.workspace_mib && *r.workspace_mib < 16)
    out.push_back(make("trt-workspace-tiny", Severity::fail,
                       fmt::format("The workspace pool the engine was built with is {:.6g} MiB", *r.workspace_mib),
                       {{"memory_pools_workspace_mib", fmt::format("{:.6g}", *r.workspace_mib)},
                        {"command_flag", pool_flag.empty() ? "(none)" : pool_flag}},
                       "trtexec's sizes take the suffixes B, K, M, G (MiB is not one; a bare number is MiB): "
                       "--memPoolSize=workspace:1024M. In the API: IBuilderConfig::setMemoryPoolLimit("
                       "MemoryPoolType::kWORKSPACE, bytes) — max_workspace_size is gone since TensorRT 10",
                       subject));
  if (r.workspace_shortfalls > 0)
    out.push_back(make("trt-workspace-short", Severity::warn,
                       fmt::format("The builder skipped tactics {} times for want of workspace (one needed {} bytes)",
                                   r.workspace_shortfalls, r.workspace_needed_bytes),
                       {{"exceeded_mem_budget_lines", std::to_string(r.workspace_shortfalls)},
                        {"largest_need_bytes", std::to_string(r.workspace_needed_bytes)}},
                       fmt::format("Give the builder at least {} MiB of workspace (--memPoolSize=workspace:{}M) and "
                                   "rebuild: the faster tactics it skipped may be the ones that need it",
                                   (r.workspace_needed_bytes >> 20) + 1, (r.workspace_needed_bytes >> 20) + 1),
                       subject));
  for (const auto& [input, shape] : r.auto_shapes)
    out.push_back(
        make("trt-auto-shape", Severity::warn,
             fmt::format("Input {} is dynamic but no shapes were given: trtexec built and ran {} only", input, shape),
             {{"input", input}, {"shape_used", shape}},
             fmt::format("Give the range you serve: --minShapes={0}:… --optShapes={0}:… --maxShapes={0}:… "
                         "(one optimization profile per range; a request outside every profile is an "
                         "error at run time, not a fallback)",
                         input),
             subject));
  const bool weak = r.has_flag("--fp16") || r.has_flag("--int8") || r.has_flag("--bf16") || r.has_flag("--fp8") ||
                    r.has_flag("--best");
  if (weak && major_of(r.trt_version) >= 10)
    out.push_back(make("trt-weak-typing", Severity::info,
                       "Precision is chosen by weak-typing flags, deprecated in TensorRT 10 and removed in 11",
                       {{"trt_version", r.trt_version}, {"precision", r.precision}},
                       "Build strongly typed (--stronglyTyped) from a model whose precisions are in the graph, with "
                       "explicit Q/DQ nodes for INT8/FP8 (ModelOpt); calibrators go with the weak-typing flags",
                       subject));
  if (r.builds() && !r.has_flag("--timingCacheFile"))
    out.push_back(make("trt-no-timing-cache", Severity::info, "The build kept no timing cache",
                       {{"command", r.command.substr(0, 120)}},
                       "--timingCacheFile=model.cache: later builds of the same or similar models reuse the tactic "
                       "timings and take seconds instead of minutes (the cache is per GPU model and TensorRT version)",
                       subject));
  if (r.enqueue_bound)
    out.push_back(make(
        "trt-enqueue-bound", Severity::warn, "Throughput is bound by enqueue time, not by the GPU",
        {{"enqueue_median_ms", r.enqueue_median_ms ? fmt::format("{:.4f}", *r.enqueue_median_ms) : "?"},
         {"gpu_compute_median_ms", r.gpu_compute_median_ms ? fmt::format("{:.4f}", *r.gpu_compute_median_ms) : "?"}},
        r.has_flag("--useCudaGraph")
            ? "CUDA graphs are on already: batch more requests per enqueue, or move host work off the "
              "enqueuing thread"
            : "--useCudaGraph (in the API: capture enqueueV3 in a CUDA graph); batch more per call",
        subject));
  if (r.compute_cov_percent && *r.compute_cov_percent >= 5)
    out.push_back(
        make("trt-unstable", Severity::warn,
             fmt::format("GPU compute time varies by {:.1f}% (coefficient of variation)", *r.compute_cov_percent),
             {{"coefficient_of_variation_percent", fmt::format("{:.2f}", *r.compute_cov_percent)}},
             "Find out whether the clock moves: gpusqueeze jitter -- trtexec …; --useSpinWait removes the "
             "host's wake-up jitter from the timing",
             subject));
  // Observed shapes against this build's optimization profiles.
  for (const auto& o : observed) {
    const auto parsed = observed_shape(o);  // not a structured binding: clang 14 cannot capture one in a lambda
    const std::string& name = parsed.first;
    const std::vector<int64_t>& dims = parsed.second;
    bool any = false, inside = false;
    for (const auto& p : r.profiles) {
      // A profile is comparable only when min, opt and max all have the observed shape's rank.
      if (p.input != name || p.min_opt_max.size() != 3 ||
          std::any_of(p.min_opt_max.begin(), p.min_opt_max.end(),
                      [&](const std::vector<int64_t>& s) { return s.size() != dims.size(); }))
        continue;
      any = true;
      bool ok = true;
      for (size_t k = 0; k < dims.size(); ++k)
        ok = ok && dims[k] >= p.min_opt_max[0][k] && dims[k] <= p.min_opt_max[2][k];
      inside = inside || ok;
    }
    if (any && !inside)
      out.push_back(
          make("trt-shape-outside-profiles", Severity::fail,
               fmt::format("Observed shape {} of {} is outside every optimization profile", dims_text(dims), name),
               {{"observed", o}},
               "At run time this is an error (setInputShape fails), not a fallback: add a profile that "
               "covers it, or widen --maxShapes",
               subject));
  }
}

}  // namespace

TrtAudit audit_trt(std::vector<TrtRun> runs, std::vector<TrtLayerTime> times, std::vector<TrtLayerInfo> layers,
                   const std::vector<std::string>& observed) {
  TrtAudit a;
  a.runs = std::move(runs);
  a.layer_times = std::move(times);
  a.layers = std::move(layers);
  for (size_t i = 0; i < a.runs.size(); ++i) run_findings(a.runs[i], i, observed, a.findings);
  std::sort(a.layer_times.begin(), a.layer_times.end(),
            [](const TrtLayerTime& x, const TrtLayerTime& y) { return x.percentage > y.percentage; });
  size_t reformats = 0;
  for (const auto& t : a.layer_times)
    if (t.name.find("eformat") != std::string::npos) a.reformat_share += t.percentage / 100, ++reformats;
  if (a.reformat_share >= 0.05)
    a.findings.push_back(make(
        "trt-reformat-layers", Severity::warn,
        fmt::format("Reformatting layers take {:.1f}% of the engine's time ({} of them)", 100 * a.reformat_share,
                    reformats),
        {{"reformat_share", fmt::format("{:.3f}", a.reformat_share)}, {"reformat_layers", std::to_string(reformats)}},
        "Precision or layout changes between layers: keep neighbouring layers in one precision "
        "(explicit Q/DQ placement, --stronglyTyped), and give inputs and outputs the engine's "
        "own formats (--inputIOFormats/--outputIOFormats)",
        "engine profile"));
  // Layers left in FP32 in an engine built for lower precision (detailed layer info only).
  bool reduced = false;
  for (const auto& r : a.runs)
    reduced = reduced || r.precision.find("FP16") != std::string::npos || r.precision.find("INT8") != std::string::npos;
  size_t fp32 = 0, typed = 0;
  for (const auto& l : a.layers) {
    if (l.output_types.empty()) continue;
    ++typed;
    fp32 +=
        std::all_of(l.output_types.begin(), l.output_types.end(), [](const std::string& t) { return t == "Float"; });
  }
  if (reduced && typed > 0 && fp32 > 0)
    a.findings.push_back(
        make("trt-fp32-layers", Severity::info,
             fmt::format("{} of {} layers still output FP32 in a reduced-precision engine", fp32, typed),
             {{"fp32_layers", std::to_string(fp32)}, {"typed_layers", std::to_string(typed)}},
             "The builder found FP32 faster there, or had no lower-precision tactic: check the "
             "largest ones in the profile; force with --layerPrecisions only where measured faster",
             "engine layers"));
  return a;
}

nlohmann::json to_json(const TrtAudit& a) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& r : a.runs) {
    nlohmann::json profiles = nlohmann::json::array();
    for (const auto& p : r.profiles)
      profiles.push_back({{"profile", p.profile}, {"input", p.input}, {"min_opt_max", p.min_opt_max}});
    auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
    runs.push_back({{"command", r.command},
                    {"result", r.result},
                    {"trt_version", r.trt_version},
                    {"device", r.device},
                    {"precision", r.precision},
                    {"workspace_mib", opt(r.workspace_mib)},
                    {"profiles", profiles},
                    {"auto_shapes", r.auto_shapes},
                    {"workspace_shortfalls", r.workspace_shortfalls},
                    {"workspace_needed_bytes", r.workspace_needed_bytes},
                    {"throughput_qps", opt(r.throughput_qps)},
                    {"gpu_compute_median_ms", opt(r.gpu_compute_median_ms)},
                    {"enqueue_median_ms", opt(r.enqueue_median_ms)},
                    {"compute_cov_percent", opt(r.compute_cov_percent)},
                    {"enqueue_bound", r.enqueue_bound},
                    {"lines", r.lines},
                    {"lines_read", r.recognized},
                    {"lines_skipped", r.skipped},
                    {"other_samples", r.other_samples}});
  }
  nlohmann::json times = nlohmann::json::array();
  for (const auto& t : a.layer_times)
    times.push_back({{"name", t.name}, {"median_ms", t.median_ms}, {"percentage", t.percentage}});
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& l : a.layers)
    layers.push_back({{"name", l.name}, {"type", l.type}, {"tactic", l.tactic}, {"output_types", l.output_types}});
  return {{"schema", kTrtSchema},
          {"runs", runs},
          {"layer_times", times},
          {"layers", layers},
          {"reformat_share", a.reformat_share},
          {"findings", a.findings}};
}

}  // namespace gsq::triage
