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
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
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

// A tagged record: "kind" says which keys follow; "size" is the radius of a
// circle and the sides of a rectangle.
struct Shape {
  std::string kind = "circle";
  std::int64_t radius = 0;
  std::vector<std::int64_t> sides;
  std::string label;

  static bool IsCircle(const Shape& shape) { return shape.kind == "circle"; }
  static bool IsRectangle(const Shape& shape) { return !IsCircle(shape); }

  bool operator==(const Shape&) const = default;
  static constexpr auto kFields = std::make_tuple(
      Field("kind", &Shape::kind),
      FieldAs<IndexCodec>("size", &Shape::radius).When(&IsCircle),
      FieldAs<ArrayOf<IndexCodec>>("size", &Shape::sides).When(&IsRectangle),
      Field("label", &Shape::label, kOptional).When(&IsRectangle));
};

// A record whose value's key says its kind: {"cat": name} or {"dog": name}.
enum class Animal { kCat, kDog };

constexpr std::pair<Animal, absl::string_view> kAnimalNames[] = {
    {Animal::kCat, "cat"}, {Animal::kDog, "dog"}};

absl::Span<const std::pair<Animal, absl::string_view>> EnumNames(Animal) {
  return kAnimalNames;
}

struct Pet {
  std::string owner;
  Animal animal = Animal::kCat;
  std::string name;

  bool operator==(const Pet&) const = default;
  static constexpr auto kFields = std::make_tuple(
      Field("owner", &Pet::owner), FieldKeyedBy(&Pet::animal, &Pet::name));
};

// A recursive record, bounded.
struct Tree {
  std::vector<Tree> children;

  bool operator==(const Tree&) const = default;
  static constexpr int kMaxNesting = 2;
  static constexpr auto kFields =
      std::make_tuple(Field("children", &Tree::children));
};

// A record that keeps the keys it does not know, and an ordered object.
struct Open {
  std::string name;
  std::vector<std::pair<std::string, std::int64_t>> ordered;
  Json others = Json::object();

  bool operator==(const Open&) const = default;
  static constexpr Json Open::*kUnknownKeys = &Open::others;
  static constexpr auto kFields = std::make_tuple(
      Field("name", &Open::name), Field("ordered", &Open::ordered, kOptional));
};

// A record whose Validate completes it: an end left out is the start.
struct Interval {
  std::int64_t start = 0;
  std::int64_t end = 0;

  bool operator==(const Interval&) const = default;
  absl::Status Validate(absl::string_view path) {
    if (end == 0) end = start;
    if (end < start) {
      return FieldError(MemberPath(path, "end"), "is before start");
    }
    return absl::OkStatus();
  }
  static constexpr auto kFields =
      std::make_tuple(Field("start", &Interval::start),
                      Field("end", &Interval::end, kOptional));
};

// A member record whose keys sit beside the record's own (FieldsOf).
struct Labeled {
  std::string label;
  Interval interval;
  std::string note;

  bool operator==(const Labeled&) const = default;
  static constexpr auto kFields = std::make_tuple(
      Field("label", &Labeled::label), FieldsOf(&Labeled::interval),
      Field("note", &Labeled::note, kOptional));
};

// A document others extend (kAcceptsUnknownKeys), of a versioned schema,
// with two members grouped under one key (FieldGroup) and a check that asks
// which keys the document holds.
struct Extensible {
  int version = 2;
  std::string tool;
  std::string method;
  std::vector<std::int64_t> sizes;

  bool operator==(const Extensible&) const = default;
  // Sizes, when written, are not empty.
  absl::Status Validate(const JsonObject& object) const {
    if (object.Contains("sizes") && sizes.empty()) {
      return FieldError(object.PathOf("sizes"), "is empty");
    }
    return absl::OkStatus();
  }
  static constexpr bool kAcceptsUnknownKeys = true;
  static constexpr auto kFields = std::make_tuple(
      FieldAs<SchemaVersionCodec<2>>("version", &Extensible::version),
      FieldGroup("context", Field("tool", &Extensible::tool),
                 Field("method", &Extensible::method, kOptional)),
      Field("sizes", &Extensible::sizes, kOptional));
};

