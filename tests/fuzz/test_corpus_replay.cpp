// Replays the fuzz target over the recorded fixtures and systematic corruptions of them (truncation at many offsets,
// flipped bytes), so CI exercises the parsers' error paths without libFuzzer.
#include "analyze/kineto.hpp"
#include "support/fixtures.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

extern "C" int gsq_fuzz_one(const uint8_t* data, size_t size);

namespace {

std::string load(const std::filesystem::path& p) {
  return gsq::analyze::read_maybe_gzip(p);
}

TEST(CorpusReplay, InputsThatOnceCrashedNowFailCleanly) {
  size_t n = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(GSQ_SOURCE_DIR) / "tests/fuzz/regressions")) {
    const std::string text = load(entry.path());
    gsq_fuzz_one(reinterpret_cast<const uint8_t*>(text.data()), text.size());
    ++n;
  }
  EXPECT_GT(n, 0u);
}

TEST(CorpusReplay, FixturesAndTheirCorruptionsNeverCrash) {
  size_t cases = 0;
  std::mt19937 rng(12345);
  for (const auto& entry : std::filesystem::directory_iterator(GSQ_FIXTURE_DIR)) {
    if (!entry.is_regular_file()) continue;
    const std::string text = load(entry.path());
    const auto* p = reinterpret_cast<const uint8_t*>(text.data());
    gsq_fuzz_one(p, text.size());
    for (int k = 1; k < 32; ++k) gsq_fuzz_one(p, text.size() * static_cast<size_t>(k) / 32);  // truncations
    for (int k = 0; k < 32; ++k) {
      std::string flipped = text;
      for (int j = 0; j < 4 && !flipped.empty(); ++j) flipped[rng() % flipped.size()] = static_cast<char>(rng());
      gsq_fuzz_one(reinterpret_cast<const uint8_t*>(flipped.data()), flipped.size());
    }
    cases += 64;
  }
  EXPECT_GT(cases, 0u);
}

TEST(CorpusReplay, FlightRecorderDumpsAndTheirCorruptionsNeverCrash) {
  size_t n = 0;
  std::mt19937 rng(777);
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(GSQ_SOURCE_DIR) /
                                                               "tests/data/triage/flight-recorder/nvrx_lock_gil_2nd")) {
    const std::string text = load(entry.path());
    const auto* p = reinterpret_cast<const uint8_t*>(text.data());
    gsq_fuzz_one(p, text.size());
    for (size_t k = 1; k < text.size(); k += 97) gsq_fuzz_one(p, k);  // truncations
    for (int k = 0; k < 64; ++k) {
      std::string flipped = text;
      for (int j = 0; j < 2; ++j) flipped[rng() % flipped.size()] = static_cast<char>(rng());
      gsq_fuzz_one(reinterpret_cast<const uint8_t*>(flipped.data()), flipped.size());
    }
    ++n;
  }
  EXPECT_EQ(n, 16u);
}

TEST(CorpusReplay, TuneProfilesAndTheirCorruptionsNeverCrash) {
  size_t n = 0;
  std::mt19937 rng(4242);
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(GSQ_SOURCE_DIR) / "deploy/tune")) {
    const std::string text = load(entry.path());
    const auto* p = reinterpret_cast<const uint8_t*>(text.data());
    gsq_fuzz_one(p, text.size());
    for (size_t k = 1; k < text.size(); k += 7) gsq_fuzz_one(p, k);  // every 7th truncation
    for (int k = 0; k < 64; ++k) {
      std::string flipped = text;
      flipped[rng() % flipped.size()] = "[]=\"'.#\n,{}0"[rng() % 12];
      gsq_fuzz_one(reinterpret_cast<const uint8_t*>(flipped.data()), flipped.size());
    }
    ++n;
  }
  EXPECT_GE(n, 3u);
}

TEST(CorpusReplay, AllocatorSnapshotsAndTheirCorruptionsNeverCrash) {
  const auto file = gsq::test::shared_data("pytorch-snapshots/magma27_cached_90pct_inactive.pickle");
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not present (shared test data)";
  const std::string text = load(file);
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  EXPECT_EQ(gsq_fuzz_one(p, text.size()), 0);
  std::mt19937 rng(777);
  for (int k = 1; k < 16; ++k) gsq_fuzz_one(p, text.size() * static_cast<size_t>(k) / 16);
  for (int k = 0; k < 16; ++k) {
    std::string flipped = text;
    for (int j = 0; j < 8; ++j) flipped[rng() % flipped.size()] = static_cast<char>(rng());
    gsq_fuzz_one(reinterpret_cast<const uint8_t*>(flipped.data()), flipped.size());
  }
}

}  // namespace
