// CUPTI activity records → trace records (see decode.hpp).
#include "trace/tracer/decode.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <memory>

namespace gsq::trace::tracer {

namespace {

template <class Copy>
void fill_copy(Record& r, const Copy& m) {
  r.kind = static_cast<uint8_t>(RecordKind::memcpy);
  r.copy_kind = m.copyKind, r.src_kind = m.srcKind, r.dst_kind = m.dstKind;
  if (m.flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) r.flags |= kAsync;
  r.bytes = m.bytes;
  r.start_ns = static_cast<int64_t>(m.start), r.end_ns = static_cast<int64_t>(m.end);
  r.device = m.deviceId, r.context = m.contextId, r.stream = m.streamId;
  r.correlation = m.correlationId;
}

}  // namespace

std::string clean_api_name(std::string n) {
  if (const auto v = n.rfind("_v");
      v != std::string::npos && v + 2 < n.size() && n.find_first_not_of("0123456789", v + 2) == std::string::npos)
    n.resize(v);
  for (const char* suffix : {"_ptsz", "_ptds"})
    if (n.ends_with(suffix)) n.resize(n.size() - std::strlen(suffix));
  return n;
}

bool wanted_api(std::string_view n) {
  static const char* const prefixes[] = {
      "cudaLaunch",
      "cudaGraphLaunch",
      "cudaMemcpy",
      "cudaMemset",
      "cudaStreamSynchronize",
      "cudaDeviceSynchronize",
      "cudaEventSynchronize",
      "cudaStreamWaitEvent",
      "cudaMalloc",
      "cudaFree",
      "cudaHostAlloc",
      "cudaHostRegister",
      "cudaStreamQuery",
      "cudaEventQuery",
      "cuLaunch",
      "cuGraphLaunch",
      "cuMemcpy",
      "cuMemset",
      "cuStreamSynchronize",
      "cuCtxSynchronize",
      "cuEventSynchronize",
      "cuStreamWaitEvent",
      "cuMemAlloc",
      "cuMemFree",
      "cuMemHostAlloc",
  };
  for (const char* p : prefixes)
    if (n.starts_with(p)) return true;
  return false;
}

std::string demangle(const char* name) {
  if (!name) return "(unknown kernel)";
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
  return status == 0 && d ? d.get() : name;
}

std::optional<Record> Decoder::decode(const CUpti_Activity& a) {
  Record r;
  switch (a.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(&a);
      r.kind = static_cast<uint8_t>(RecordKind::kernel);
      auto [it, added] = kernel_names_.try_emplace(k->name, 0);
      if (added) it->second = intern_(demangle(k->name));
      r.name = it->second;
      r.start_ns = static_cast<int64_t>(k->start), r.end_ns = static_cast<int64_t>(k->end);
      r.device = k->deviceId, r.context = k->contextId, r.stream = k->streamId;
      r.correlation = k->correlationId;
      r.grid[0] = k->gridX, r.grid[1] = k->gridY, r.grid[2] = k->gridZ;
      r.block[0] = static_cast<uint16_t>(k->blockX), r.block[1] = static_cast<uint16_t>(k->blockY),
      r.block[2] = static_cast<uint16_t>(k->blockZ);
      r.registers = k->registersPerThread;
      r.static_smem = static_cast<uint32_t>(k->staticSharedMemory);
      r.dynamic_smem = static_cast<uint32_t>(k->dynamicSharedMemory);
      r.graph_id = k->graphId;
      if (k->graphId != 0) r.flags |= kFromGraph;
      return r;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(&a);
      fill_copy(r, *m);
      r.graph_id = m->graphId;
      if (m->graphId != 0) r.flags |= kFromGraph;
      return r;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      fill_copy(r, *reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(&a));
      return r;
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(&a);
      r.kind = static_cast<uint8_t>(RecordKind::memset);
      r.dst_kind = static_cast<uint8_t>(m->memoryKind);
      if (m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) r.flags |= kAsync;
      r.bytes = m->bytes;
      r.start_ns = static_cast<int64_t>(m->start), r.end_ns = static_cast<int64_t>(m->end);
      r.device = m->deviceId, r.context = m->contextId, r.stream = m->streamId;
      r.correlation = m->correlationId;
      r.graph_id = m->graphId;
      if (m->graphId != 0) r.flags |= kFromGraph;
      return r;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(&a);
      r.kind = static_cast<uint8_t>(RecordKind::sync);
      r.sync_type = static_cast<uint8_t>(s->type);
      r.start_ns = static_cast<int64_t>(s->start), r.end_ns = static_cast<int64_t>(s->end);
      r.context = s->contextId, r.stream = s->streamId;
      r.correlation = s->correlationId;
      return r;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* api = reinterpret_cast<const CUpti_ActivityAPI*>(&a);
      const bool driver = a.kind == CUPTI_ACTIVITY_KIND_DRIVER;
      const auto& names = driver ? driver_names_ : runtime_names_;
      r.kind = static_cast<uint8_t>(RecordKind::api);
      r.name = api->cbid < names.size() ? names[api->cbid] : 0;
      if (driver) r.flags |= kDriverApi;
      r.start_ns = static_cast<int64_t>(api->start), r.end_ns = static_cast<int64_t>(api->end);
      r.tid = api->threadId;
      r.correlation = api->correlationId;
      return r;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(&a);
      if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START || m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
        Record open;
        open.kind = static_cast<uint8_t>(RecordKind::range);
        open.name = intern_(m->name ? m->name : "(unnamed range)");
        open.start_ns = open.end_ns = static_cast<int64_t>(m->timestamp);
        if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS)
          open.tid = m->objectId.pt.threadId;
        if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) return open;
        open_ranges_[m->id] = open;
      } else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
        if (auto it = open_ranges_.find(m->id); it != open_ranges_.end()) {
          r = it->second;
          r.end_ns = static_cast<int64_t>(m->timestamp);
          open_ranges_.erase(it);
          return r;
        }
      }
      return std::nullopt;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const auto* o = reinterpret_cast<const CUpti_ActivityOverhead3*>(&a);
      overhead_ns_ += o->end - o->start;
      ++overhead_records_;
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace gsq::trace::tracer
