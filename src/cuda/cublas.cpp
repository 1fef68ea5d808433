// cuBLAS opened at first use (see cublas.hpp), and the cold path of GSQ_CUBLAS_CHECK.
#include "cuda/cublas.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <mutex>
#include <string>

namespace gsq {
namespace cuda {

namespace {

template <class Fn>
void bind(void* lib, const char* name, Fn& fn, const std::string& path) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!fn) throw_no_gpu(fmt::format("{} has no symbol {}: a cuBLAS 13 is needed", path, name));
}

CublasApi load() {
  std::string path, tried;
  void* lib = nullptr;
  // The loader's own search first (LD_LIBRARY_PATH, ld.so.cache), then the usual toolkit places.
  for (const char* name :
       {"libcublas.so.13", GSQ_CUDA_LIBRARY_DIR "/libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.13",
        "/usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.13", "libcublas.so"}) {
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      path = name;
      break;
    }
    if (tried.empty()) tried = dlerror();
  }
  if (!lib)
    throw_no_gpu("cuBLAS not found (" + tried +
                 "): install the CUDA toolkit's libraries or pip nvidia-cublas, or set LD_LIBRARY_PATH");
  CublasApi api;  // the handle stays open for the process's life: cuBLAS is used until exit
  bind(lib, "cublasCreate_v2", api.create, path);
  bind(lib, "cublasDestroy_v2", api.destroy, path);
  bind(lib, "cublasSetStream_v2", api.set_stream, path);
  bind(lib, "cublasGemmEx", api.gemm_ex, path);
  bind(lib, "cublasGetStatusName", api.status_name, path);
  bind(lib, "cublasGetStatusString", api.status_string, path);
  return api;
}

}  // namespace

const CublasApi& cublas() {
  static const CublasApi api = load();  // a failed load throws each time it is asked for, with its reason
  return api;
}

}  // namespace cuda

[[gnu::cold]] void throw_cublas_error(cublasStatus_t s, const char* call, const char* file, int line) {
  // The status was returned by a loaded cuBLAS, so the names are there to ask for.
  const cuda::CublasApi& api = cuda::cublas();
  throw CudaError(call_failure_text(call, api.status_name(s), api.status_string(s), file, line));
}

}  // namespace gsq
