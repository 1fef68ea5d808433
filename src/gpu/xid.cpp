#include "gpu/xid.hpp"

#include <chrono>

namespace gsq::gpu {

XidWatcher::XidWatcher(const Nvml& nvml, uint32_t gpu_count)
    : api_(nvml.api()), devices_(gpu_count), refused_(gpu_count), count_(gpu_count), last_(gpu_count) {
  const bool api_ok =
      api_.nvmlEventSetCreate && api_.nvmlDeviceRegisterEvents && api_.nvmlEventSetWait_v2 && api_.nvmlEventSetFree;
  const nvmlReturn_t created = api_ok ? api_.nvmlEventSetCreate(&set_) : NVML_ERROR_FUNCTION_NOT_FOUND;
  bool any = false;
  for (uint32_t i = 0; i < gpu_count; ++i) {
    if (created != NVML_SUCCESS) {
      refused_[i] = std::string("nvmlEventSetCreate: ") + nvml_error_name(created);
      continue;
    }
    nvmlReturn_t rc = api_.nvmlDeviceGetHandleByIndex_v2(i, &devices_[i]);
    if (rc == NVML_SUCCESS) rc = api_.nvmlDeviceRegisterEvents(devices_[i], nvmlEventTypeXidCriticalError, set_);
    if (rc != NVML_SUCCESS)
      refused_[i] = std::string("nvmlDeviceRegisterEvents: ") + nvml_error_name(rc);
    else
      any = true;
  }
  if (any) thread_ = std::thread([this] { run(); });
}

XidWatcher::~XidWatcher() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (set_) api_.nvmlEventSetFree(set_);
}

void XidWatcher::run() {
  while (!stop_) {
    nvmlEventData_t data{};
    const nvmlReturn_t rc = api_.nvmlEventSetWait_v2(set_, &data, 500);  // wakes up to see stop_
    if (rc == NVML_ERROR_TIMEOUT) continue;
    if (rc != NVML_SUCCESS) {
      // GPU_IS_LOST and friends: the event itself is the news; don't spin on a broken set.
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      continue;
    }
    if (!(data.eventType & nvmlEventTypeXidCriticalError)) continue;
    std::lock_guard lk(mu_);
    for (size_t i = 0; i < devices_.size(); ++i)
      if (devices_[i] == data.device) ++count_[i], last_[i] = data.eventData;
  }
}

XidWatcher::Seen XidWatcher::events(uint32_t gpu) const {
  Seen s;
  if (gpu >= devices_.size()) return {Field<uint64_t>::none("no such GPU"), Field<uint64_t>::none("no such GPU")};
  if (!refused_[gpu].empty()) return {Field<uint64_t>::none(refused_[gpu]), Field<uint64_t>::none(refused_[gpu])};
  std::lock_guard lk(mu_);
  s.events = count_[gpu];
  s.last_xid = count_[gpu] ? Field<uint64_t>(last_[gpu]) : Field<uint64_t>::none("no XID since the exporter started");
  return s;
}

}  // namespace gsq::gpu
