// XID events (the driver's error reports: 79 = fallen off the bus, 48 = double-bit ECC, 13/31/43 = application
// faults, ...) read from NVML's event set, the way the kernel log shows them, without reading dmesg.
#pragma once

#include "core/field.hpp"
#include "gpu/nvml.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gsq::gpu {

class XidWatcher {
 public:
  // Registers every GPU for critical XID events and waits for them on its own thread. GPUs the driver refuses to
  // register (VMs often do) report why through events().
  XidWatcher(const Nvml& nvml, uint32_t gpu_count);
  ~XidWatcher();
  XidWatcher(const XidWatcher&) = delete;
  XidWatcher& operator=(const XidWatcher&) = delete;

  struct Seen {
    Field<uint64_t> events;    // XIDs since the watcher started
    Field<uint64_t> last_xid;  // the code of the newest one (absent until one arrives)
  };
  [[nodiscard]] Seen events(uint32_t gpu) const;

 private:
  void run();
  const NvmlApi& api_;
  nvmlEventSet_t set_{};
  std::vector<nvmlDevice_t> devices_;
  std::vector<std::string> refused_;  // "" where registered
  mutable std::mutex mu_;
  std::vector<uint64_t> count_, last_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace gsq::gpu
