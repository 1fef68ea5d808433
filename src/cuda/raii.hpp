// Move-only owners of CUDA handles used by the harness and benchmarks: stream, event, device and pinned buffers.
#pragma once

#include "cuda/check.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

namespace gsq::cuda {

template <class Handle, class Deleter>
class Owner {
 public:
  Owner() = default;
  explicit Owner(Handle h) : h_(h) {}
  Owner(Owner&& o) noexcept : h_(std::exchange(o.h_, Handle{})) {}
  Owner& operator=(Owner&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, Handle{});
    }
    return *this;
  }
  Owner(const Owner&) = delete;
  Owner& operator=(const Owner&) = delete;
  ~Owner() { reset(); }
  void reset() {
    if (h_) Deleter{}(std::exchange(h_, Handle{}));
  }
  [[nodiscard]] Handle get() const noexcept { return h_; }

 private:
  Handle h_{};
};

struct StreamDeleter {
  void operator()(cudaStream_t s) const { GSQ_CUDA_CHECK_NOTHROW(cudaStreamDestroy(s)); }
};
struct EventDeleter {
  void operator()(cudaEvent_t e) const { GSQ_CUDA_CHECK_NOTHROW(cudaEventDestroy(e)); }
};
struct DeviceFree {
  void operator()(void* p) const { GSQ_CUDA_CHECK_NOTHROW(cudaFree(p)); }
};
struct HostFree {
  void operator()(void* p) const { GSQ_CUDA_CHECK_NOTHROW(cudaFreeHost(p)); }
};

class Stream : public Owner<cudaStream_t, StreamDeleter> {
 public:
  static Stream create() {
    cudaStream_t s{};
    GSQ_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return Stream(s);
  }
  using Owner::Owner;
};

class Event : public Owner<cudaEvent_t, EventDeleter> {
 public:
  static Event create() {
    cudaEvent_t e{};
    GSQ_CUDA_CHECK(cudaEventCreate(&e));  // timing enabled: these events exist to be timed
    return Event(e);
  }
  using Owner::Owner;
};

// Device memory of `bytes` bytes.
class DeviceBuffer : public Owner<void*, DeviceFree> {
 public:
  static DeviceBuffer create(size_t bytes) {
    void* p = nullptr;
    GSQ_CUDA_CHECK(cudaMalloc(&p, bytes));
    DeviceBuffer b(p);
    b.bytes_ = bytes;
    return b;
  }
  using Owner::Owner;
  template <class T>
  [[nodiscard]] T* as() const noexcept {
    return static_cast<T*>(get());
  }
  [[nodiscard]] size_t bytes() const noexcept { return bytes_; }

 private:
  size_t bytes_ = 0;
};

// Page-locked host memory, optionally mapped into the device's address space.
class PinnedBuffer : public Owner<void*, HostFree> {
 public:
  static PinnedBuffer create(size_t bytes, unsigned flags = cudaHostAllocDefault) {
    void* p = nullptr;
    GSQ_CUDA_CHECK(cudaHostAlloc(&p, bytes, flags));
    return PinnedBuffer(p);
  }
  using Owner::Owner;
  template <class T>
  [[nodiscard]] T* as() const noexcept {
    return static_cast<T*>(get());
  }
};

}  // namespace gsq::cuda
