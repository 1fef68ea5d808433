// The trace file's writer: checksummed chunks appended with write(2), and the launcher's counters chunk.
#include "trace/chunk.hpp"
#include "trace/format.hpp"

#include "core/error.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gsq::trace {

using detail::crc_of;

namespace {
template <class T>
void append_pod(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
}  // namespace

Writer::Writer(const std::filesystem::path& file, const nlohmann::json& header) {
  fd_ = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw_bad_input(fmt::format("cannot write trace {}: {}", file.string(), std::strerror(errno)));
  std::string magic(kFileMagic, sizeof kFileMagic);
  if (::write(fd_, magic.data(), magic.size()) != static_cast<ssize_t>(magic.size())) failed_ = true;
  bytes_ = magic.size();
  chunk(ChunkType::header, header.dump());
}

Writer::~Writer() {
  if (fd_ >= 0) ::close(fd_);
}

uint32_t Writer::intern(std::string_view s) {
  if (s.empty()) return 0;
  const auto [it, added] = ids_.try_emplace(std::string(s), next_id_);
  if (added) {
    ++next_id_;
    append_pod(pending_strings_, it->second);
    append_pod(pending_strings_, static_cast<uint32_t>(s.size()));
    pending_strings_.append(s);
  }
  return it->second;
}

void Writer::write_records(std::span<const Record> records) {
  if (!pending_strings_.empty()) {
    chunk(ChunkType::strings, pending_strings_);
    pending_strings_.clear();
  }
  // Large batches go out in several chunks so no chunk exceeds the reader's limit.
  constexpr size_t per_chunk = kMaxChunkBytes / sizeof(Record) / 2;
  for (size_t i = 0; i < records.size(); i += per_chunk) {
    const size_t n = std::min(per_chunk, records.size() - i);
    chunk(ChunkType::records, std::string_view(reinterpret_cast<const char*>(records.data() + i), n * sizeof(Record)));
  }
}

void Writer::write_stats(const nlohmann::json& stats) {
  chunk(ChunkType::stats, stats.dump());
}

void Writer::write_end(const nlohmann::json& stats) {
  if (!pending_strings_.empty()) {
    chunk(ChunkType::strings, pending_strings_);
    pending_strings_.clear();
  }
  chunk(ChunkType::end, stats.dump());
}

namespace {

// Header + payload as one buffer, written with one loop of write(2): a chunk is either wholly in the file or
// detectably cut short. Returns the bytes written, or -1 on failure.
int64_t write_chunk(int fd, ChunkType type, std::string_view payload) {
  ChunkHeader h;
  h.type = static_cast<uint32_t>(type);
  h.size = static_cast<uint32_t>(payload.size());
  h.crc = crc_of(payload);
  std::string buf;
  buf.reserve(sizeof h + payload.size());
  append_pod(buf, h);
  buf.append(payload);
  size_t done = 0;
  while (done < buf.size()) {
    const ssize_t n = ::write(fd, buf.data() + done, buf.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    done += static_cast<size_t>(n);
  }
  return static_cast<int64_t>(buf.size());
}

}  // namespace

void Writer::chunk(ChunkType type, std::string_view payload) {
  if (failed_ || fd_ < 0) return;
  const int64_t n = write_chunk(fd_, type, payload);
  if (n < 0)
    failed_ = true;
  else
    bytes_ += static_cast<uint64_t>(n);
}

void append_counters(const std::filesystem::path& file, const nlohmann::json& payload) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) throw_bad_input(fmt::format("{}: cannot append counters: {}", file.string(), std::strerror(errno)));
  const int64_t n = write_chunk(fd, ChunkType::counters, payload.dump());
  ::close(fd);
  if (n < 0) throw_bad_input(fmt::format("{}: counters chunk not fully written", file.string()));
}

}  // namespace gsq::trace
