// NVML loader: dlopen, dlsym per entry point, init and shutdown.
#include "gpu/nvml.hpp"

#include "core/error.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <utility>

namespace gsq::gpu {

namespace {
constexpr const char* kLibraryNames[] = {"libnvidia-ml.so.1", "libnvidia-ml.so"};

// Symbols without which nothing works; any other missing symbol only turns its field "unsupported".
void require(const void* fn, const char* name, const std::string& path) {
  if (fn == nullptr) {
    throw_no_gpu(fmt::format("{} has no symbol {}: the NVIDIA driver is too old for gpusqueeze", path, name));
  }
}
}  // namespace

std::string nvml_error_name(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_SUCCESS:
      return "NVML_SUCCESS";
    case NVML_ERROR_UNINITIALIZED:
      return "NVML_ERROR_UNINITIALIZED";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "NVML_ERROR_INVALID_ARGUMENT";
    case NVML_ERROR_NOT_SUPPORTED:
      return "NVML_ERROR_NOT_SUPPORTED";
    case NVML_ERROR_NO_PERMISSION:
      return "NVML_ERROR_NO_PERMISSION";
    case NVML_ERROR_NOT_FOUND:
      return "NVML_ERROR_NOT_FOUND";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "NVML_ERROR_INSUFFICIENT_SIZE";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "NVML_ERROR_DRIVER_NOT_LOADED";
    case NVML_ERROR_GPU_IS_LOST:
      return "NVML_ERROR_GPU_IS_LOST";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "NVML_ERROR_ARGUMENT_VERSION_MISMATCH";
    default:
      return fmt::format("NVML_ERROR_{}", static_cast<int>(rc));
  }
}

Nvml Nvml::open() {
  Nvml n;
  std::string why;
  for (const char* name : kLibraryNames) {
    n.handle_ = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (n.handle_ != nullptr) {
      n.path_ = name;
      break;
    }
    if (const char* e = ::dlerror()) why = e;
  }
  if (n.handle_ == nullptr) {
    throw_no_gpu(fmt::format("no NVIDIA driver: libnvidia-ml.so.1 could not be loaded ({})", why));
  }
  n.api_ = std::make_unique<NvmlApi>();
#define GSQ_NVML_FN(name) n.api_->name = reinterpret_cast<decltype(&::name)>(::dlsym(n.handle_, #name));
#include "gpu/nvml_functions.inc"
#undef GSQ_NVML_FN
  require(reinterpret_cast<const void*>(n.api_->nvmlInit_v2), "nvmlInit_v2", n.path_);
  require(reinterpret_cast<const void*>(n.api_->nvmlShutdown), "nvmlShutdown", n.path_);
  require(reinterpret_cast<const void*>(n.api_->nvmlDeviceGetCount_v2), "nvmlDeviceGetCount_v2", n.path_);
  require(reinterpret_cast<const void*>(n.api_->nvmlDeviceGetHandleByIndex_v2), "nvmlDeviceGetHandleByIndex_v2",
          n.path_);
  if (const nvmlReturn_t rc = n.api_->nvmlInit_v2(); rc != NVML_SUCCESS) {
    ::dlclose(std::exchange(n.handle_, nullptr));
    throw_no_gpu(fmt::format("no NVIDIA driver: nvmlInit_v2 failed with {}", nvml_error_name(rc)));
  }
  return n;
}

Nvml::Nvml(Nvml&& o) noexcept
    : handle_(std::exchange(o.handle_, nullptr)), api_(std::move(o.api_)), path_(std::move(o.path_)) {}

Nvml& Nvml::operator=(Nvml&& o) noexcept {
  if (this != &o) {
    this->~Nvml();
    new (this) Nvml(std::move(o));
  }
  return *this;
}

Nvml::~Nvml() {
  if (handle_ == nullptr) return;
  if (api_ && api_->nvmlShutdown) api_->nvmlShutdown();
  ::dlclose(handle_);
}

}  // namespace gsq::gpu
