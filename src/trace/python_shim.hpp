// gpusqueeze's Python shim: a sitecustomize.py put first on PYTHONPATH of a traced program, so that a PyTorch program
// shows what a trace without torch.profiler cannot (its DataLoader's waits as NVTX ranges) and, for `report -- CMD`'s
// memory run, records the allocator's history. It chains to the environment's own sitecustomize and never raises
// into the program: what it cannot do, it says on stderr.
#pragma once

#include <filesystem>

namespace gsq::trace {

// Writes DIR/sitecustomize.py. Throws Error(bad_input) when it cannot.
void write_python_shim(const std::filesystem::path& dir);

}  // namespace gsq::trace
