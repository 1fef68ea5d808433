// Versioned JSON files: atomic write, read back, and clear errors.
#include "core/error.hpp"
#include "core/json_io.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gsq
