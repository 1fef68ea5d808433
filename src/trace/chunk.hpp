// What the trace file's writer and reader share about a chunk: its checksum.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <string_view>

namespace gsq::trace::detail {

inline uint32_t crc_of(std::string_view s) {
  return static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size())));
}

}  // namespace gsq::trace::detail
