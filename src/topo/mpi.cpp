// MPI through the libgsqmpi.so plugin (see mpi.hpp).
#include "topo/mpi.hpp"

#include "core/error.hpp"
#include "core/process.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <vector>

namespace gsq::topo {

namespace {

template <class Fn>
Fn symbol(void* h, const std::filesystem::path& path, const char* name) {
  void* p = ::dlsym(h, name);
  if (p == nullptr) throw_no_gpu(fmt::format("{} has no {} (not gpusqueeze's MPI plugin)", path.string(), name));
  return reinterpret_cast<Fn>(p);
}

}  // namespace

MpiSession::MpiSession() {
  std::vector<std::filesystem::path> tried;
  const auto found = find_own_library("libgsqmpi.so", "GSQ_MPI_PLUGIN", tried);
  if (!found) {
    std::string list;
    for (const auto& p : tried) list += "\n  " + p.string();
    throw_no_gpu(
        "--mpi: this gpusqueeze has no MPI plugin (libgsqmpi.so); looked in:" + list +
        "\nIt is built where MPI is installed (Debian: apt install libopenmpi-dev openmpi-bin, then scripts/build.sh); "
        "without it, --nccl-id-file exchanges the id through a shared file");
  }
  plugin_ = *found;
  // RTLD_GLOBAL: Open MPI loads its own components later, and they need libmpi's symbols global.
  void* h = ::dlopen(plugin_.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (h == nullptr)
    throw_no_gpu(fmt::format("--mpi: {} does not load: {} (is the MPI it was built with installed here?)",
                             plugin_.string(), ::dlerror()));
  handle_.reset(h, [](void*) {});  // never closed: MPI's threads and atexit handlers outlive any use
  char why[512] = {};
  const auto start = symbol<int (*)(int*, int*, int*, char*, int)>(h, plugin_, "gsq_mpi_start");
  if (const int rc = start(&rank_, &size_, &local_rank_, why, sizeof why); rc != 0)
    throw Error(ExitCode::internal, fmt::format("--mpi: MPI_Init failed ({}): {}", rc, why));
}

MpiSession::~MpiSession() {
  if (handle_) symbol<void (*)()>(handle_.get(), plugin_, "gsq_mpi_end")();
}

std::string MpiSession::broadcast(std::string text, size_t bytes) const {
  text.resize(bytes, '\0');
  const auto bcast = symbol<int (*)(void*, int)>(handle_.get(), plugin_, "gsq_mpi_bcast");
  if (const int rc = bcast(text.data(), static_cast<int>(bytes)); rc != 0)
    throw Error(ExitCode::internal, fmt::format("--mpi: MPI_Bcast failed ({})", rc));
  return text;
}

void MpiSession::barrier() const {
  if (const int rc = symbol<int (*)()>(handle_.get(), plugin_, "gsq_mpi_barrier")(); rc != 0)
    throw Error(ExitCode::internal, fmt::format("--mpi: MPI_Barrier failed ({})", rc));
}

void MpiSession::abort(int code) const {
  symbol<void (*)(int)>(handle_.get(), plugin_, "gsq_mpi_abort")(code);
  std::_Exit(code);  // MPI_Abort does not return; should it, the code still ends this rank
}

}  // namespace gsq::topo
