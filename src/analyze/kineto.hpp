// Importer for PyTorch-profiler / Kineto Chrome-trace JSON (plain or .gz): the events the analyses need, streamed.
#pragma once

#include "analyze/model.hpp"

#include <filesystem>
#include <string>

namespace gsq::analyze {

// Throws Error(bad_input) naming the problem: unreadable, truncated or corrupt gzip, not JSON, not a trace (no
// traceEvents), empty, no GPU events, or CPU and GPU timestamps on different clocks.
[[nodiscard]] Trace load_kineto(const std::filesystem::path& file);
[[nodiscard]] Trace parse_kineto(std::string_view json_text, const std::string& origin);  // copies into a padded buffer

// Reads a file, inflating it when it starts with the gzip magic. The string holds kJsonPadding spare bytes past its
// size, so the parser can read it in place. Throws Error(bad_input).
[[nodiscard]] std::string read_maybe_gzip(const std::filesystem::path& file);
inline constexpr size_t kJsonPadding = 64;  // simdjson::SIMDJSON_PADDING

}  // namespace gsq::analyze
