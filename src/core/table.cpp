// Markdown rendering of tables with aligned columns.
#include "core/table.hpp"

#include <algorithm>

namespace gsq {

namespace {
// Display width in code points, so UTF-8 units such as "°C" or "µs" keep columns aligned.
size_t display_width(const std::string& s) {
  return static_cast<size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}
}  // namespace

std::string Table::markdown() const {
  const size_t ncol = header.size();
  std::vector<size_t> width(ncol, 3);
  for (size_t c = 0; c < ncol; ++c) width[c] = std::max(width[c], display_width(cell(header[c])));
  for (const auto& r : rows)
    for (size_t c = 0; c < ncol && c < r.size(); ++c) width[c] = std::max(width[c], display_width(cell(r[c])));
  auto line = [&](const std::vector<std::string>& r) {
    std::string out = "|";
    for (size_t c = 0; c < ncol; ++c) {
      const std::string v = c < r.size() ? cell(r[c]) : "";
      out += ' ' + v + std::string(width[c] - display_width(v), ' ') + " |";
    }
    return out + '\n';
  };
  std::string out = line(header) + "|";
  for (size_t c = 0; c < ncol; ++c) out += std::string(width[c] + 2, '-') + "|";
  out += '\n';
  for (const auto& r : rows) out += line(r);
  return out;
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string abbreviate(const std::string& s, size_t max_chars) {
  if (s.size() <= max_chars) return s;
  size_t cut = max_chars;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // never split a UTF-8 sequence
  return s.substr(0, cut) + "… (" + std::to_string(s.size()) + " chars)";
}

}  // namespace gsq
