// GpuControl over NVML: one call per method, nothing cached, so `verify` sees the driver's state at that moment.
#include "tune/gpu_control.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <utility>

namespace gsq::tune {

namespace {

class NvmlControl final : public GpuControl {
 public:
  explicit NvmlControl(gpu::Nvml nvml) : nvml_(std::move(nvml)) {}

  nvmlReturn_t count(unsigned& n) override { return api().nvmlDeviceGetCount_v2(&n); }

  nvmlReturn_t identity(unsigned gpu, GpuIdentity& id) override {
    nvmlDevice_t d{};
    if (const auto rc = handle(gpu, d); rc != NVML_SUCCESS) return rc;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    nvmlPciInfo_t pci{};
    if (api().nvmlDeviceGetName != nullptr && api().nvmlDeviceGetName(d, name, sizeof name) == NVML_SUCCESS)
      id.name = name;
    if (api().nvmlDeviceGetUUID != nullptr && api().nvmlDeviceGetUUID(d, uuid, sizeof uuid) == NVML_SUCCESS)
      id.uuid = uuid;
    if (api().nvmlDeviceGetPciInfo_v3 != nullptr && api().nvmlDeviceGetPciInfo_v3(d, &pci) == NVML_SUCCESS)
      id.bus_id = pci.busId;
    return NVML_SUCCESS;
  }

  nvmlReturn_t persistence(unsigned gpu, bool& on) override {
    nvmlEnableState_t s{};
    const auto rc = with(gpu, api().nvmlDeviceGetPersistenceMode, &s);
    on = s == NVML_FEATURE_ENABLED;
    return rc;
  }
  nvmlReturn_t set_persistence(unsigned gpu, bool on) override {
    return with(gpu, api().nvmlDeviceSetPersistenceMode, on ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED);
  }
  nvmlReturn_t compute_mode(unsigned gpu, nvmlComputeMode_t& mode) override {
    return with(gpu, api().nvmlDeviceGetComputeMode, &mode);
  }
  nvmlReturn_t set_compute_mode(unsigned gpu, nvmlComputeMode_t mode) override {
    return with(gpu, api().nvmlDeviceSetComputeMode, mode);
  }
  nvmlReturn_t power_limit(unsigned gpu, unsigned& mw) override {
    return with(gpu, api().nvmlDeviceGetPowerManagementLimit, &mw);
  }
  nvmlReturn_t power_limit_range(unsigned gpu, unsigned& min_mw, unsigned& max_mw) override {
    return with(gpu, api().nvmlDeviceGetPowerManagementLimitConstraints, &min_mw, &max_mw);
  }
  nvmlReturn_t set_power_limit(unsigned gpu, unsigned mw) override {
    return with(gpu, api().nvmlDeviceSetPowerManagementLimit, mw);
  }

  nvmlReturn_t supported_clocks(unsigned gpu, ClockDomain dom, std::vector<unsigned>& mhz) override {
    std::vector<unsigned> memory(256);
    unsigned n = static_cast<unsigned>(memory.size());
    if (const auto rc = with(gpu, api().nvmlDeviceGetSupportedMemoryClocks, &n, memory.data()); rc != NVML_SUCCESS)
      return rc;
    memory.resize(n);
    if (dom == ClockDomain::memory || memory.empty()) {
      mhz = std::move(memory);
      return NVML_SUCCESS;
    }
    mhz.assign(1024, 0);
    n = static_cast<unsigned>(mhz.size());
    const auto top = *std::max_element(memory.begin(), memory.end());
    const auto rc = with(gpu, api().nvmlDeviceGetSupportedGraphicsClocks, top, &n, mhz.data());
    mhz.resize(rc == NVML_SUCCESS ? n : 0);
    return rc;
  }
  nvmlReturn_t current_clock(unsigned gpu, ClockDomain d, unsigned& mhz) override {
    return with(gpu, api().nvmlDeviceGetClockInfo, d == ClockDomain::graphics ? NVML_CLOCK_SM : NVML_CLOCK_MEM, &mhz);
  }
  nvmlReturn_t lock_clocks(unsigned gpu, ClockDomain d, unsigned min_mhz, unsigned max_mhz) override {
    return d == ClockDomain::graphics ? with(gpu, api().nvmlDeviceSetGpuLockedClocks, min_mhz, max_mhz)
                                      : with(gpu, api().nvmlDeviceSetMemoryLockedClocks, min_mhz, max_mhz);
  }
  nvmlReturn_t reset_clocks(unsigned gpu, ClockDomain d) override {
    return d == ClockDomain::graphics ? with(gpu, api().nvmlDeviceResetGpuLockedClocks)
                                      : with(gpu, api().nvmlDeviceResetMemoryLockedClocks);
  }
  nvmlReturn_t cuda_driver_version(int& version) override {
    return api().nvmlSystemGetCudaDriverVersion == nullptr ? NVML_ERROR_FUNCTION_NOT_FOUND
                                                           : api().nvmlSystemGetCudaDriverVersion(&version);
  }

 private:
  [[nodiscard]] const gpu::NvmlApi& api() const { return nvml_.api(); }
  nvmlReturn_t handle(unsigned gpu, nvmlDevice_t& d) { return api().nvmlDeviceGetHandleByIndex_v2(gpu, &d); }
  // Calls fn(device, args...) when the driver has the symbol.
  template <class Fn, class... Args>
  nvmlReturn_t with(unsigned gpu, Fn fn, Args... args) {
    if (fn == nullptr) return NVML_ERROR_FUNCTION_NOT_FOUND;
    nvmlDevice_t d{};
    if (const auto rc = handle(gpu, d); rc != NVML_SUCCESS) return rc;
    return fn(d, args...);
  }
  gpu::Nvml nvml_;
};

}  // namespace

std::unique_ptr<GpuControl> nvml_control(gpu::Nvml nvml) {
  return std::make_unique<NvmlControl>(std::move(nvml));
}

std::unique_ptr<GpuControl> open_nvml_control(std::string& why) {
  try {
    return nvml_control(gpu::Nvml::open());
  } catch (const Error& e) {
    why = e.what();
    return nullptr;
  }
}

}  // namespace gsq::tune
