// String interning, copy-name parsing and kernel-name normalisation.
#include "analyze/model.hpp"

#include <cctype>

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

namespace {

// Template wrappers whose instantiations are different kernels: PyTorch's elementwise and reduction launchers (the
// functor is the kernel) and CUTLASS's kernel templates (the operator type names the tiling).
constexpr std::string_view kWrappers[] = {"vectorized_elementwise_kernel<>",
                                          "unrolled_elementwise_kernel<>",
                                          "elementwise_kernel<>",
                                          "index_elementwise_kernel<>",
                                          "reduce_kernel<>",
                                          "cutlass::Kernel<>",
                                          "cutlass::Kernel2<>",
                                          "cutlass::device_kernel<>"};

// Identifiers in a wrapper's template arguments that name plumbing, not the operation.
bool is_plumbing(std::string_view id) {
  static constexpr std::string_view kNoise[] = {"at",
                                                "native",
                                                "detail",
                                                "std",
                                                "c10",
                                                "cuda",
                                                "void",
                                                "float",
                                                "double",
                                                "int",
                                                "char",
                                                "bool",
                                                "unsigned",
                                                "long",
                                                "short",
                                                "const",
                                                "array",
                                                "Array",
                                                "Half",
                                                "BFloat16",
                                                "anonymous",
                                                "namespace",
                                                "lambda",
                                                "operator",
                                                "TensorIteratorBase",
                                                "TensorIterator",
                                                "gpu_kernel_impl",
                                                "ReduceOp",
                                                "func_wrapper_t",
                                                "AUnaryFunctor",
                                                "BUnaryFunctor",
                                                "BinaryFunctor",
                                                "binary_internal",
                                                "OffsetCalculator",
                                                "TrivialOffsetCalculator",
                                                "LoadWithoutCast",
                                                "StoreWithoutCast",
                                                "memory",
                                                "policies",
                                                "GeluType",
                                                "uint32_t",
                                                "int64_t",
                                                "cutlass"};
  for (auto n : kNoise)
    if (id == n) return true;
  return id.size() < 3;
}

// The first identifier of the template arguments that is not plumbing: the functor or the operator type.
std::string_view distinguishing_argument(std::string_view full) {
  const size_t open = full.find('<');
  if (open == std::string_view::npos) return {};
  for (size_t i = open + 1; i < full.size();) {
    const char c = full[i];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < full.size() && (std::isalnum(static_cast<unsigned char>(full[j])) || full[j] == '_')) ++j;
      const std::string_view id = full.substr(i, j - i);
      if (!is_plumbing(id)) return id;
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      while (i < full.size() && std::isalnum(static_cast<unsigned char>(full[i]))) ++i;  // 4, 2ul
    } else {
      ++i;
    }
  }
  return {};
}

}  // namespace

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
  if (out.empty()) return std::string(name);
  // Wrappers keep what tells their instantiations apart: vectorized_elementwise_kernel<MulFunctor>.
  for (auto w : kWrappers)
    if (out.ends_with(w))
      if (const auto arg = distinguishing_argument(text); !arg.empty()) out.insert(out.size() - 1, arg);
  return out;
}

}  // namespace gsq::analyze
