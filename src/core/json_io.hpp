// Reading and writing versioned JSON files ("schema": "gpusqueeze.<kind>/N") with errors that name the problem.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace gsq {

// Reads FILE (plain or gzip-compressed) and checks its "schema" is `expected_schema` (e.g. "gpusqueeze.snapshot/1").
// Throws Error(bad_input) naming the file and the problem: missing, unreadable, truncated, not JSON, wrong schema.
[[nodiscard]] nlohmann::json read_json_file(const std::filesystem::path& file, const std::string& expected_schema);

// Parses text already in memory with the same checks; `origin` names it in messages.
[[nodiscard]] nlohmann::json parse_json_text(const std::string& text, const std::string& origin,
                                             const std::string& expected_schema);

// Parses JSON written by other tools (no schema to check); errors as above: exit 2 naming the byte.
[[nodiscard]] nlohmann::json parse_any_json(const std::string& text, const std::string& origin);

// Writes atomically (temp file + rename) so a killed run never leaves half a file.
void write_json_file(const std::filesystem::path& file, const nlohmann::json& j);

[[nodiscard]] std::string read_text_file(const std::filesystem::path& file);  // throws bad_input
void write_text_file(const std::filesystem::path& file, const std::string& text);

}  // namespace gsq
