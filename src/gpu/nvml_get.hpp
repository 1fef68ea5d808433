// Adapters from NVML's out-parameter calls to Field<T>: a missing symbol or an error becomes the field's reason
// ("unsupported"), never a sentinel number. Shared by the GPU collection and the live readings.
#pragma once

#include "core/field.hpp"
#include "gpu/nvml.hpp"
#include "gpu/snapshot.hpp"

#include <fmt/format.h>

#include <string>

namespace gsq::gpu::detail {

inline std::string nvml_why(const NvmlApi& api, nvmlReturn_t rc) {
  std::string s = nvml_error_name(rc);
  if (api.nvmlErrorString) s += fmt::format(" ({})", api.nvmlErrorString(rc));
  return s;
}

// Calls an NVML getter that fills one out-parameter; a missing symbol or an error becomes "unsupported".
template <class T, class Fn, class... Args>
Field<T> get(const NvmlApi& api, Fn fn, Args... args) {
  if (fn == nullptr) return Field<T>::none("symbol missing in this driver's NVML");
  T out{};
  const nvmlReturn_t rc = fn(args..., &out);
  if (rc != NVML_SUCCESS) return Field<T>::none(nvml_why(api, rc));
  return Field<T>(out);
}

template <class Fn>
Field<std::string> get_string(const NvmlApi& api, Fn fn, nvmlDevice_t dev) {
  if (fn == nullptr) return Field<std::string>::none("symbol missing in this driver's NVML");
  char buf[256] = {};
  const nvmlReturn_t rc = fn(dev, buf, sizeof buf);
  if (rc != NVML_SUCCESS) return Field<std::string>::none(nvml_why(api, rc));
  return std::string(buf);
}

inline Field<bool> enabled(const Field<nvmlEnableState_t>& f) {
  if (!f.ok()) return Field<bool>::none(f.unsupported);
  return *f == NVML_FEATURE_ENABLED;
}

inline Field<double> milliwatts_to_w(const Field<unsigned>& f) {
  if (!f.ok()) return Field<double>::none(f.unsupported);
  return static_cast<double>(*f) / 1000.0;
}

template <class Fn>
Field<std::string> system_string(const NvmlApi& api, Fn fn) {
  if (fn == nullptr) return Field<std::string>::none("symbol missing in this driver's NVML");
  char buf[96] = {};
  if (const nvmlReturn_t rc = fn(buf, sizeof buf); rc != NVML_SUCCESS)
    return Field<std::string>::none(nvml_why(api, rc));
  return std::string(buf);
}

inline Field<int32_t> temperature_now(const NvmlApi& api, nvmlDevice_t dev) {
  if (api.nvmlDeviceGetTemperatureV == nullptr) return Field<int32_t>::none("symbol missing in this driver's NVML");
  nvmlTemperature_t t{};
  t.version = nvmlTemperature_v1;
  t.sensorType = NVML_TEMPERATURE_GPU;
  if (const auto rc = api.nvmlDeviceGetTemperatureV(dev, &t); rc != NVML_SUCCESS)
    return Field<int32_t>::none(nvml_why(api, rc));
  return static_cast<int32_t>(t.temperature);
}

// The GPU's whole snapshot (identity, limits, modes, links, processes, MIG) and the fields that move while it runs.
[[nodiscard]] GpuSnapshot collect_gpu(const NvmlApi& api, uint32_t index, nvmlDevice_t dev);
void refresh_gpu(const NvmlApi& api, nvmlDevice_t dev, GpuSnapshot& g);

}  // namespace gsq::gpu::detail
