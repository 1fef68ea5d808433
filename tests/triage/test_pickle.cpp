// The data-only pickle reader on SYNTHETIC inputs: small pickles made with CPython's pickle.dumps (protocols 0, 2, 4;
// the Python that made each is in its comment) and hostile variants, as hex so the bytes are exact.
#include "core/pickle.hpp"

#include "core/error.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gsq::triage {
namespace {

std::string unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

std::string error_of(const std::string& bytes) {
  try {
    (void)parse_pickle(bytes, "t.pickle");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    return e.what();
  }
  return "";
}

// pickle.dumps({'a': 1, 'b': [True, None, 2.5, -3, 2**40, -2**40, 'é']}, protocol=2)
const char* kPlainP2 =
    "80027d71002858010000006171014b0158010000006271025d710328884e4740040000000000004afdffffff8a060000000000018a06000000"
    "0000ff5802000000c3a9710465752e";
// pickle.dumps({'seg': ({'size': 1 << 33},), 'big': -(2**63)}, protocol=4)
const char* kPlainP4 =
    "8004952e000000000000007d94288c03736567947d948c0473697a65948a0500000000027385948c03626967948a080000000000000080752"
    "e";
// pickle.dumps({'x': [1, 2], 't': (3,)}, protocol=0)
const char* kP0 = "286470300a56780a70310a286c70320a49310a6149320a617356740a70330a2849330a7470340a732e";
// pickle.dumps(collections.OrderedDict(a=1), protocol=4): GLOBAL through STACK_GLOBAL, then REDUCE
const char* kGlobal =
    "80049529000000000000008c0b636f6c6c656374696f6e73948c0b4f726465726564446963749493942952948c0161944b01732e";
// x = [7]; pickle.dumps([x, x], protocol=4)
const char* kShared = "8004950c000000000000005d94285d944b07616801652e";
// l = []; l.append(l); pickle.dumps(l, protocol=4)
const char* kCycle = "80049506000000000000005d946800612e";

TEST(Pickle, ReadsEveryPlainTypeOfProtocol2) {
  const PyValue v = parse_pickle(unhex(kPlainP2), "t");
  ASSERT_TRUE(v.is(PyValue::Type::dict));
  EXPECT_EQ(v.int_or("a", 0), 1);
  const auto& b = v.list_or_empty("b");
  ASSERT_EQ(b.size(), 7u);
  EXPECT_TRUE(b[0].is(PyValue::Type::boolean) && b[0].boolean);
  EXPECT_TRUE(b[1].is(PyValue::Type::none));
  EXPECT_DOUBLE_EQ(b[2].floating, 2.5);
  EXPECT_EQ(b[3].integer, -3);
  EXPECT_EQ(b[4].integer, int64_t{1} << 40);
  EXPECT_EQ(b[5].integer, -(int64_t{1} << 40));
  EXPECT_EQ(*b[6].text, "\xc3\xa9");  // UTF-8 kept as bytes of the string
}

TEST(Pickle, ReadsProtocol4FramesMemoTuplesAndTheSmallestInt64) {
  const PyValue v = parse_pickle(unhex(kPlainP4), "t");
  const auto& seg = v.list_or_empty("seg");
  ASSERT_EQ(seg.size(), 1u);
  EXPECT_TRUE(v.get("seg")->is(PyValue::Type::tuple));
  EXPECT_EQ(seg[0].int_or("size", 0), int64_t{1} << 33);
  EXPECT_EQ(v.int_or("big", 0), INT64_MIN);
}

TEST(Pickle, ReadsTextProtocol0) {
  const PyValue v = parse_pickle(unhex(kP0), "t");
  ASSERT_EQ(v.list_or_empty("x").size(), 2u);
  EXPECT_EQ(v.list_or_empty("x")[1].integer, 2);
  EXPECT_EQ(v.list_or_empty("t")[0].integer, 3);
}

TEST(Pickle, MemoReferencesShareOneObject) {
  const PyValue v = parse_pickle(unhex(kShared), "t");
  ASSERT_TRUE(v.is(PyValue::Type::list));
  ASSERT_EQ(v.items->size(), 2u);
  EXPECT_EQ((*v.items)[0].items.get(), (*v.items)[1].items.get());
}

TEST(Pickle, RefusesCodeNamingTheOpcodeAndByte) {
  const std::string why = error_of(unhex(kGlobal));
  EXPECT_NE(why.find("STACK_GLOBAL"), std::string::npos) << why;
  EXPECT_NE(why.find("never executed"), std::string::npos) << why;
  EXPECT_NE(why.find("t.pickle: not a readable pickle at byte 39"), std::string::npos) << why;
  // The classic protocol-0 form: GLOBAL 'os\nsystem'.
  EXPECT_NE(error_of("cos\nsystem\n(S'true'\ntR.").find("opcode GLOBAL"), std::string::npos);
}

TEST(Pickle, RefusesAContainerThatContainsItself) {
  EXPECT_NE(error_of(unhex(kCycle)).find("contains itself"), std::string::npos);
}

TEST(Pickle, EveryTruncationIsAnErrorNeverACrash) {
  const std::string full = unhex(kPlainP4);
  for (size_t n = 0; n < full.size(); ++n)
    EXPECT_FALSE(error_of(full.substr(0, n)).empty()) << "accepted the first " << n << " bytes";
}

TEST(Pickle, RefusesDeepNestingAndHugeIntegers) {
  std::string deep = "\x80\x04";
  for (int i = 0; i < 2000; ++i) deep += "]";  // EMPTY_LIST
  for (int i = 0; i < 1999; ++i) deep += "a";  // APPEND each into the one below
  deep += ".";
  EXPECT_NE(error_of(deep).find("nested deeper"), std::string::npos);
  EXPECT_NE(error_of(std::string("\x80\x04\x8a\x09") + std::string(9, '\x01') + ".").find("64 bits"),
            std::string::npos);
  EXPECT_NE(error_of("\x80\x04K\x01K\x02.").find("exactly one value"), std::string::npos);
}

}  // namespace
}  // namespace gsq::triage
