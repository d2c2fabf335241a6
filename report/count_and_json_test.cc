#include <limits>

#include "gtest/gtest.h"
#include "report/count.h"
#include "report/json_io.h"

namespace torchscan::report {
namespace {

Count Pow2(int exponent) { return Count(1) << exponent; }

TEST(CountTest, CheckedArithmeticDetectsOverflowAtThe128BitBoundary) {
  const Count max = std::numeric_limits<Count>::max();
  EXPECT_EQ(CheckedAdd(max - 1, 1), max);
  EXPECT_EQ(CheckedAdd(max, 1), std::nullopt);
  EXPECT_EQ(CheckedMultiply(Pow2(62), 4), Pow2(64));
  EXPECT_EQ(CheckedMultiply(Pow2(64), Pow2(63)), std::nullopt);
}

TEST(CountTest, PrintsEveryMagnitudeExactly) {
  // Literals written out by hand: each side of 64 bits, a 19-digit chunk of
  // zeros inside a larger count, and both ends of the 128-bit range.
  EXPECT_EQ("0", CountToString(0));
  EXPECT_EQ("-1", CountToString(-1));
  EXPECT_EQ("18446744073709551615", CountToString(Pow2(64) - 1));
  EXPECT_EQ("18446744073709551616", CountToString(Pow2(64)));
  EXPECT_EQ("-18446744073709551616", CountToString(-Pow2(64)));
  const Count ten_to_19 = Count(10000000000000000000ULL);
  EXPECT_EQ("10000000000000000000", CountToString(ten_to_19));
  EXPECT_EQ("92233720368547758080000000000000000007",
            CountToString(Pow2(63) * ten_to_19 + 7));
  EXPECT_EQ("100000000000000000000000000000000000000",
            CountToString(ten_to_19 * ten_to_19));
  EXPECT_EQ("170141183460469231731687303715884105727",
            CountToString(std::numeric_limits<Count>::max()));
  EXPECT_EQ("-170141183460469231731687303715884105728",
            CountToString(std::numeric_limits<Count>::min()));
}

TEST(CountTest, ParsesAndPrintsBeyond64Bits) {
  // 3.14e23: roughly the training FLOPs of a 175B-parameter model.
  const std::string digits = "314000000000000000000000";
  std::optional<Count> value = ParseCount(digits);
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(*value,
            Count(314) * Count(1000000000) * Count(1000000000) * Count(1000));
  EXPECT_EQ(CountToString(*value), digits);
  EXPECT_EQ(ParseCount("-170141183460469231731687303715884105728"),
            std::numeric_limits<Count>::min());
  EXPECT_EQ(ParseCount("170141183460469231731687303715884105728"),
            std::nullopt);
  EXPECT_EQ(ParseCount("12a"), std::nullopt);
  EXPECT_EQ(ParseCount("-"), std::nullopt);
  EXPECT_EQ(ParseCount(""), std::nullopt);
}

TEST(JsonIoTest, IntegersAtEveryBoundaryRoundTripExactly) {
  const Count int64_max = std::numeric_limits<std::int64_t>::max();
  const Count uint64_max = std::numeric_limits<std::uint64_t>::max();
  for (Count value : {Count(0), int64_max, int64_max + 1, uint64_max,
                      uint64_max + 1, std::numeric_limits<Count>::max(),
                      std::numeric_limits<Count>::min(), Count(-5)}) {
    const std::string text = DumpJson(Json::array({CountToJson(value)}));
    EXPECT_EQ(text, "[" + CountToString(value) + "]");
    absl::StatusOr<Json> parsed = ParseJson(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    absl::StatusOr<Count> back = JsonToCount((*parsed)[0], "x");
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, value);
  }
}

TEST(JsonIoTest, RejectsIntegersBeyond128Bits) {
  absl::StatusOr<Json> parsed =
      ParseJson("[1701411834604692317316873037158841057280]");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("out of range"), std::string::npos);
}

TEST(JsonIoTest, FloatsAndStringsAreNotCounts) {
  absl::StatusOr<Json> parsed = ParseJson(R"({"a": 1.5, "b": "7", "c": 1e30})");
  ASSERT_TRUE(parsed.ok());
  EXPECT_FALSE(JsonToCount((*parsed)["a"], "a").ok());
  EXPECT_FALSE(JsonToCount((*parsed)["b"], "b").ok());
  absl::StatusOr<Count> c = JsonToCount((*parsed)["c"], "doc.c");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("doc.c: expected an integer"),
            std::string::npos);
}

TEST(JsonIoTest, ParseErrorsSayWhatIsWrong) {
  EXPECT_NE(ParseJson(R"({"a": 1, "a": 2})")
                .status()
                .message()
                .find("duplicate key \"a\""),
            std::string::npos);
  EXPECT_NE(
      ParseJson("{\"a\": ").status().message().find("invalid JSON at byte"),
      std::string::npos);
  EXPECT_FALSE(ParseJson("[1] [2]").ok());
  EXPECT_FALSE(ParseJson("[NaN]").ok());
}

TEST(JsonIoTest, DumpKeepsInsertionOrderAndIndents) {
  Json document = Json::object();
  document["zeta"] = 1;
  document["alpha"] = Json::array({true, nullptr, "x\"y"});
  document["empty"] = Json::object();
  EXPECT_EQ(DumpJson(document),
            R"({"zeta":1,"alpha":[true,null,"x\"y"],"empty":{}})");
  EXPECT_EQ(DumpJson(document, 2),
            "{\n  \"zeta\": 1,\n  \"alpha\": [\n    true,\n    null,\n    "
            "\"x\\\"y\"\n  ],\n  \"empty\": {}\n}");
}

}  // namespace
}  // namespace torchscan::report
