// What a TensorRT build is for, from files the user has besides trtexec's: the ONNX model's inputs (read with the ONNX
// project's own protobuf schema, Debian's libonnx-dev) and the input shapes a PyTorch-profiler trace recorded
// (record_shapes=True: the "Input Dims" of each CPU op).
#pragma once

#include "triage/trtexec.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gsq::triage {

// {8, 1, 28, 28} → "8x1x28x28", as trtexec writes shapes.
[[nodiscard]] std::string dims_text(const std::vector<int64_t>& d);

struct OnnxInput {
  std::string name, dtype;                   // "FLOAT", "FLOAT16", ...
  std::vector<std::optional<int64_t>> dims;  // nullopt: dynamic (a symbolic dim_param or none)
  std::vector<std::string> dim_names;        // dim_param where it has one ("batch"), else ""
  [[nodiscard]] bool dynamic() const;
  [[nodiscard]] std::string shape() const;  // "batchx3x224x224"
};

struct OnnxModel {
  std::string producer, producer_version;
  int64_t ir_version = 0, opset = 0;  // opset of the default domain
  std::vector<OnnxInput> inputs;      // graph inputs that are not initializers
};

// Is ONNX support compiled in (libonnx-dev found at build time)?
[[nodiscard]] bool onnx_supported() noexcept;
// Reads a .onnx file's graph inputs. Throws Error(bad_input) for a file that is not an ONNX model or has no graph,
// Error(no_gpu: exit 3, a library the command needs is missing) when the build has no ONNX reader.
[[nodiscard]] OnnxModel read_onnx(const std::string& bytes, const std::string& origin);

// An input to look for in a trace: its rank and the dimensions that never change (from the ONNX model, or the profiles'
// dimensions where min = opt = max). Inputs with no fixed dimension cannot be recognised and are left out.
struct ShapeTemplate {
  std::string input;
  std::vector<std::optional<int64_t>> dims;
};
[[nodiscard]] std::vector<ShapeTemplate> shape_templates(const std::vector<TrtRun>& runs, const OnnxModel* model);

struct ObservedShapes {
  std::string input;
  std::vector<std::pair<std::vector<int64_t>, int64_t>> shapes;  // shape → how many steps it fed, most common first
  std::string op;                                                // the CPU op it was read from (the most common)
};
// Per step (ProfilerStep#N; the whole trace when it has none) the first op, in time order, with a tensor matching a
// template gives that input's shape for the step. Throws Error(bad_input) for a trace without "Input Dims"
// (recorded without record_shapes=True).
[[nodiscard]] std::vector<ObservedShapes> shapes_from_trace(const std::string& trace_json, const std::string& origin,
                                                            const std::vector<ShapeTemplate>& templates);

// The builds (indices into runs) of this model: those whose --onnx has the model file's name; when none has, those
// whose profiles and auto-chosen shapes name only inputs the model has (the model was renamed or moved).
[[nodiscard]] std::vector<size_t> builds_of(const OnnxModel& model, const std::string& model_file,
                                            const std::vector<TrtRun>& runs);
// Findings from the model against those builds (dynamic inputs no profile covers, profiles naming inputs the model
// lacks or contradicting its fixed dimensions) and from observed shapes against each profile's opt.
void onnx_findings(const OnnxModel& model, const std::vector<TrtRun>& runs, const std::vector<size_t>& builds,
                   std::vector<Finding>& out);
void opt_findings(const std::vector<ObservedShapes>& observed, const std::vector<TrtRun>& runs,
                  std::vector<Finding>& out);

[[nodiscard]] nlohmann::json to_json(const OnnxModel& m);
[[nodiscard]] nlohmann::json to_json(const std::vector<ObservedShapes>& o);

}  // namespace gsq::triage
