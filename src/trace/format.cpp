// Names of the trace's CUPTI-numbered kinds (copy, memory, sync) and record kinds, as readers print them.
#include "trace/format.hpp"

namespace gsq::trace {

std::string_view copy_kind_name(uint8_t k) {
  switch (k) {
    case 1:
      return "HtoD";
    case 2:
      return "DtoH";
    case 3:
      return "HtoA";
    case 4:
      return "AtoH";
    case 5:
      return "AtoA";
    case 6:
      return "AtoD";
    case 7:
      return "DtoA";
    case 8:
      return "DtoD";
    case 9:
      return "HtoH";
    case 10:
      return "PtoP";
    default:
      return "Unknown";
  }
}

std::string_view memory_kind_name(uint8_t k) {
  switch (k) {
    case 1:
      return "Pageable";
    case 2:
      return "Pinned";
    case 3:
      return "Device";
    case 4:
      return "Array";
    case 5:
      return "Managed";
    case 6:
      return "Device Static";
    case 7:
      return "Managed Static";
    default:
      return "Unknown";
  }
}

std::string_view sync_type_name(uint8_t k) {
  switch (k) {
    case 1:
      return "Event Sync";
    case 2:
      return "Stream Wait Event";
    case 3:
      return "Stream Sync";
    case 4:
      return "Context Sync";
    default:
      return "Unknown Sync";
  }
}

std::string_view record_kind_name(uint8_t k) {
  switch (static_cast<RecordKind>(k)) {
    case RecordKind::kernel:
      return "kernel";
    case RecordKind::memcpy:
      return "memcpy";
    case RecordKind::memset:
      return "memset";
    case RecordKind::sync:
      return "sync";
    case RecordKind::api:
      return "api";
    case RecordKind::range:
      return "range";
    case RecordKind::overhead:
      return "overhead";
  }
  return "unknown";
}

}  // namespace gsq::trace
