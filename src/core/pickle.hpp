// A Python pickle reader that builds data and never executes anything: it accepts the opcodes of plain values (None,
// booleans, integers, floats, strings, bytes, lists, tuples, dicts, sets as lists, the memo) and refuses every opcode
// that imports or calls (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, EXT*, PERSID) with a clear error.
// That is what PyTorch's allocator snapshots (`torch.cuda.memory._dump_snapshot`, read by `memory`) and its NCCL Flight
// Recorder dumps (read by `nccl analyze`) hold. Shared memo entries stay shared (a frame list referenced by thousands
// of blocks is one object), so large snapshots read in one pass.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gsq {

struct PyValue;
using PyList = std::vector<PyValue>;
using PyDict = std::vector<std::pair<PyValue, PyValue>>;

struct PyValue {
  enum class Type : uint8_t { none, boolean, integer, floating, string, bytes, list, tuple, dict };
  Type type = Type::none;
  bool boolean = false;
  int64_t integer = 0;
  double floating = 0;
  std::shared_ptr<std::string> text;  // string or bytes
  std::shared_ptr<PyList> items;      // list or tuple
  std::shared_ptr<PyDict> entries;    // dict

  [[nodiscard]] bool is(Type t) const noexcept { return type == t; }
  [[nodiscard]] bool is_sequence() const noexcept { return type == Type::list || type == Type::tuple; }
  // Dict member by string key, or nullptr (also when this is not a dict).
  [[nodiscard]] const PyValue* get(std::string_view key) const noexcept;
  // Typed reads of a dict member, with a fallback when absent or of another type (bool counts as an integer).
  [[nodiscard]] int64_t int_or(std::string_view key, int64_t fallback) const noexcept;
  [[nodiscard]] std::string str_or(std::string_view key, std::string fallback) const;
  [[nodiscard]] const PyList& list_or_empty(std::string_view key) const noexcept;
  [[nodiscard]] std::string_view type_name() const noexcept;  // "dict", "list", ... as Python names them
};

// Parses a pickle (protocols 0-5, the value opcodes). Throws Error(bad_input) naming `origin`, the byte offset and the
// reason: a refused opcode (with its name), truncation, a bad memo reference, an integer beyond 64 bits, nesting
// deeper than 10,000, or more than one value left on the stack.
[[nodiscard]] PyValue parse_pickle(std::string_view bytes, std::string_view origin);

}  // namespace gsq
