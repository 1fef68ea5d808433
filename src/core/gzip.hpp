// gzip decoding for the files users hand us compressed (traces, bench runs kept as .json.gz).
#pragma once

#include <string>
#include <string_view>

namespace gsq {

// True when `bytes` starts with the gzip magic (1f 8b).
[[nodiscard]] bool is_gzip(std::string_view bytes) noexcept;

// The whole decompressed stream; throws bad_input naming `origin` when it is truncated or corrupt.
[[nodiscard]] std::string inflate_gzip(const std::string& in, const std::string& origin);

}  // namespace gsq
