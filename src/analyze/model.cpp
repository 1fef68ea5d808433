// String interning, copy-name parsing and kernel-name normalisation.
#include "analyze/model.hpp"

namespace gsq::analyze {

uint32_t StringTable::intern(std::string_view s) {
  const auto it = index_.find(std::string(s));
  if (it != index_.end()) return it->second;
  const auto id = static_cast<uint32_t>(strings_.size());
  strings_.emplace_back(s);
  index_.emplace(strings_.back(), id);
  return id;
}

namespace {
MemKind mem_kind(std::string_view w) {
  if (w == "Pageable") return MemKind::pageable;
  if (w == "Pinned") return MemKind::pinned;
  if (w == "Device") return MemKind::device;
  if (w == "Managed") return MemKind::managed;
  return MemKind::unknown;
}
}  // namespace

void classify_copy(std::string_view name, Event& e) {
  if (name.find("HtoD") != std::string_view::npos)
    e.copy = CopyKind::htod;
  else if (name.find("DtoH") != std::string_view::npos)
    e.copy = CopyKind::dtoh;
  else if (name.find("DtoD") != std::string_view::npos)
    e.copy = CopyKind::dtod;
  else if (name.find("PtoP") != std::string_view::npos)
    e.copy = CopyKind::ptop;
  else
    e.copy = CopyKind::other;
  // "(Pageable -> Device)"
  const auto open = name.find('('), arrow = name.find(" -> "), close = name.rfind(')');
  if (open != std::string_view::npos && arrow != std::string_view::npos && close != std::string_view::npos &&
      open < arrow && arrow < close) {
    e.src = mem_kind(name.substr(open + 1, arrow - open - 1));
    e.dst = mem_kind(name.substr(arrow + 4, close - arrow - 4));
  }
}

std::string normalize_kernel_name(std::string_view name) {
  // "(anonymous namespace)" is a namespace, not a parameter list.
  std::string text(name);
  for (size_t p; (p = text.find("(anonymous namespace)")) != std::string::npos;) text.replace(p, 21, "{anon}");
  const std::string_view n = text;
  std::string out;
  out.reserve(n.size());
  int angle = 0, paren = 0;
  for (size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    if (c == '<') {
      if (angle++ == 0 && paren == 0) out += "<>";
      continue;
    }
    if (c == '>' && angle > 0) {
      --angle;
      continue;
    }
    if (angle > 0) continue;
    if (c == '(') {
      ++paren;
      continue;
    }
    if (c == ')' && paren > 0) {
      --paren;
      continue;
    }
    if (paren > 0) continue;
    out += c;
  }
  // "void at::native::foo<>" → "at::native::foo<>": the return type says nothing.
  if (out.starts_with("void ")) out.erase(0, 5);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.empty() ? std::string(name) : out;
}

}  // namespace gsq::analyze
