// CUDA out-of-memory errors as PyTorch prints them: the text users paste. Both wordings are read — before 2.1,
// "Tried to allocate X (GPU g; C total capacity; A already allocated; F free; R reserved in total by PyTorch)", and
// since, "Tried to allocate X. GPU g has a total capacity of C of which F is free. Process p has M memory in use. …
// Of the allocated memory A is allocated by PyTorch, and U is reserved by PyTorch but unallocated.", and the
// cudaMallocAsync backend's "Allocation on device g would exceed allowed memory … Requested : X …" — wrapped lines,
// launcher prefixes and repeats by several ranks included. Each message is judged by where the GPU's memory was when
// the request failed: inside PyTorch's cache but in pieces (fragmentation), outside this process's PyTorch (another
// process, a preallocating server, the context and libraries), or in PyTorch's live tensors (the workload does not
// fit). `gpusqueeze memory FILE` reads this text where FILE is not an allocator snapshot.
#pragma once

#include "core/finding.hpp"
#include "core/table.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gsq::triage {

inline constexpr const char* kOomSchema = "gpusqueeze.oom/1";

// One OOM message; sizes in bytes, absent where the wording has no such figure.
struct OomMessage {
  size_t line = 0;      // 1-based line of "Tried to allocate"
  std::string wording;  // "before-2.1" | "2.1+" | "cudaMallocAsync"
  std::optional<int> gpu;
  double tried = 0;
  std::optional<double> capacity, free, allocated;
  std::optional<double> reserved;              // reserved by PyTorch (before 2.1: "reserved in total"; 2.1+: A + U)
  std::optional<double> reserved_unallocated;  // reserved but not allocated: the cache's free bytes
  std::optional<double> this_process;          // "Including non-PyTorch memory, this process has M memory in use"
  std::optional<double> utilization;           // vLLM's start-up check: the gpu_memory_utilization it asked for
  std::vector<std::pair<std::string, double>> processes;  // "Process p has M memory in use", as listed
  // Memory on the GPU that PyTorch's allocator does not hold: capacity − free − reserved (other processes, this
  // process's CUDA context, NCCL and library workspaces).
  [[nodiscard]] std::optional<double> outside_pytorch() const;
};

struct OomReport {
  std::string origin;
  size_t lines = 0;
  std::vector<OomMessage> messages;
  size_t bare = 0;  // "out of memory" lines without the allocator's figures (a library's own cudaMalloc, CUDA errors)
  std::vector<Finding> findings;
};

// The CUDA context and library workspaces of one process (0.3–1 GiB on recent GPUs and CUDA 12; NCCL's buffers add
// more with many channels): memory outside PyTorch up to this much is the process's own overhead, not another's.
inline constexpr double kContextAllowanceBytes = 1.5 * (1ull << 30);
// A cause decides an OOM only where fixing it frees at least kMaterialShare of the GPU; fragmentation also needs the
// cache's free bytes to be kFragmentedShare of the live tensors or more (PyTorch's "reserved >> allocated"); a request
// of kHugeShare of the GPU or more names the single tensor. The first two from the OOM corpus (tests/data/oom/):
// kMaterialShare on its first 19 errors (caches of 1.6-4.4% of the GPU free on full GPUs were the last straw, the
// threads' fixes a smaller workload), kFragmentedShare after its fourth batch (the errors whose threads found
// fragmentation had free caches of 0.32-10.8x the live tensors, the too-large ones 0.00-0.10x but one); each held out
// on the batch gathered after it (bench/results/2026-12-07-cpu-oom-corpus).
inline constexpr double kMaterialShare = 0.05, kFragmentedShare = 0.25, kHugeShare = 0.25;

// Whether the text holds a CUDA out-of-memory error (the allocator's "Tried to allocate" or CUDA's "out of memory"),
// and is not a pickle (an allocator snapshot may hold those words in its frames).
[[nodiscard]] bool looks_like_oom_text(std::string_view text);
// Throws bad_input when the text holds none.
[[nodiscard]] OomReport read_oom_text(std::string_view text, const std::string& origin);
[[nodiscard]] nlohmann::json to_json(const OomReport& r);
// Each message's figures, a row per message (the first `rows`), in GiB: what `memory` and `report` print.
[[nodiscard]] Table oom_table(const OomReport& r, size_t rows);

}  // namespace gsq::triage
