// The ONNX model's inputs and a trace's observed input shapes for the TensorRT audit (see trt_inputs.hpp).
#include "triage/trt_inputs.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"

#include <fmt/format.h>

#if GSQ_HAVE_ONNX
#include <onnx/onnx_pb.h>
#endif

#include <algorithm>
#include <map>

namespace gsq::triage {

namespace {

Finding make(const char* id, Severity sev, std::string title, std::vector<Evidence> ev, std::string fix,
             std::string subject) {
  return make_finding(id, sev, std::move(title), std::move(ev), std::move(fix),
                      "the ONNX model's graph inputs; trtexec --help for the shape options", 4, std::move(subject));
}

double elements(const std::vector<int64_t>& d) {
  double n = 1;
  for (auto x : d) n *= static_cast<double>(std::max<int64_t>(x, 1));
  return n;
}

const OnnxInput* find_input(const OnnxModel& m, const std::string& name) {
  for (const auto& i : m.inputs)
    if (i.name == name) return &i;
  return nullptr;
}

}  // namespace

std::string dims_text(const std::vector<int64_t>& d) {
  std::string s;
  for (auto x : d) {
    if (!s.empty()) s += 'x';
    s += std::to_string(x);
  }
  return s;
}

bool OnnxInput::dynamic() const {
  return std::any_of(dims.begin(), dims.end(), [](const auto& d) { return !d.has_value(); });
}

std::string OnnxInput::shape() const {
  std::string s;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (k) s += 'x';
    s += dims[k] ? std::to_string(*dims[k]) : (dim_names[k].empty() ? std::string("?") : dim_names[k]);
  }
  return s;
}

#if GSQ_HAVE_ONNX
bool onnx_supported() noexcept {
  return true;
}

OnnxModel read_onnx(const std::string& bytes, const std::string& origin) {
  onnx::ModelProto proto;
  if (bytes.empty() || !proto.ParseFromString(bytes))
    throw_bad_input(fmt::format("{}: not an ONNX model (the protobuf does not parse as onnx.ModelProto)", origin));
  if (!proto.has_graph())
    throw_bad_input(fmt::format("{}: an ONNX file with no graph (ir_version {}, producer '{}')", origin,
                                proto.ir_version(), proto.producer_name()));
  OnnxModel m;
  m.producer = proto.producer_name();
  m.producer_version = proto.producer_version();
  m.ir_version = proto.ir_version();
  for (const auto& o : proto.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") m.opset = o.version();
  const auto& g = proto.graph();
  std::vector<std::string> weights;
  for (const auto& w : g.initializer()) weights.push_back(w.name());
  std::sort(weights.begin(), weights.end());
  for (const auto& v : g.input()) {
    if (std::binary_search(weights.begin(), weights.end(), v.name())) continue;  // a weight listed as an input
    OnnxInput in;
    in.name = v.name();
    if (v.type().has_tensor_type()) {
      const auto& t = v.type().tensor_type();
      in.dtype = onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t.elem_type()));
      for (const auto& d : t.shape().dim()) {
        in.dims.push_back(d.has_dim_value() && d.dim_value() > 0 ? std::optional<int64_t>(d.dim_value())
                                                                 : std::nullopt);
        in.dim_names.push_back(d.has_dim_param() ? d.dim_param() : "");
      }
    } else {
      in.dtype = "(not a tensor)";
    }
    m.inputs.push_back(std::move(in));
  }
  return m;
}
#else
bool onnx_supported() noexcept {
  return false;
}

OnnxModel read_onnx(const std::string&, const std::string& origin) {
  throw Error(ExitCode::no_gpu,
              fmt::format("{}: this build has no ONNX reader (built without Debian's libonnx-dev; install it and "
                          "rebuild)",
                          origin));
}
#endif

std::vector<ShapeTemplate> shape_templates(const std::vector<TrtRun>& runs, const OnnxModel* model) {
  std::vector<ShapeTemplate> out;
  auto has = [&](const std::string& name) {
    return std::any_of(out.begin(), out.end(), [&](const ShapeTemplate& t) { return t.input == name; });
  };
  auto fixed_somewhere = [](const std::vector<std::optional<int64_t>>& d) {
    return std::any_of(d.begin(), d.end(), [](const auto& x) { return x.has_value(); });
  };
  if (model)
    for (const auto& i : model->inputs)
      if (fixed_somewhere(i.dims)) out.push_back({i.name, i.dims});
  for (const auto& r : runs)
    for (const auto& p : r.profiles) {
      if (has(p.input) || p.min_opt_max.size() != 3) continue;
      const auto& [lo, opt, hi] = std::tie(p.min_opt_max[0], p.min_opt_max[1], p.min_opt_max[2]);
      if (lo.size() != hi.size() || opt.size() != lo.size()) continue;
      ShapeTemplate t{p.input, {}};
      for (size_t k = 0; k < lo.size(); ++k)
        t.dims.push_back(lo[k] == hi[k] ? std::optional<int64_t>(lo[k]) : std::nullopt);
      if (fixed_somewhere(t.dims)) out.push_back(std::move(t));
    }
  return out;
}

