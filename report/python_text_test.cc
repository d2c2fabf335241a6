// Expected strings are Python 3.11's own output (repr, format, json.dumps).

#include "report/python_text.h"

#include <limits>

#include "gtest/gtest.h"
#include "report/json_io.h"

namespace torchscan::report {
namespace {

TEST(PythonTextTest, FloatReprMatchesPython) {
  const std::pair<double, const char*> cases[] = {
      {0.1, "0.1"},
      {1.0, "1.0"},
      {-0.0, "-0.0"},
      {1e16, "1e+16"},
      {1e15, "1000000000000000.0"},
      {123456789012345678.0, "1.2345678901234568e+17"},
      {1e-5, "1e-05"},
      {0.0001, "0.0001"},
      {1.5e-7, "1.5e-07"},
      {1.0 / 3, "0.3333333333333333"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {-123.456, "-123.456"},
      {100.0, "100.0"},
      {1e22, "1e+22"},
      {9007199254740993.0, "9007199254740992.0"},
      {0.1 + 0.2, "0.30000000000000004"},
      {12345.678e10, "123456780000000.0"},
      {std::numeric_limits<double>::infinity(), "inf"},
  };
  for (const auto& [value, expected] : cases) {
    EXPECT_EQ(PythonFloatRepr(value), expected) << expected;
  }
}

// f"{v:.2f}" and f"{v:.0f}": the binary value rounded half to even.
TEST(PythonTextTest, FixedFormattingMatchesPython) {
  struct Case {
    double value;
    const char* two;
    const char* zero;
  };
  const Case cases[] = {
      {0.125, "0.12", "0"},
      {0.375, "0.38", "0"},
      {2.675, "2.67", "3"},
      {1.005, "1.00", "1"},
      {0.5, "0.50", "0"},
      {1.5, "1.50", "2"},
      {2.5, "2.50", "2"},
      {-0.5, "-0.50", "-0"},
      {-0.001, "-0.00", "-0"},
      {388.8, "388.80", "389"},
      {201.824, "201.82", "202"},
      {1e22, "10000000000000000000000.00", "10000000000000000000000"},
      {0.045, "0.04", "0"},
      {1.115, "1.11", "1"},
      {1024.0625, "1024.06", "1024"},
      {999.995, "1000.00", "1000"},
      {0.0, "0.00", "0"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(PythonFixed(c.value, 2), c.two) << c.two;
    EXPECT_EQ(PythonFixed(c.value, 0), c.zero) << c.zero;
  }
}

TEST(PythonTextTest, FloorDivisionIsPythons) {
  EXPECT_EQ(PythonFloorDivide(3e14, 1e12), 300.0);
  EXPECT_EQ(PythonFloorDivide(999999999999.9999, 1e12), 0.0);
  // floor(1 / 0.1) is 10, but Python's 1 // 0.1 is 9.
  EXPECT_EQ(PythonFloorDivide(1.0, 0.1), 9.0);
  EXPECT_EQ(PythonFloorDivide(-5.0, 1e3), -1.0);
}

TEST(PythonTextTest, ThousandsSeparators) {
  EXPECT_EQ(PythonThousands(0), "0");
  EXPECT_EQ(PythonThousands(999), "999");
  EXPECT_EQ(PythonThousands(1000), "1,000");
  EXPECT_EQ(PythonThousands(-1234567), "-1,234,567");
  EXPECT_EQ(PythonThousands(std::numeric_limits<Count>::max()),
            "170,141,183,460,469,231,731,687,303,715,884,105,727");
}

TEST(PythonTextTest, StringReprPicksQuotesAndEscapesAsPython) {
  EXPECT_EQ(PythonStringRepr("x"), "'x'");
  EXPECT_EQ(PythonStringRepr("it's"), "\"it's\"");
  EXPECT_EQ(PythonStringRepr("a\"b"), "'a\"b'");
  EXPECT_EQ(PythonStringRepr("a'b\"c"), "'a\\'b\"c'");
  EXPECT_EQ(PythonStringRepr("tab\there"), "'tab\\there'");
  EXPECT_EQ(PythonStringRepr("\x7f\u0080\u00a0\u00e9\u2028\u200b\ue000"
                             "\U0010fffd\U0001F600\n\\"),
            "'\\x7f\\x80\\xa0\u00e9\\u2028\\u200b\\ue000\\U0010fffd"
            "\U0001F600\\n\\\\'");
  EXPECT_EQ(PythonStringRepr(std::string("\x00\x1f", 2)), "'\\x00\\x1f'");
  EXPECT_EQ(PythonStringRepr("\uffff"), "'\\uffff'");
  EXPECT_EQ(PythonStringRepr("\u00ad"), "'\\xad'");
  EXPECT_EQ(PythonStringRepr("\u6a21\u5757"), "'\u6a21\u5757'");
}

TEST(PythonTextTest, CodePointsAreCountedAndSlicedAsPythonStrings) {
  EXPECT_EQ(CodePointLength("\u251c\u2500conv"), 6u);
  EXPECT_EQ(CodePointLength("\u00fcn\u00efc\u00f6d\u00e9_\u6a21\u5757"), 10u);
  EXPECT_EQ(CodePointSlice("\u251c\u2500conv", 3), "\u251c\u2500c");
  EXPECT_EQ(CodePointSlice("abcdef", -2), "abcd");
  EXPECT_EQ(CodePointSlice("abcdef", -10), "");
  EXPECT_EQ(CodePointSlice("abc", 10), "abc");
  EXPECT_EQ(CodePointSlice("abc", 0), "");
  // A malformed byte is one unit and never read past the end.
  EXPECT_EQ(CodePointLength("\xe2\x94"), 2u);
}

TEST(PythonJsonTest, DumpsAsJsonDumps) {
  absl::StatusOr<Json> document = ParseJson(
      "{\"a\": [1, 2.5, null, true, false, "
      "\"\u00e9\u2028\U0001F600\x7f\\u0001\\\"\\\\/\\b\\f\\n\\r\\t\"], "
      "\"big\": 1267650600228229401496703205376, "
      "\"neg\": -1180591620717411303424, \"e\": {}, \"l\": [], "
      "\"f\": [1e16, 1e-5, 0.1, -0.0, 3.0]}");
  ASSERT_TRUE(document.ok()) << document.status();
  // json.dumps(doc)
  EXPECT_EQ(DumpPythonJson(*document),
            "{\"a\": [1, 2.5, null, true, false, "
            "\"\\u00e9\\u2028\\ud83d\\ude00\\u007f\\u0001\\\"\\\\/"
            "\\b\\f\\n\\r\\t\"], "
            "\"big\": 1267650600228229401496703205376, "
            "\"neg\": -1180591620717411303424, \"e\": {}, \"l\": [], "
            "\"f\": [1e+16, 1e-05, 0.1, -0.0, 3.0]}");
  // json.dumps(doc, indent=2)
  EXPECT_EQ(
      DumpPythonJson(*document, 2),
      "{\n  \"a\": [\n    1,\n    2.5,\n    null,\n    true,\n    false,\n"
      "    "
      "\"\\u00e9\\u2028\\ud83d\\ude00\\u007f\\u0001\\\"\\\\/\\b\\f\\n\\r\\t\"\n"
      "  ],\n  \"big\": 1267650600228229401496703205376,\n"
      "  \"neg\": -1180591620717411303424,\n  \"e\": {},\n  \"l\": [],\n"
      "  \"f\": [\n    1e+16,\n    1e-05,\n    0.1,\n    -0.0,\n    3.0\n  "
      "]\n}");
}

TEST(PythonJsonTest, NonFiniteFloatsAndBrokenTextAreWrittenAsPythonWould) {
  Json document = Json::array({std::numeric_limits<double>::infinity(),
                               -std::numeric_limits<double>::infinity(),
                               std::numeric_limits<double>::quiet_NaN(),
                               std::string("a\xff")});
  EXPECT_EQ(DumpPythonJson(document),
            "[Infinity, -Infinity, NaN, \"a\\ufffd\"]");
}

}  // namespace
}  // namespace torchscan::report
