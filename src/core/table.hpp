// A plain text/markdown table: the CLI's human printer for every command.
#pragma once

#include <string>
#include <vector>

namespace gsq {

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  [[nodiscard]] std::string markdown() const;  // pipes, aligned columns; valid GitHub markdown
};

[[nodiscard]] std::string html_escape(std::string_view s);

// Long values (a 2 kB NVIDIA_REQUIRE_CUDA) shortened for tables: the head, then "… (N chars)". Data files keep them
// whole.
[[nodiscard]] std::string abbreviate(const std::string& s, size_t max_chars = 96);

}  // namespace gsq
