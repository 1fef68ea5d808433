// NVML opened at run time (dlopen of libnvidia-ml.so.1), symbol by symbol, so the toolkit runs where no driver is
// installed.
#pragma once

#include <nvml.h>

#include <memory>
#include <string>

namespace gsq::gpu {

// Function table. A symbol the installed driver lacks stays null; callers turn that into "unsupported".
struct NvmlApi {
#define GSQ_NVML_FN(name) decltype(&::name) name = nullptr;
#include "gpu/nvml_functions.inc"
#undef GSQ_NVML_FN
};

// One NVML session: dlopen + nvmlInit_v2 in the constructor, nvmlShutdown + dlclose in the destructor.
// Move-only; copying would shut NVML down twice.
class Nvml {
 public:
  // Throws Error(no_gpu) with the reason: library missing, nvmlInit failed (driver not loaded), ...
  static Nvml open();
  Nvml(Nvml&&) noexcept;
  Nvml& operator=(Nvml&&) noexcept;
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  ~Nvml();

  [[nodiscard]] const NvmlApi& api() const noexcept { return *api_; }
  [[nodiscard]] const std::string& library_path() const noexcept { return path_; }

 private:
  Nvml() = default;
  void* handle_ = nullptr;
  std::unique_ptr<NvmlApi> api_;
  std::string path_;
};

// "NVML_ERROR_NOT_SUPPORTED: Not Supported" style text for a return code, without needing the library.
[[nodiscard]] std::string nvml_error_name(nvmlReturn_t rc);

}  // namespace gsq::gpu