// A member read by functions of its own, and counts by name.
Json PointAsText(const Point& point) {
  return std::to_string(point.x) + "," + std::to_string(point.y);
}
absl::StatusOr<Point> PointFromText(const Json& node, absl::string_view path) {
  const JsonValue value(node, std::string(path));
  TS_ASSIGN_OR_RETURN(std::string text, value.String());
  const std::size_t comma = text.find(',');
  if (comma == std::string::npos) return value.Error("expected \"x,y\"");
  return Point{std::stoll(text.substr(0, comma)),
               std::stoll(text.substr(comma + 1))};
}

struct Counted {
  Point at;
  std::map<std::string, Count> counts;

  bool operator==(const Counted&) const = default;
  static constexpr auto kFields = std::make_tuple(
      FieldAs<JsonFunctions<PointAsText, PointFromText>>("at", &Counted::at),
      FieldAs<MapOf<NonNegativeCountCodec>>("counts", &Counted::counts));
};

// Items written with their running total beside each; read back as the
// items alone.
struct RunningTotalsCodec {
  static Json Write(const std::vector<std::int64_t>& items) {
    Json array = Json::array();
    std::int64_t running = 0;
    for (std::int64_t item : items) {
      running += item;
      array.push_back(Json{{"value", item}, {"running", running}});
    }
    return array;
  }
  static absl::StatusOr<std::vector<std::int64_t>> Read(const JsonValue& node) {
    TS_ASSIGN_OR_RETURN(JsonArray array, node.Array());
    std::vector<std::int64_t> items;
    for (std::size_t i = 0; i < array.size(); ++i) {
      TS_ASSIGN_OR_RETURN(JsonObject item, array.Item(i).Object());
      TS_ASSIGN_OR_RETURN(items.emplace_back(), item.Int64("value"));
    }
    return items;
  }
};

// Keys derived from the record: "sum" is no member, and "items" holds
// running totals beside the items.
struct Tallied {
  std::vector<std::int64_t> items;
  std::string name;

