// `gpusqueeze trt audit LOG... [--profile P.json] [--layers L.json] [--onnx M.onnx] [--shapes TRACE] [--shape n:dims]`:
// a TensorRT build and run audited from trtexec's log and JSON exports, the model and a trace, on any machine.
#include "cli/common.hpp"

#include "analyze/kineto.hpp"
#include "core/error.hpp"
#include "core/json_io.hpp"
#include "core/table.hpp"
#include "report/report.hpp"
#include "triage/trt_inputs.hpp"
#include "triage/trtexec.hpp"

#include <fmt/format.h>

#include <iostream>

namespace gsq::cli {

namespace {

struct TrtCliOptions {
  std::vector<std::string> logs, shapes;
  std::string profile, layers, onnx, shapes_trace;
  bool json = false, partial = false;
  size_t top = 10;
};

int run_trt_audit(const TrtCliOptions& o) {
  std::vector<triage::TrtRun> runs;
  for (const auto& f : o.logs) {
    auto r = triage::parse_trtexec_log(read_text_file(f), f, o.partial);
    runs.insert(runs.end(), std::make_move_iterator(r.begin()), std::make_move_iterator(r.end()));
  }
  std::vector<triage::TrtLayerTime> times;
  if (!o.profile.empty())
    times = triage::parse_trt_profile(parse_any_json(read_text_file(o.profile), o.profile), o.profile);
  std::vector<triage::TrtLayerInfo> layers;
  if (!o.layers.empty())
    layers = triage::parse_trt_layers(parse_any_json(read_text_file(o.layers), o.layers), o.layers);
  std::optional<triage::OnnxModel> model;
  if (!o.onnx.empty()) model = triage::read_onnx(read_text_file(o.onnx), o.onnx);
  std::vector<triage::ObservedShapes> observed;
  auto shapes = o.shapes;
  if (!o.shapes_trace.empty()) {
    const auto templates = triage::shape_templates(runs, model ? &*model : nullptr);
    if (templates.empty())
      throw_bad_input(
          fmt::format("--shapes {}: no input to look for — neither the model (--onnx) nor a profile in the "
                      "logs fixes any dimension of an input; pass --shape NAME:DIMS instead",
                      o.shapes_trace));
    observed = triage::shapes_from_trace(analyze::read_maybe_gzip(o.shapes_trace), o.shapes_trace, templates);
    for (const auto& x : observed)
      for (const auto& [dims, steps] : x.shapes) {
        shapes.push_back(x.input + ":" + triage::dims_text(dims));
      }
  }
  auto a = triage::audit_trt(runs, std::move(times), std::move(layers), shapes);
  std::vector<size_t> builds;
  if (model) {
    builds = triage::builds_of(*model, o.onnx, a.runs);
    triage::onnx_findings(*model, a.runs, builds, a.findings);
  }
  triage::opt_findings(observed, a.runs, a.findings);
  if (o.json) {
    auto j = triage::to_json(a);
    j["model"] = model ? triage::to_json(*model) : nlohmann::json(nullptr);
    if (model) {
      nlohmann::json b = nlohmann::json::array();
      for (size_t i : builds) b.push_back(i + 1);
      j["model"]["builds"] = b;  // the runs (1-based) judged against the model
    }
    j["observed_shapes"] = triage::to_json(observed);
    std::cout << j.dump(2) << '\n';
  } else {
    Table t{{"run", "command", "TensorRT", "precision", "workspace", "throughput", "GPU compute P50", "lines read"},
            {}};
    for (size_t i = 0; i < a.runs.size(); ++i) {
      const auto& r = a.runs[i];
      t.rows.push_back({std::to_string(i + 1), abbreviate(r.command, 60), r.trt_version, r.precision,
                        r.workspace_mib ? fmt::format("{:.6g} MiB", *r.workspace_mib) : "default",
                        r.throughput_qps ? fmt::format("{:.0f} qps", *r.throughput_qps) : "-",
                        r.gpu_compute_median_ms ? fmt::format("{:.4f} ms", *r.gpu_compute_median_ms) : "-",
                        fmt::format("{} of {}", r.recognized, r.lines)});
    }
    std::cout << "# TensorRT audit\n\n" << t.markdown();
    if (model) {
      Table m{{"model input", "dtype", "shape"}, {}};
      for (const auto& i : model->inputs) m.rows.push_back({i.name, i.dtype, i.shape()});
      std::string runs_judged;
      for (size_t i : builds) runs_judged += fmt::format("{}{}", runs_judged.empty() ? "" : ", ", i + 1);
      std::cout << fmt::format("\n## Model ({}{}{}, IR {}, opset {})\n\n", report::display_name(o.onnx),
                               model->producer.empty() ? "" : ", from ", model->producer, model->ir_version,
                               model->opset)
                << m.markdown()
                << (builds.empty() ? std::string("\nNo build in the logs is of this model (by file name or inputs).\n")
                                   : fmt::format("\nBuilds of this model in the logs: trtexec run{} {}.\n",
                                                 builds.size() > 1 ? "s" : "", runs_judged));
    }
    if (!o.shapes_trace.empty()) {
      Table m{{"input", "shape seen", "steps", "read from op"}, {}};
      for (const auto& x : observed)
        for (const auto& [dims, steps] : x.shapes) {
          m.rows.push_back({x.input, triage::dims_text(dims), std::to_string(steps), x.op});
        }
      std::cout << fmt::format("\n## Shapes the trace saw ({})\n\n", report::display_name(o.shapes_trace))
                << (observed.empty() ? std::string("No op of the trace had a tensor matching an input.\n")
                                     : m.markdown());
    }
    if (!a.layer_times.empty()) {
      Table l{{"layer", "median ms", "share"}, {}};
      for (size_t i = 0; i < std::min(o.top, a.layer_times.size()); ++i)
        l.rows.push_back({abbreviate(a.layer_times[i].name, 80), fmt::format("{:.4f}", a.layer_times[i].median_ms),
                          fmt::format("{:.2f}%", a.layer_times[i].percentage)});
      std::cout << fmt::format("\n## Slowest layers (reformatting: {:.1f}% of the time)\n\n", 100 * a.reformat_share)
                << l.markdown();
    }
    if (!a.layers.empty() && !a.layers.front().type.empty()) {
      Table l{{"layer", "type", "outputs", "tactic"}, {}};
      for (const auto& x : a.layers) {
        std::string types;
        for (const auto& ty : x.output_types) types += (types.empty() ? "" : ", ") + ty;
        l.rows.push_back({abbreviate(x.name, 48), x.type, types, abbreviate(x.tactic, 48)});
      }
      std::cout << "\n## Layers\n\n" << l.markdown();
    }
    if (!a.findings.empty()) std::cout << "\n## Findings\n\n" << report::findings_table(a.findings).markdown();
  }
  return worst(a.findings) == Severity::fail ? static_cast<int>(ExitCode::findings) : 0;
}

}  // namespace

Action register_trt(CLI::App& app) {
  auto o = std::make_shared<TrtCliOptions>();
  auto* trt = app.add_subcommand("trt", "TensorRT: audit a build and its runs from trtexec's logs and JSON exports");
  trt->require_subcommand(1);
  auto* cmd =
      trt->add_subcommand("audit", "Read trtexec logs (and --exportProfile / --exportLayerInfo JSON): findings");
  cmd->footer(
      "Reads what trtexec already wrote, on any machine: the command, version, device, build options, memory pools,\n"
      "precision, optimization profiles, shapes trtexec chose by itself, workspace shortfalls, the performance\n"
      "summary and its warnings. What is true, against common advice: there is no max_workspace_size in TensorRT 10\n"
      "(setMemoryPoolLimit, trtexec --memPoolSize=workspace:1024M — M, not MiB); a shape outside every optimization\n"
      "profile is an error at run time, not a fallback to the worst profile; the --fp16/--int8 weak-typing flags and\n"
      "calibrators are deprecated in TensorRT 10 and gone in 11 (strong typing and explicit Q/DQ instead); a dynamic\n"
      "input given no shapes is built and timed at the shape trtexec picks (1×…).\n"
      "Exit codes: 0 ok, 1 a fail-level finding, 2 unreadable, truncated (see --partial) or not a trtexec file.\n"
      "Examples:\n"
      "  gpusqueeze trt audit build.log run.log\n"
      "  gpusqueeze trt audit run.log --profile profile.json --layers layers.json\n"
      "  gpusqueeze trt audit build.log --shape x:32x1x28x28      a shape seen in production, against the profiles\n"
      "  gpusqueeze trt audit build.log --onnx model.onnx --shapes serve.pt.trace.json.gz\n"
      "      the model's inputs against the profiles; the shapes a PyTorch-profiler trace (record_shapes=True)\n"
      "      fed to the model, against the profiles and their opt");
  cmd->add_option("logs", o->logs, "trtexec logs (stdout with --verbose is best)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--profile", o->profile, "trtexec --exportProfile JSON")->check(CLI::ExistingFile);
  cmd->add_option("--layers", o->layers, "trtexec --exportLayerInfo JSON")->check(CLI::ExistingFile);
  cmd->add_option("--shape", o->shapes, "An observed input shape, NAME:DxDxD (repeatable)");
  cmd->add_option("--onnx", o->onnx,
                  triage::onnx_supported()
                      ? "The ONNX model the engine was built from: its inputs, against the profiles"
                      : "The ONNX model (not in this build: it lacks libonnx-dev)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--shapes", o->shapes_trace,
                  "A PyTorch-profiler trace recorded with record_shapes=True: the input shapes it saw (per step, the "
                  "first op with a tensor matching an input's fixed dimensions)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--top", o->top, "Slowest layers to list")->check(CLI::Range(1, 10000))->capture_default_str();
  cmd->add_flag("--json", o->json, "Print gpusqueeze.trt-audit/1 JSON");
  cmd->add_flag("--partial", o->partial, "Audit a log that ends inside a run (cut, or trtexec died)");
  return [o, cmd] {
    if (!cmd->parsed()) return static_cast<int>(ExitCode::bad_input);
    return run_trt_audit(*o);
  };
}

}  // namespace gsq::cli
