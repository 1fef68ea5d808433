// NCCL opened at run time, so gpusqueeze runs where NCCL is not installed and says where it looked.
#include "core/error.hpp"
#include "topo/multigpu_probe.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

namespace gsq::topo {

std::string NcclLibrary::version_text() const {
  // ncclGetVersion: major*10000 + minor*100 + patch since 2.9 (major*1000 + minor*100 + patch before).
  if (version >= 10000) return fmt::format("{}.{}.{}", version / 10000, version / 100 % 100, version % 100);
  return fmt::format("{}.{}.{}", version / 1000, version / 100 % 10, version % 100);
}

std::vector<std::string> nccl_candidates() {
  std::vector<std::string> c;
  if (const char* e = std::getenv("GSQ_NCCL_LIBRARY"); e && *e) return {e};  // asked for: that one or none
  c.emplace_back("libnccl.so.2");  // the loader's path: Debian's libnccl2, LD_LIBRARY_PATH
  for (const char* dir : {"/usr/local/cuda/lib64", "/usr/local/cuda/lib", "/usr/local/cuda/targets/x86_64-linux/lib"})
    c.push_back(std::string(dir) + "/libnccl.so.2");
  if (const char* venv = std::getenv("VIRTUAL_ENV"); venv && *venv) {  // PyPI nvidia-nccl-cu13 / -cu12
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(venv) / "lib", ec))
      c.push_back((e.path() / "site-packages/nvidia/nccl/lib/libnccl.so.2").string());
  }
  return c;
}

NcclLibrary open_nccl() {
  std::string tried;
  const char* env = std::getenv("GSQ_NCCL_LIBRARY");
  for (const auto& path : nccl_candidates()) {
    if (path.find('/') != std::string::npos && !std::filesystem::exists(path)) {
      tried += "\n  " + path + ": not there";
      continue;
    }
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* why = ::dlerror();
      tried += fmt::format("\n  {}: {}", path, why ? why : "cannot be loaded");
      continue;
    }
    using GetVersion = int (*)(int*);
    auto get_version = reinterpret_cast<GetVersion>(::dlsym(h, "ncclGetVersion"));
    if (get_version == nullptr) {
      ::dlclose(h);
      tried += fmt::format("\n  {}: no ncclGetVersion (not NCCL)", path);
      continue;
    }
    NcclLibrary lib;
    lib.path = path;
    lib.origin = env && path == env                                ? "GSQ_NCCL_LIBRARY"
                 : path == "libnccl.so.2"                          ? "the loader's path"
                 : path.find("site-packages") != std::string::npos ? "PyPI (nvidia-nccl) in the virtualenv"
                                                                   : "the CUDA toolkit";
    (void)get_version(&lib.version);
    // Never unloaded: NCCL keeps threads of its own (the bootstrap root ncclGetUniqueId starts, the proxy threads)
    // that would run in unmapped code after a dlclose — a crash at exit.
    lib.handle = std::shared_ptr<void>(h, [](void*) {});
    return lib;
  }
  throw_no_gpu("NCCL (libnccl.so.2) could not be loaded; looked in:" + tried +
               "\ninstall Debian's libnccl2, or `pip install nvidia-nccl-cu13` in a virtualenv, or set "
               "GSQ_NCCL_LIBRARY=/path/to/libnccl.so.2");
}

}  // namespace gsq::topo