std::vector<ObservedShapes> shapes_from_trace(const std::string& trace_json, const std::string& origin,
                                              const std::vector<ShapeTemplate>& templates) {
  const auto j = parse_any_json(trace_json, origin);
  const auto* events = j.is_object() && j.contains("traceEvents") && j["traceEvents"].is_array() ? &j["traceEvents"]
                       : j.is_array()                                                            ? &j
                                                                                                 : nullptr;
  if (!events) throw_bad_input(fmt::format("{}: not a Chrome/Kineto trace (no traceEvents array)", origin));
  struct Op {
    double ts;
    std::string name;
    const nlohmann::json* dims;
  };
  std::vector<Op> ops;
  std::vector<std::pair<double, double>> steps;
  for (const auto& e : *events) {
    if (!e.is_object() || !e.contains("ph") || e["ph"] != "X" || !e.contains("ts") || !e["ts"].is_number()) continue;
    const std::string name = e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
    const double ts = e["ts"].get<double>();
    if (name.starts_with("ProfilerStep#") && e.contains("dur") && e["dur"].is_number())
      steps.emplace_back(ts, ts + e["dur"].get<double>());
    if (e.contains("args") && e["args"].is_object() && e["args"].contains("Input Dims") &&
        e["args"]["Input Dims"].is_array())
      ops.push_back({ts, name, &e["args"]["Input Dims"]});
  }
  if (ops.empty())
    throw_bad_input(
        fmt::format("{}: no CPU op carries \"Input Dims\": record the trace with "
                    "torch.profiler.profile(record_shapes=True)",
                    origin));
  std::stable_sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) { return a.ts < b.ts; });
  std::sort(steps.begin(), steps.end());
  auto step_of = [&](double ts) -> int64_t {
    if (steps.empty()) return 0;
    auto it = std::upper_bound(steps.begin(), steps.end(), std::make_pair(ts, 1e300));
    if (it == steps.begin()) return -1;
    --it;
    return ts <= it->second ? it - steps.begin() : -1;
  };
  std::vector<ObservedShapes> out;
  for (const auto& t : templates) {
    std::map<int64_t, std::pair<std::vector<int64_t>, std::string>> first;  // step → shape, op
    for (const auto& op : ops) {
      const int64_t step = step_of(op.ts);
      if (step < 0 || first.count(step)) continue;
      for (const auto& tensor : *op.dims) {
        if (!tensor.is_array() || tensor.size() != t.dims.size() || tensor.empty()) continue;
        std::vector<int64_t> d;
        bool ok = true;
        for (size_t k = 0; k < tensor.size() && ok; ++k) {
          ok = tensor[k].is_number_integer() && (!t.dims[k] || tensor[k].get<int64_t>() == *t.dims[k]);
          if (ok) d.push_back(tensor[k].get<int64_t>());
        }
        if (ok) {
          first[step] = {d, op.name};
          break;
        }
      }
    }
    if (first.empty()) continue;
    std::map<std::vector<int64_t>, int64_t> count;
    std::map<std::string, int64_t> by_op;
    for (const auto& [step, v] : first) ++count[v.first], ++by_op[v.second];
    ObservedShapes o{t.input, {count.begin(), count.end()}, ""};
    std::stable_sort(o.shapes.begin(), o.shapes.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    o.op = std::max_element(by_op.begin(), by_op.end(), [](const auto& a, const auto& b) {
             return a.second < b.second;
           })->first;
    out.push_back(std::move(o));
  }
  return out;
}

