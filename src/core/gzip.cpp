// gzip decoding with zlib (inflate with gzip framing).
#include "core/gzip.hpp"

#include "core/error.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>

namespace gsq {

bool is_gzip(std::string_view bytes) noexcept {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string inflate_gzip(const std::string& in, const std::string& origin) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw_bad_input(origin + ": cannot initialise gzip decoding");
  std::string out;
  out.resize(std::max<size_t>(in.size() * 8, 1 << 20));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (zs.total_out >= out.size()) out.resize(out.size() * 2);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + zs.total_out);
    zs.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - zs.total_out, 1u << 30));
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
      inflateEnd(&zs);
      throw_bad_input(fmt::format("{}: truncated gzip stream after {} bytes of output", origin, zs.total_out));
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const std::string msg = zs.msg ? zs.msg : "corrupt data";
      inflateEnd(&zs);
      throw_bad_input(fmt::format("{}: corrupt gzip stream: {}", origin, msg));
    }
  }
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return out;
}

}  // namespace gsq
