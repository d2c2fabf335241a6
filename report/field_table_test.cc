#include "report/field_table.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "report/count.h"
#include "report/field_table_testing.h"
#include "report/json_io.h"
#include "report/json_reader.h"

namespace torchscan::report {
namespace {

enum class Color { kRed, kDeepBlue };

constexpr std::pair<Color, absl::string_view> kColorNames[] = {
    {Color::kRed, "red"}, {Color::kDeepBlue, "deep_blue"}};

absl::Span<const std::pair<Color, absl::string_view>> EnumNames(Color) {
  return kColorNames;
}

struct Point {
  std::int64_t x = 0;
  std::int64_t y = 0;

  bool operator==(const Point&) const = default;
  static constexpr auto kFields =
      std::make_tuple(Field("x", &Point::x), Field("y", &Point::y));
};

// Every kind of member the facility reads.
struct Everything {
  bool flag = false;
  std::string name;
  std::int64_t offset = 0;
  std::uint64_t size = 0;
  Count total = 0;
  double scale = 0;
  Color color = Color::kRed;
  Point origin;
  std::vector<Point> path;
  std::vector<std::optional<std::int64_t>> holes;
  std::map<std::string, double> weights;
  std::optional<std::string> note;
  std::optional<JsonNull> none;
  std::string label;
  std::optional<std::int64_t> nullable;

  bool operator==(const Everything&) const = default;
  static constexpr auto kFields = std::make_tuple(
      Field("flag", &Everything::flag), Field("name", &Everything::name),
      Field("offset", &Everything::offset), Field("size", &Everything::size),
      Field("total", &Everything::total), Field("scale", &Everything::scale),
      Field("color", &Everything::color), Field("origin", &Everything::origin),
      Field("path", &Everything::path, kOptional),
      Field("holes", &Everything::holes, kOptional),
      Field("weights", &Everything::weights, kOptional),
      Field("note", &Everything::note, kOptional),
      Field("none", &Everything::none, kOptional),
      Field("label", &Everything::label, kOptional),
      Field("nullable", &Everything::nullable));
};

// A record with a check across its fields.
struct Range {
  std::int64_t low = 0;
  std::int64_t high = 0;

