// PyValue's typed accessors (see pickle.hpp).
#include "core/pickle.hpp"

namespace gsq {

const PyValue* PyValue::get(std::string_view key) const noexcept {
  if (type != Type::dict) return nullptr;
  for (const auto& [k, v] : *entries)
    if (k.type == Type::string && *k.text == key) return &v;
  return nullptr;
}

int64_t PyValue::int_or(std::string_view key, int64_t fallback) const noexcept {
  const PyValue* v = get(key);
  if (!v) return fallback;
  if (v->type == Type::integer) return v->integer;
  if (v->type == Type::boolean) return v->boolean ? 1 : 0;
  return fallback;
}

std::string PyValue::str_or(std::string_view key, std::string fallback) const {
  const PyValue* v = get(key);
  return v && v->type == Type::string ? *v->text : fallback;
}

const PyList& PyValue::list_or_empty(std::string_view key) const noexcept {
  static const PyList kEmpty;
  const PyValue* v = get(key);
  return v && v->is_sequence() ? *v->items : kEmpty;
}

std::string_view PyValue::type_name() const noexcept {
  switch (type) {
    case Type::none:
      return "None";
    case Type::boolean:
      return "bool";
    case Type::integer:
      return "int";
    case Type::floating:
      return "float";
    case Type::string:
      return "str";
    case Type::bytes:
      return "bytes";
    case Type::list:
      return "list";
    case Type::tuple:
      return "tuple";
    case Type::dict:
      return "dict";
  }
  return "?";
}

}  // namespace gsq
