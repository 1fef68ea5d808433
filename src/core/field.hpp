// A value read from the machine, or the reason it could not be read: never a sentinel number.
#pragma once

#include <nlohmann/json.hpp>

#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace gsq {

// nlohmann converts 3.7 or -1 into an unsigned silently; a snapshot field must not lose data that way.
template <class T>
T strict_get(const nlohmann::json& j) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (!j.is_number_integer()) throw std::invalid_argument("expected an integer, found " + j.dump());
    if constexpr (std::is_unsigned_v<T>) {
      if (!j.is_number_unsigned() && j.get<int64_t>() < 0)
        throw std::invalid_argument("expected a non-negative integer, found " + j.dump());
      if (j.get<uint64_t>() > std::numeric_limits<T>::max()) throw std::invalid_argument("out of range: " + j.dump());
    } else if (j.get<int64_t>() < std::numeric_limits<T>::min() || j.get<int64_t>() > std::numeric_limits<T>::max()) {
      throw std::invalid_argument("out of range: " + j.dump());
    }
  }
  return j.get<T>();
}

template <class T>
struct Field {
  std::optional<T> value;
  std::string unsupported;  // why there is no value ("NVML_ERROR_NOT_SUPPORTED", "file missing", ...)

  Field() : unsupported("not read") {}
  Field(T v) : value(std::move(v)) {}  // NOLINT(google-explicit-constructor): reads like a plain value at call sites
  static Field none(std::string why) {
    Field f;
    f.unsupported = std::move(why);
    return f;
  }
  [[nodiscard]] bool ok() const noexcept { return value.has_value(); }
  [[nodiscard]] const T& operator*() const { return *value; }
  [[nodiscard]] const T* operator->() const { return &*value; }
  bool operator==(const Field& o) const = default;
};

}  // namespace gsq

// JSON: the value itself, or {"unsupported": "why"}.
template <class T>
struct nlohmann::adl_serializer<gsq::Field<T>> {
  static void to_json(json& j, const gsq::Field<T>& f) {
    if (f.value)
      j = *f.value;
    else
      j = json{{"unsupported", f.unsupported}};
  }
  static void from_json(const json& j, gsq::Field<T>& f) {
    if (j.is_object() && j.contains("unsupported") && j.size() == 1) {
      f = gsq::Field<T>::none(j.at("unsupported").get<std::string>());
    } else {
      f = gsq::Field<T>(gsq::strict_get<T>(j));
    }
  }
};
