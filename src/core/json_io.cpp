// File I/O for versioned JSON documents.
#include "core/json_io.hpp"

#include "core/error.hpp"
#include "core/gzip.hpp"

#include <fmt/format.h>

#include <fstream>

namespace gsq {

std::string read_text_file(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) throw_bad_input(fmt::format("{}: no such file", file.string()));
  if (std::filesystem::is_directory(file, ec))
    throw_bad_input(fmt::format("{}: is a folder, not a file", file.string()));
  std::ifstream in(file, std::ios::binary | std::ios::ate);
  if (!in) throw_bad_input(fmt::format("{}: cannot be opened for reading", file.string()));
  const auto size = static_cast<size_t>(in.tellg());
  in.seekg(0);
  // Read straight into the string, with room for a parser's padding, so a large trace is held once, not twice.
  std::string text;
  text.reserve(size + 64);
  text.resize(size);
  if (!in.read(text.data(), static_cast<std::streamsize>(size))) {
    throw_bad_input(fmt::format("{}: read failed after {} of {} bytes", file.string(), in.gcount(), size));
  }
  return text;
}

void write_text_file(const std::filesystem::path& file, const std::string& text) {
  const auto tmp = std::filesystem::path(file.string() + ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw_bad_input(fmt::format("{}: cannot be opened for writing", tmp.string()));
    out << text;
    if (!out.flush()) throw_bad_input(fmt::format("{}: write failed", tmp.string()));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) throw_bad_input(fmt::format("{}: cannot be written: {}", file.string(), ec.message()));
}

nlohmann::json parse_any_json(const std::string& text, const std::string& origin) {
  if (text.empty()) throw_bad_input(fmt::format("{}: empty file, expected JSON", origin));
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    const bool truncated = e.byte >= text.size();
    throw_bad_input(fmt::format("{}: {} at byte {}: {}", origin, truncated ? "truncated JSON" : "not valid JSON",
                                e.byte, e.what()));
  } catch (const nlohmann::json::exception& e) {
    // out_of_range: a number too large for any type, e.g. 5E83166 (found by the fuzzer).
    throw_bad_input(fmt::format("{}: not valid JSON: {}", origin, e.what()));
  }
}

nlohmann::json parse_json_text(const std::string& text, const std::string& origin, const std::string& expected_schema) {
  if (text.empty()) throw_bad_input(fmt::format("{}: empty file, expected a {} document", origin, expected_schema));
  nlohmann::json j = parse_any_json(text, origin);
  if (!j.is_object())
    throw_bad_input(fmt::format("{}: expected a JSON object with \"schema\": \"{}\"", origin, expected_schema));
  const auto it = j.find("schema");
  if (it == j.end() || !it->is_string()) {
    throw_bad_input(fmt::format("{}: no \"schema\" field; expected \"{}\"", origin, expected_schema));
  }
  if (it->get<std::string>() != expected_schema) {
    throw_bad_input(
        fmt::format("{}: schema is \"{}\", expected \"{}\"", origin, it->get<std::string>(), expected_schema));
  }
  return j;
}

nlohmann::json read_json_file(const std::filesystem::path& file, const std::string& expected_schema) {
  std::string text = read_text_file(file);
  if (is_gzip(text)) text = inflate_gzip(text, file.string());  // results are kept as .json.gz
  return parse_json_text(text, file.string(), expected_schema);
}

void write_json_file(const std::filesystem::path& file, const nlohmann::json& j) {
  write_text_file(file, j.dump(2) + "\n");
}

}  // namespace gsq