  bool operator==(const Tallied&) const = default;
  static Json Sum(const Tallied& tallied) {
    std::int64_t sum = 0;
    for (std::int64_t item : tallied.items) sum += item;
    return sum;
  }
  static constexpr const char* kDerivedFrom = "the items listed";
  static constexpr auto kFields = std::make_tuple(
      Derived("sum", &Tallied::Sum),
      FieldAs<RunningTotalsCodec>("items", &Tallied::items).Recomputed(),
      Field("name", &Tallied::name, kOptional));
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

template <>
struct FieldTableSamples<Shape> {
  static std::vector<Shape> Get() {
    return {{"circle", 3, {}, ""}, {"rectangle", 0, {1, 2}, "r"}};
  }
};
template <>
struct FieldTableSamples<Pet> {
  static std::vector<Pet> Get() {
    return {{"ann", Animal::kCat, "tom"}, {"", Animal::kDog, "rex"}};
  }
};
template <>
struct FieldTableSamples<Tree> {
  static std::vector<Tree> Get() { return {Tree{{Tree{{Tree{}}}, Tree{}}}}; }
};
template <>
struct FieldTableSamples<Open> {
  static std::vector<Open> Get() {
    Open open;
    open.name = "n";
    open.ordered = {{"b", 1}, {"a", 2}};
    open.others = Json{{"host", "ci"}};
    return {open};
  }
};
template <>
struct FieldTableSamples<Interval> {
  static std::vector<Interval> Get() { return {{2, 2}, {1, 5}}; }
};
template <>
struct FieldTableSamples<Labeled> {
  static std::vector<Labeled> Get() { return {{"a", {1, 5}, "n"}}; }
};
template <>
struct FieldTableSamples<Counted> {
  static std::vector<Counted> Get() {
    return {{{1, -2}, {{"aten.mm", Count(1) << 90}, {"aten.add", 0}}}};
  }
};

template <>
struct FieldTableSamples<Tallied> {
  static std::vector<Tallied> Get() { return {{{}, ""}, {{1, 2}, "t"}}; }
};

template <>
struct FieldTableSamples<Extensible> {
  static std::vector<Extensible> Get() {
    return {{2, "t", "", {}}, {2, "t", "m", {1, 2}}};
  }
};

namespace {

using Records =
    ::testing::Types<Point, Everything, Range, Shape, Pet, Tree, Open, Counted,
                     Interval, Labeled, Extensible, Tallied>;
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

TEST(FieldTableTest, ARowWithAConditionBelongsOnlyWhereItHolds) {
  EXPECT_EQ(R"({"kind":"circle","size":3})",
            DumpJson(ToJson(Shape{"circle", 3, {7}, "unused"})));
  EXPECT_EQ(R"({"kind":"rectangle","size":[1,2]})",
            DumpJson(ToJson(Shape{"rectangle", 9, {1, 2}, ""})));
  EXPECT_EQ("record.label: unknown field",
            ReadError<Shape>(R"({"kind":"circle","size":3,"label":"x"})"));
  EXPECT_EQ("record.size: is missing", ReadError<Shape>(R"({"kind":"box"})"));
  EXPECT_EQ("record.size: expected an array, got integer",
            ReadError<Shape>(R"({"kind":"box","size":3})"));
  EXPECT_EQ("record.size: must not be negative, got -3",
            ReadError<Shape>(R"({"kind":"circle","size":-3})"));
  EXPECT_EQ("record.size[1]: must not be negative, got -1",
            ReadError<Shape>(R"({"kind":"box","size":[1,-1]})"));
}

TEST(FieldTableTest, AKeyedRowIsWrittenUnderTheNameOfItsTag) {
  EXPECT_EQ(R"({"owner":"ann","dog":"rex"})",
            DumpJson(ToJson(Pet{"ann", Animal::kDog, "rex"})));
  absl::StatusOr<Pet> read =
      FromJsonText<Pet>(R"({"dog":"rex","owner":"ann"})", "record");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((Pet{"ann", Animal::kDog, "rex"}), *read);
  EXPECT_EQ("record: needs exactly one of 'cat' and 'dog'",
            ReadError<Pet>(R"({"owner":"ann"})"));
  EXPECT_EQ("record: needs exactly one of 'cat' and 'dog'",
            ReadError<Pet>(R"({"owner":"ann","cat":"tom","dog":"rex"})"));
  EXPECT_EQ("record.cat: expected a string, got integer",
            ReadError<Pet>(R"({"owner":"ann","cat":1})"));
  EXPECT_EQ("record.bird: unknown field",
            ReadError<Pet>(R"({"owner":"ann","bird":"tweety"})"));
  EXPECT_EQ((std::vector<absl::string_view>{"owner", "cat", "dog"}),
            FieldNames<Pet>());
  EXPECT_EQ((std::vector<absl::string_view>{"owner"}),
            RequiredFieldNames<Pet>());
}

TEST(FieldTableTest, NestingBeyondTheBoundIsRefusedWithItsPath) {
  EXPECT_EQ(
      "", ReadError<Tree>(R"({"children":[{"children":[{"children":[]}]}]})"));
  EXPECT_EQ(
      "record.children[0].children[0].children[0]: nesting deeper than 2 "
      "levels",
      ReadError<Tree>(
          R"({"children":[{"children":[{"children":[{"children":[]}]}]}]})"));
  // The bound counts the levels of one read, not of the reads before it.
  EXPECT_EQ(
      "", ReadError<Tree>(R"({"children":[{"children":[{"children":[]}]}]})"));
}

TEST(FieldTableTest, UnknownKeysAreKeptInOrderAndWrittenLast) {
  absl::StatusOr<Open> read = FromJsonText<Open>(
      R"({"z":1,"name":"n","ordered":{"b":1,"a":2},"y":[true]})", "record");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(R"({"z":1,"y":[true]})", DumpJson(read->others));
  EXPECT_EQ(
      (std::vector<std::pair<std::string, std::int64_t>>{{"b", 1}, {"a", 2}}),
      read->ordered);
  EXPECT_EQ(R"({"name":"n","ordered":{"b":1,"a":2},"z":1,"y":[true]})",
            DumpJson(ToJson(*read)));
  EXPECT_EQ("record.name: is missing", ReadError<Open>(R"({"z":1})"));
}

TEST(FieldTableTest, CodecsOfRowsCheckTheirRange) {
  EXPECT_EQ(R"({"at":"1,-2","counts":{"a":3}})",
            DumpJson(ToJson(Counted{{1, -2}, {{"a", 3}}})));
  EXPECT_EQ("record.counts.a: must not be negative, got -3",
            ReadError<Counted>(R"({"at":"1,2","counts":{"a":-3}})"));
  EXPECT_EQ("record.at: expected \"x,y\"",
            ReadError<Counted>(R"({"at":"1","counts":{}})"));
}

TEST(FieldTableTest, AFieldsOfRowWritesItsMembersKeysInPlace) {
  EXPECT_EQ(R"({"label":"a","start":1,"end":5,"note":"n"})",
            DumpJson(ToJson(Labeled{"a", {1, 5}, "n"})));
  EXPECT_EQ((std::vector<absl::string_view>{"label", "start", "end", "note"}),
            FieldNames<Labeled>());
  EXPECT_EQ((std::vector<absl::string_view>{"label", "start"}),
            RequiredFieldNames<Labeled>());
}

TEST(FieldTableTest, AFieldsOfRowReadsItsMembersKeysWithTheRecordsPath) {
  absl::StatusOr<Labeled> read =
      FromJsonText<Labeled>(R"({"label":"a","start":1,"end":5})", "record");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((Labeled{"a", {1, 5}, ""}), *read);
  EXPECT_EQ("record.start: is missing",
            ReadError<Labeled>(R"({"label":"a","end":5})"));
  EXPECT_EQ("record.stop: unknown field",
            ReadError<Labeled>(R"({"label":"a","start":1,"stop":5})"));
  EXPECT_EQ("record.start: expected an integer, got string",
            ReadError<Labeled>(R"({"label":"a","start":"1"})"));
}

// The member's Validate runs after its rows, before the record's rows that
// follow, with the record's path.
TEST(FieldTableTest, AFieldsOfMemberIsValidatedWithTheRecordsPath) {
  EXPECT_EQ(
      "record.end: is before start",
      ReadError<Labeled>(R"({"label":"a","start":5,"end":1,"note":false})"));
}

TEST(FieldTableTest, ValidateMayCompleteTheRecord) {
  absl::StatusOr<Labeled> read =
      FromJsonText<Labeled>(R"({"label":"a","start":3})", "record");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((Interval{3, 3}), read->interval);
  EXPECT_EQ(R"({"label":"a","start":3,"end":3})", DumpJson(ToJson(*read)));
}

TEST(FieldTableTest, AFieldGroupWritesItsRowsAsOneObject) {
  EXPECT_EQ(R"({"version":2,"context":{"tool":"t","method":"m"},"sizes":[1]})",
            DumpJson(ToJson(Extensible{2, "t", "m", {1}})));
  EXPECT_EQ((std::vector<absl::string_view>{"version", "context", "sizes"}),
            FieldNames<Extensible>());
  EXPECT_EQ((std::vector<absl::string_view>{"version", "context"}),
            RequiredFieldNames<Extensible>());
}

TEST(FieldTableTest, AFieldGroupReadsItsRowsWithTheirPaths) {
  absl::StatusOr<Extensible> read = FromJsonText<Extensible>(
      R"({"version":2,"context":{"method":"m","tool":"t"}})", "record");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((Extensible{2, "t", "m", {}}), *read);
  EXPECT_EQ("record.context.host: unknown field",
            ReadError<Extensible>(
                R"({"version":2,"context":{"tool":"t","host":"h"}})"));
  EXPECT_EQ("record.context.tool: is missing",
            ReadError<Extensible>(R"({"version":2,"context":{}})"));
  EXPECT_EQ("record.context: expected an object, got string",
            ReadError<Extensible>(R"({"version":2,"context":"t"})"));
}

TEST(FieldTableTest, ASchemaVersionIsTheOneTheReaderKnows) {
  EXPECT_EQ("record.version: unsupported schema version: 3",
            ReadError<Extensible>(R"({"version":3,"context":{"tool":"t"}})"));
  EXPECT_EQ("record.version: expected an integer, got string \"2\"",
            ReadError<Extensible>(R"({"version":"2","context":{"tool":"t"}})"));
}

TEST(FieldTableTest, UnknownKeysAreAcceptedAndDropped) {
  absl::StatusOr<Extensible> read = FromJsonText<Extensible>(
      R"({"rank":0,"version":2,"context":{"tool":"t"},"host":"h"})", "record");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(R"({"version":2,"context":{"tool":"t"}})", DumpJson(ToJson(*read)));
}

TEST(FieldTableTest, ValidateMayAskWhichKeysTheDocumentHolds) {
  EXPECT_EQ("",
            ReadError<Extensible>(R"({"version":2,"context":{"tool":"t"}})"));
  EXPECT_EQ("record.sizes: is empty",
            ReadError<Extensible>(
                R"({"version":2,"context":{"tool":"t"},"sizes":[]})"));
}

TEST(FieldTableTest, DerivedKeysAreWrittenFromTheRecord) {
  EXPECT_EQ(R"({"sum":3,"items":[{"value":1,"running":1},)"
            R"({"value":2,"running":3}],"name":"t"})",
            DumpJson(ToJson(Tallied{{1, 2}, "t"})));
  EXPECT_EQ((std::vector<absl::string_view>{"sum", "items", "name"}),
            FieldNames<Tallied>());
  EXPECT_EQ((std::vector<absl::string_view>{"sum", "items"}),
            RequiredFieldNames<Tallied>());
}

// Checked once the record is read, in table order: a value the record does
// not imply is named with what it should be; a missing one is missing.
TEST(FieldTableTest, DerivedKeysAreCheckedAfterReading) {
  constexpr absl::string_view kItems =
      R"([{"value":1,"running":1},{"value":2,"running":3}])";
  EXPECT_EQ("", ReadError<Tallied>(
                    absl::StrCat(R"({"sum":3,"items":)", kItems, "}")));
  EXPECT_EQ(
      "record.sum: does not match the items listed (expected 3)",
      ReadError<Tallied>(absl::StrCat(R"({"sum":4,"items":)", kItems, "}")));
  EXPECT_EQ("record.sum: is missing",
            ReadError<Tallied>(absl::StrCat(R"({"items":)", kItems, "}")));
  EXPECT_EQ(
      "record.items: does not match the items listed (expected "
      R"([{"value":1,"running":1},{"value":2,"running":3}]))",
      ReadError<Tallied>(R"({"sum":3,"items":[{"value":1,"running":1},)"
                         R"({"value":2,"running":2}]})"));
  // A wrong sum is named before wrong running totals; any error of
  // reading before either.
  EXPECT_EQ("record.sum: does not match the items listed (expected 3)",
            ReadError<Tallied>(R"({"sum":0,"items":[{"value":1},)"
                               R"({"value":2}]})"));
  EXPECT_EQ("record.items[1].value: expected an integer, got string",
            ReadError<Tallied>(R"({"sum":0,"items":[{"value":1},)"
                               R"({"value":"2"}]})"));
}

}  // namespace
}  // namespace torchscan::report