  bool operator==(const Range&) const = default;
  absl::Status Validate(absl::string_view path) const {
    if (high < low) return FieldError(MemberPath(path, "high"), "is below low");
    return absl::OkStatus();
  }
  static constexpr auto kFields =
      std::make_tuple(Field("low", &Range::low), Field("high", &Range::high));
};

Everything Full() {
  Everything full;
  full.flag = true;
  full.name = "n";
  full.offset = -3;
  full.size = std::numeric_limits<std::uint64_t>::max();
  full.total = Count(1) << 100;
  full.scale = -std::numeric_limits<double>::infinity();
  full.color = Color::kDeepBlue;
  full.origin = {1, 2};
  full.path = {{3, 4}, {5, 6}};
  full.holes = {7, std::nullopt};
  full.weights = {{"b", 0.5}, {"a", 1.0}};
  full.note = "x";
  full.none = JsonNull{};
  full.label = "l";
  full.nullable = -8;
  return full;
}

}  // namespace

template <>
struct FieldTableSamples<Point> {
  static std::vector<Point> Get() { return {{0, 0}, {-1, 9}}; }
};
template <>
struct FieldTableSamples<Everything> {
  static std::vector<Everything> Get() { return {Everything{}, Full()}; }
};
template <>
struct FieldTableSamples<Range> {
  static std::vector<Range> Get() { return {{1, 2}}; }
};

namespace {

using Records = ::testing::Types<Point, Everything, Range>;
INSTANTIATE_TYPED_TEST_SUITE_P(FieldTableTest, FieldTableRoundTrip, Records);

template <typename T>
std::string ReadError(absl::string_view text) {
  absl::StatusOr<T> read = FromJsonText<T>(text, "record");
  return read.ok() ? "" : std::string(read.status().message());
}

// The wire format, written out by hand: table order, optional fields left
// out when unset, 2^100 as an exact integer, -inf as a string, maps in key
// order, nullopt items as null.
TEST(FieldTableTest, WritesTheTableInOrder) {
  EXPECT_EQ(
      R"({"flag":true,"name":"n","offset":-3,"size":18446744073709551615,)"
      R"("total":1267650600228229401496703205376,"scale":"-inf",)"
      R"("color":"deep_blue","origin":{"x":1,"y":2},)"
      R"("path":[{"x":3,"y":4},{"x":5,"y":6}],"holes":[7,null],)"
      R"("weights":{"a":1.0,"b":0.5},"note":"x","none":null,"label":"l",)"
      R"("nullable":-8})",
      DumpJson(ToJson(Full())));
  EXPECT_EQ(
      R"({"flag":false,"name":"","offset":0,"size":0,"total":0,"scale":0.0,)"
      R"("color":"red","origin":{"x":0,"y":0},"nullable":null})",
      DumpJson(ToJson(Everything{})));
}

constexpr char kMinimal[] =
    R"({"flag":false,"name":"","offset":0,"size":0,"total":0,"scale":0,)"
    R"("color":"red","origin":{"x":0,"y":0})";

std::string WithMinimal(absl::string_view extra) {
  return std::string(kMinimal) + R"(,"nullable":null)" + std::string(extra) +
         "}";
}

TEST(FieldTableTest, ErrorsNameThePathOfNestedFields) {
  EXPECT_EQ("record.path[1].z: unknown field",
            ReadError<Everything>(
                WithMinimal(R"(,"path":[{"x":1,"y":2},{"x":1,"z":2}])")));
  EXPECT_EQ("record.path[0].y: is missing",
            ReadError<Everything>(WithMinimal(R"(,"path":[{"x":1}])")));
  EXPECT_EQ("record.holes[1]: expected an integer, got string",
            ReadError<Everything>(WithMinimal(R"(,"holes":[1,"2"])")));
  EXPECT_EQ(
      "record.weights.a: expected a number, \"inf\", \"-inf\" or "
      "\"nan\", got boolean",
      ReadError<Everything>(WithMinimal(R"(,"weights":{"a":true})")));
}

TEST(FieldTableTest, ScalarsAreCheckedByRange) {
  const std::string size_minus_one =
      R"({"flag":false,"name":"","offset":0,"size":-1})";
  EXPECT_EQ("record.size: must not be negative, got -1",
            ReadError<Everything>(size_minus_one));
  EXPECT_EQ("record.size: is out of range, got 18446744073709551616",
            ReadError<Everything>(R"({"flag":false,"name":"","offset":0,)"
                                  R"("size":18446744073709551616})"));
  EXPECT_EQ("record.offset: does not fit in 64 bits",
            ReadError<Everything>(
                R"({"flag":false,"name":"","offset":9223372036854775808})"));
}

TEST(FieldTableTest, EnumsAreReadByName) {
  std::string text = kMinimal;
  text.replace(text.find("\"red\""), 5, "\"green\"");
  EXPECT_EQ("record.color: expected \"red\" or \"deep_blue\", got string",
            ReadError<Everything>(text + "}"));
}

TEST(FieldTableTest, NonFiniteDoublesAreStrings) {
  for (double value : {std::numeric_limits<double>::infinity(),
                       -std::numeric_limits<double>::infinity(), 1.5, -0.0}) {
    const Json written = ToJson(value);
    absl::StatusOr<double> read = FromJson<double>(JsonValue(written, "x"));
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(value, *read);
    EXPECT_EQ(std::signbit(value), std::signbit(*read));
  }
  EXPECT_EQ("\"inf\"",
            DumpJson(ToJson(std::numeric_limits<double>::infinity())));
  EXPECT_EQ("\"nan\"", DumpJson(ToJson(std::nan(""))));
  const Json nan = "nan";
  absl::StatusOr<double> read = FromJson<double>(JsonValue(nan, "x"));
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(std::isnan(*read));
  const Json infinity = "Infinity";
  EXPECT_EQ("x: expected a number, \"inf\", \"-inf\" or \"nan\", got string",
            FromJson<double>(JsonValue(infinity, "x")).status().message());
}

TEST(FieldTableTest, OptionalFieldsMayBeAbsentButNotNull) {
  absl::StatusOr<Everything> read =
      FromJsonText<Everything>(WithMinimal(""), "record");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(Everything{}, *read);
  EXPECT_EQ("record.note: expected a string, got null",
            ReadError<Everything>(WithMinimal(R"(,"note":null)")));
  EXPECT_EQ("record.none: expected null, got integer",
            ReadError<Everything>(WithMinimal(R"(,"none":1)")));
  // A required std::optional is nullable, but its key must be there.
  EXPECT_EQ("record.nullable: is missing",
            ReadError<Everything>(std::string(kMinimal) + "}"));
}

TEST(FieldTableTest, ValidateChecksTheRecordWithItsPath) {
  EXPECT_EQ("record.high: is below low",
            ReadError<Range>(R"({"low":2,"high":1})"));
  EXPECT_EQ("record: expected an object, got array", ReadError<Range>("[]"));
  EXPECT_EQ(0u, ReadError<Range>("{").rfind("record: invalid JSON", 0));
}

}  // namespace
}  // namespace torchscan::report
