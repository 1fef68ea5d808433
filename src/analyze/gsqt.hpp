// Importer for gpusqueeze's own trace files (.gsqt, written by `gpusqueeze trace`), and the one entry point that
// picks the importer by content.
#pragma once

#include "analyze/model.hpp"
#include "trace/format.hpp"

#include <filesystem>

namespace gsq::analyze {

// Kernels, copies, memsets and syncs become GPU events, CUDA calls become runtime events, NVTX ranges annotations.
// Throws Error(bad_input) when the file holds no GPU work (a trace of a program that ran untraced says why).
[[nodiscard]] Trace from_gsqt(const trace::TraceFile& file);

// A .gsqt trace (by its magic) or Kineto / PyTorch-profiler JSON (plain or gzip).
[[nodiscard]] Trace load_trace(const std::filesystem::path& file);

}  // namespace gsq::analyze