namespace {

// The --onnx file a trtexec command line builds from, as a file name ("model.onnx"), or "".
std::string onnx_of(const TrtRun& r) {
  const auto at = r.command.find("--onnx=");
  if (at == std::string::npos) return "";
  std::string path = r.command.substr(at + 7, r.command.find(' ', at) - at - 7);
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::vector<size_t> builds_of(const OnnxModel& model, const std::string& model_file, const std::vector<TrtRun>& runs) {
  std::string name = model_file.substr(model_file.rfind('/') + 1);
  std::vector<size_t> by_name, by_inputs;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    if (!r.builds()) continue;
    if (onnx_of(r) == name) by_name.push_back(i);
    bool all_known = true;
    for (const auto& p : r.profiles) all_known = all_known && find_input(model, p.input);
    for (const auto& a : r.auto_shapes) all_known = all_known && find_input(model, a.first);
    if (all_known) by_inputs.push_back(i);
  }
  return by_name.empty() ? by_inputs : by_name;
}

void onnx_findings(const OnnxModel& model, const std::vector<TrtRun>& runs, const std::vector<size_t>& builds,
                   std::vector<Finding>& out) {
  std::string names;
  for (const auto& i : model.inputs) {
    if (!names.empty()) names += ", ";
    names += i.name;
  }
  for (size_t ri : builds) {
    const auto& r = runs[ri];
    const std::string subject = fmt::format("trtexec run {} (build)", ri + 1);
    for (const auto& p : r.profiles) {
      const OnnxInput* in = find_input(model, p.input);
      if (!in) {
        out.push_back(
            make("trt-profile-unknown-input", Severity::fail,
                 fmt::format("Profile {} gives shapes for {}, which the model has no input called", p.profile, p.input),
                 {{"profile", std::to_string(p.profile)}, {"model_inputs", names}},
                 "Name the model's inputs in --minShapes/--optShapes/--maxShapes (trtexec --verbose lists "
                 "them); a misspelt name leaves the real input without a profile",
                 subject));
        continue;
      }
      for (size_t s = 0; s < p.min_opt_max.size(); ++s) {
        const auto& shape = p.min_opt_max[s];
        std::string why;
        if (shape.size() != in->dims.size())
          why = fmt::format("rank {} against the model's {}", shape.size(), in->dims.size());
        for (size_t k = 0; why.empty() && k < shape.size(); ++k)
          if (in->dims[k] && shape[k] != *in->dims[k])
            why = fmt::format("dimension {} is {} where the model fixes {}", k, shape[k], *in->dims[k]);
        if (why.empty()) continue;
        out.push_back(make("trt-profile-contradicts-model", Severity::fail,
                           fmt::format("Profile {} {} shape {} of {} does not fit the model's {}: {}", p.profile,
                                       s == 0   ? "min"
                                       : s == 1 ? "opt"
                                                : "max",
                                       dims_text(shape), p.input, in->shape(), why),
                           {{"model_shape", in->shape()}, {"profile_shape", dims_text(shape)}},
                           "Only the model's dynamic dimensions may vary between min and max; the build fails or "
                           "the profile is rejected",
                           subject));
        break;
      }
    }
    for (const auto& in : model.inputs) {
      if (!in.dynamic()) continue;
      const bool profiled = std::any_of(r.profiles.begin(), r.profiles.end(),
                                        [&](const TrtProfileShape& p) { return p.input == in.name; });
      const bool auto_shaped =
          std::any_of(r.auto_shapes.begin(), r.auto_shapes.end(), [&](const auto& a) { return a.first == in.name; });
      if (!profiled && !auto_shaped)  // an auto shape has its own finding (trt-auto-shape)
        out.push_back(make(
            "trt-dynamic-input-unprofiled", Severity::warn,
            fmt::format("Input {} ({}) is dynamic and this build's log shows no profile for it", in.name, in.shape()),
            {{"input", in.name}, {"model_shape", in.shape()}},
            fmt::format("Give the range you serve: --minShapes={0}:… --optShapes={0}:… "
                        "--maxShapes={0}:… (trtexec otherwise builds one shape)",
                        in.name),
            subject));
    }
  }
}

void opt_findings(const std::vector<ObservedShapes>& observed, const std::vector<TrtRun>& runs,
                  std::vector<Finding>& out) {
  for (size_t ri = 0; ri < runs.size(); ++ri) {
    const auto& r = runs[ri];
    for (const auto& o : observed) {
      int64_t total = 0;
      for (const auto& s : o.shapes) total += s.second;
      const auto& common = o.shapes.front();
      for (const auto& p : r.profiles) {
        if (p.input != o.input || p.min_opt_max.size() != 3 || p.min_opt_max[1].size() != common.first.size()) continue;
        const double ratio = elements(p.min_opt_max[1]) / elements(common.first);
        if (ratio <= 2.0 && ratio >= 0.5) continue;
        out.push_back(make(
            "trt-opt-far", Severity::warn,
            fmt::format("Profile {} optimises {} for {}, {:.3g}× the elements of the shape served most ({}, {} of {} "
                        "steps)",
                        p.profile, o.input, dims_text(p.min_opt_max[1]), ratio, dims_text(common.first), common.second,
                        total),
            {{"opt", dims_text(p.min_opt_max[1])},
             {"most_common_observed", dims_text(common.first)},
             {"observed_from_op", o.op}},
            fmt::format("TensorRT picks each layer's tactic for opt: rebuild with --optShapes={}:{} (or one "
                        "profile per serving range)",
                        o.input, dims_text(common.first)),
            fmt::format("trtexec run {} ({})", ri + 1, r.builds() ? "build" : "inference")));
      }
    }
  }
}

nlohmann::json to_json(const OnnxModel& m) {
  nlohmann::json inputs = nlohmann::json::array();
  for (const auto& i : m.inputs) inputs.push_back({{"name", i.name}, {"dtype", i.dtype}, {"shape", i.shape()}});
  return {{"producer", m.producer},
          {"producer_version", m.producer_version},
          {"ir_version", m.ir_version},
          {"opset", m.opset},
          {"inputs", inputs}};
}

nlohmann::json to_json(const std::vector<ObservedShapes>& o) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& x : o) {
    nlohmann::json shapes = nlohmann::json::array();
    for (const auto& [d, n] : x.shapes) shapes.push_back({{"shape", dims_text(d)}, {"steps", n}});
    a.push_back({{"input", x.input}, {"op", x.op}, {"shapes", shapes}});
  }
  return a;
}

}  // namespace gsq::triage
