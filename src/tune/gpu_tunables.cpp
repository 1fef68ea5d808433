// GPU tunables over GpuControl: values are checked against what the card allows before anything is written.
#include "core/error.hpp"
#include "tune/machine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gsq::tune {

namespace {

[[noreturn]] void failed(const std::string& id, const char* call, nvmlReturn_t rc) {
  throw Error(ExitCode::findings, fmt::format("{}: {} returned {}", id, call, nvml_message(rc)));
}

template <class T>
Field<std::string> got(nvmlReturn_t rc, const T& fn) {
  if (rc != NVML_SUCCESS) return Field<std::string>::none(nvml_message(rc));
  return Field<std::string>(fn());
}

const char* mode_name(nvmlComputeMode_t m) {
  switch (m) {
    case NVML_COMPUTEMODE_DEFAULT:
      return "default";
    case NVML_COMPUTEMODE_EXCLUSIVE_PROCESS:
      return "exclusive_process";
    case NVML_COMPUTEMODE_PROHIBITED:
      return "prohibited";
    default:
      return "exclusive_thread";
  }
}

nvmlComputeMode_t mode_value(const std::string& name) {
  if (name == "exclusive_process") return NVML_COMPUTEMODE_EXCLUSIVE_PROCESS;  // nvidia-smi -c 1, NVML's 3
  if (name == "prohibited") return NVML_COMPUTEMODE_PROHIBITED;
  return NVML_COMPUTEMODE_DEFAULT;
}

std::pair<unsigned, unsigned> clock_pair(const std::string& v) {
  const auto comma = v.find(',');
  return {static_cast<unsigned>(std::stoul(v.substr(0, comma))),
          static_cast<unsigned>(std::stoul(v.substr(comma + 1)))};
}

Tunable locked_clocks(const Machine& m, unsigned gpu, ClockDomain d, const std::string& id) {
  GpuControl* g = m.gpu;
  const char* setter = d == ClockDomain::graphics ? "nvmlDeviceSetGpuLockedClocks" : "nvmlDeviceSetMemoryLockedClocks";
  const char* reset =
      d == ClockDomain::graphics ? "nvmlDeviceResetGpuLockedClocks" : "nvmlDeviceResetMemoryLockedClocks";
  Tunable t;
  t.id = id;
  t.no_getter = true;
  t.read = [g, gpu, d] {
    std::vector<unsigned> clocks;
    if (const auto rc = g->supported_clocks(gpu, d, clocks); rc != NVML_SUCCESS)
      return Field<std::string>::none(nvml_message(rc));
    return Field<std::string>("(no getter)");  // the knob exists; its value is not readable
  };
  t.observe = [g, gpu, d]() -> std::optional<unsigned> {
    unsigned mhz = 0;
    return g->current_clock(gpu, d, mhz) == NVML_SUCCESS ? std::optional<unsigned>(mhz) : std::nullopt;
  };
  t.check = [g, gpu, d](const std::string& v) {
    if (v == kReset) return std::string();
    std::vector<unsigned> clocks;
    if (const auto rc = g->supported_clocks(gpu, d, clocks); rc != NVML_SUCCESS)
      return fmt::format("the supported clocks cannot be read: {}", nvml_message(rc));
    const auto [lo, hi] = clock_pair(v);
    for (unsigned c : {lo, hi})
      if (std::find(clocks.begin(), clocks.end(), c) == clocks.end()) {
        const auto [mn, mx] = std::minmax_element(clocks.begin(), clocks.end());
        return clocks.empty() ? std::string("the card lists no supported clocks")
                              : fmt::format(
                                    "{} MHz is not a supported clock ({} values from {} to {} MHz; "
                                    "`nvidia-smi -q -d SUPPORTED_CLOCKS` lists them)",
                                    c, clocks.size(), *mn, *mx);
      }
    return std::string();
  };
  t.write = [g, gpu, d, id, setter, reset](const std::string& v) {
    if (v == kReset) {
      if (const auto rc = g->reset_clocks(gpu, d); rc != NVML_SUCCESS) failed(id, reset, rc);
      return;
    }
    const auto [lo, hi] = clock_pair(v);
    if (const auto rc = g->lock_clocks(gpu, d, lo, hi); rc != NVML_SUCCESS) failed(id, setter, rc);
  };
  return t;
}

}  // namespace

Tunable gpu_tunable(const Machine& m, unsigned gpu, const std::string& key, const std::string& id) {
  GpuControl* g = m.gpu;
  Tunable t;
  t.id = id;
  if (key == "persistence_mode") {
    t.read = [g, gpu] {
      bool on = false;
      const auto rc = g->persistence(gpu, on);
      return got(rc, [&] { return std::string(on ? "true" : "false"); });
    };
    t.write = [g, gpu, id](const std::string& v) {
      if (const auto rc = g->set_persistence(gpu, v == "true"); rc != NVML_SUCCESS)
        failed(id, "nvmlDeviceSetPersistenceMode", rc);
    };
  } else if (key == "compute_mode") {
    t.read = [g, gpu] {
      nvmlComputeMode_t mode{};
      const auto rc = g->compute_mode(gpu, mode);
      return got(rc, [&] { return std::string(mode_name(mode)); });
    };
    t.write = [g, gpu, id](const std::string& v) {
      if (const auto rc = g->set_compute_mode(gpu, mode_value(v)); rc != NVML_SUCCESS)
        failed(id, "nvmlDeviceSetComputeMode", rc);
    };
  } else if (key == "power_limit_w") {
    t.read = [g, gpu] {
      unsigned mw = 0;
      const auto rc = g->power_limit(gpu, mw);
      return got(rc, [&] {
        return mw % 1000 == 0 ? fmt::format("{}", mw / 1000) : fmt::format("{:g}", static_cast<double>(mw) / 1000.0);
      });
    };
    t.check = [g, gpu](const std::string& v) {
      unsigned lo = 0, hi = 0;
      if (const auto rc = g->power_limit_range(gpu, lo, hi); rc != NVML_SUCCESS)
        return fmt::format("the allowed range cannot be read: {}", nvml_message(rc));
      const double mw = std::stod(v) * 1000.0;
      if (mw < lo || mw > hi)
        return fmt::format("{} W is outside this card's range {:g}-{:g} W", v, lo / 1000.0, hi / 1000.0);
      return std::string();
    };
    t.write = [g, gpu, id](const std::string& v) {
      const auto mw = static_cast<unsigned>(std::lround(std::stod(v) * 1000.0));
      if (const auto rc = g->set_power_limit(gpu, mw); rc != NVML_SUCCESS)
        failed(id, "nvmlDeviceSetPowerManagementLimit", rc);
    };
  } else if (key == "gpu_locked_clocks") {
    return locked_clocks(m, gpu, ClockDomain::graphics, id);
  } else if (key == "memory_locked_clocks") {
    return locked_clocks(m, gpu, ClockDomain::memory, id);
  } else {
    throw_bad_input(fmt::format("{}: not a GPU setting tune knows", id));
  }
  return t;
}

}  // namespace gsq::tune
