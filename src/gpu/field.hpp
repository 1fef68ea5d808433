// A value read from the machine, or the reason it could not be read: never a sentinel number.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <utility>

namespace gsq::gpu {

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

}  // namespace gsq::gpu

// JSON: the value itself, or {"unsupported": "why"}.
template <class T>
struct nlohmann::adl_serializer<gsq::gpu::Field<T>> {
  static void to_json(json& j, const gsq::gpu::Field<T>& f) {
    if (f.value) j = *f.value;
    else j = json{{"unsupported", f.unsupported}};
  }
  static void from_json(const json& j, gsq::gpu::Field<T>& f) {
    if (j.is_object() && j.contains("unsupported") && j.size() == 1) {
      f = gsq::gpu::Field<T>::none(j.at("unsupported").get<std::string>());
    } else {
      f = gsq::gpu::Field<T>(j.get<T>());
    }
  }
};
