// Versioned JSON files: atomic write, read back, and clear errors.
#include "core/error.hpp"
#include "core/json_io.hpp"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <fstream>

namespace gsq {
namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    return e.what();
  }
  return "";
}

TEST(JsonIo, WriteThenReadBack) {
  const auto p = std::filesystem::temp_directory_path() / "gsq-json-io.json";
  write_json_file(p, {{"schema", "gpusqueeze.x/1"}, {"v", 3}});
  EXPECT_EQ(read_json_file(p, "gpusqueeze.x/1")["v"], 3);
  EXPECT_FALSE(std::filesystem::exists(p.string() + ".tmp"));
  std::filesystem::remove(p);
}

TEST(JsonIo, ErrorsNameTheProblem) {
  EXPECT_NE(error_of([] { (void)read_json_file("/nonexistent/x.json", "s/1"); }).find("no such file"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)parse_json_text("", "e.json", "s/1"); }).find("empty file"), std::string::npos);
  EXPECT_NE(error_of([] { (void)parse_json_text("[1,2]", "a.json", "s/1"); }).find("expected a JSON object"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)parse_json_text("{\"a\":1}", "a.json", "s/1"); }).find("no \"schema\""),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)parse_json_text("{\"schema\":\"s/1\",", "t.json", "s/1"); }).find("truncated"),
            std::string::npos);
}

}  // namespace
}  // namespace gsq

namespace gsq {
namespace {

TEST(JsonIo, HugeNumberIsBadInputNotACrash) {
  // Found by the fuzzer: nlohmann throws out_of_range, not parse_error, for numbers beyond double.
  EXPECT_NE(error_of([] { (void)parse_json_text("{\"schema\": 5E83166}", "n.json", "s/1"); }).find("not valid JSON"),
            std::string::npos);
}

// gzip framing of `text`, as `gzip` writes it (zlib's deflate with windowBits 16 + 15).
std::string gzip_of(const std::string& text) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, static_cast<uLong>(text.size())) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

TEST(JsonIo, GzipCompressedDocumentsAreReadAndATruncatedOneIsNamed) {
  const auto p = std::filesystem::temp_directory_path() / ("gsq-json-io-" + std::to_string(::getpid()) + ".json.gz");
  const std::string gz = gzip_of(R"({"schema":"gpusqueeze.x/1","v":[1,2,3]})");
  std::ofstream(p, std::ios::binary) << gz;
  EXPECT_EQ(read_json_file(p, "gpusqueeze.x/1")["v"].size(), 3U);
  std::ofstream(p, std::ios::binary | std::ios::trunc) << gz.substr(0, gz.size() / 2);
  EXPECT_NE(error_of([&] { (void)read_json_file(p, "gpusqueeze.x/1"); }).find("truncated gzip stream"),
            std::string::npos);
  std::filesystem::remove(p);
}

}  // namespace
}  // namespace gsq
