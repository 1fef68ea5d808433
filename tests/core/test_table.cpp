// Markdown tables and the helpers used by every printer.
#include "core/table.hpp"

#include <gtest/gtest.h>

namespace gsq {
namespace {

TEST(Table, AlignsColumnsByDisplayWidth) {
  const Table t{{"a", "temp"}, {{"x", "51 °C"}, {"longer", "1"}}};
  const std::string md = t.markdown();
  EXPECT_EQ(md,
            "| a      | temp  |\n"
            "|--------|-------|\n"
            "| x      | 51 °C |\n"
            "| longer | 1     |\n");
}

TEST(Table, EscapesPipes) {
  EXPECT_NE((Table{{"h"}, {{"a|b"}}}).markdown().find("a\\|b"), std::string::npos);
}

TEST(Abbreviate, KeepsShortAndCutsLongOnCharacterBoundaries) {
  EXPECT_EQ(abbreviate("short"), "short");
  const std::string long_text(200, 'x');
  EXPECT_EQ(abbreviate(long_text, 10), "xxxxxxxxxx… (200 chars)");
  EXPECT_EQ(abbreviate("ab°cd", 3), "ab… (6 chars)");
}

TEST(HtmlEscape, EscapesMarkup) {
  EXPECT_EQ(html_escape("<a href='x'>&"), "&lt;a href=&#39;x&#39;&gt;&amp;");
}

}  // namespace
}  // namespace gsq
