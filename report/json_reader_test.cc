#include "report/json_reader.h"

#include <string>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "report/json_io.h"

namespace torchscan::report {
namespace {

Json Parse(const std::string& text) {
  absl::StatusOr<Json> json = ParseJson(text);
  EXPECT_TRUE(json.ok()) << json.status();
  return json.ok() ? *json : Json();
}

std::string Message(const absl::Status& status) {
  return std::string(status.message());
}

TEST(JsonReaderTest, ReadsTypedMembersOfAnObject) {
  const Json node = Parse(
      R"({"name": "conv", "on": true, "calls": 3, "big": 170141183460469231731687303715884105727,
          "offset": -2, "scale": 1.5, "dims": [1, 8]})");
  absl::StatusOr<JsonObject> object = JsonValue(node, "layer").Object();
  ASSERT_TRUE(object.ok()) << object.status();
  EXPECT_EQ(*object->String("name"), "conv");
  EXPECT_EQ(*object->Bool("on"), true);
  EXPECT_EQ(*object->Index("calls"), 3);
  EXPECT_EQ(*object->NonNegativeCount("big"),
            (Count(1) << 126) - 1 + (Count(1) << 126));
  EXPECT_EQ(*object->Int64("offset"), -2);
  EXPECT_EQ(*object->Integer("offset"), -2);
  EXPECT_EQ(*object->Number("scale"), 1.5);
  absl::StatusOr<JsonArray> dims = object->Array("dims");
  ASSERT_TRUE(dims.ok());
  ASSERT_EQ(dims->size(), 2u);
  EXPECT_EQ(dims->Item(1).path(), "layer.dims[1]");
  EXPECT_EQ(*dims->Item(1).Index(), 8);
}

TEST(JsonReaderTest, ErrorsNameThePathAndTheProblem) {
  const Json node = Parse(
      R"({"name": 7, "calls": -1, "scale": "x", "big": 1e3, "list": {}})");
  absl::StatusOr<JsonObject> object = JsonValue(node, "layer").Object();
  ASSERT_TRUE(object.ok());
  EXPECT_EQ(Message(object->String("missing").status()),
            "layer.missing: is missing");
  EXPECT_EQ(Message(object->String("name").status()),
            "layer.name: expected a string, got integer");
  EXPECT_EQ(Message(object->Index("calls").status()),
            "layer.calls: must not be negative, got -1");
  EXPECT_EQ(Message(object->Index("big").status()),
            "layer.big: expected a non-negative integer, got float 1000.0");
  EXPECT_EQ(Message(object->Integer("scale").status()),
            "layer.scale: expected an integer, got string \"x\"");
  EXPECT_EQ(Message(object->Int64("scale").status()),
            "layer.scale: expected an integer, got string");
  EXPECT_EQ(Message(object->Number("scale").status()),
            "layer.scale: expected a number, got string");
  EXPECT_EQ(Message(object->Array("list").status()),
            "layer.list: expected an array, got object");
  EXPECT_EQ(Message(JsonValue(node, "").Array().status()),
            ": expected an array, got object");
}

TEST(JsonReaderTest, IntegersOutsideTheirRangeAreErrors) {
  const Json node =
      Parse(R"({"index": 9223372036854775808, "small": -9223372036854775809})");
  absl::StatusOr<JsonObject> object = JsonValue(node, "v").Object();
  ASSERT_TRUE(object.ok());
  EXPECT_EQ(Message(object->Index("index").status()),
            "v.index: is out of range, got 9223372036854775808");
  EXPECT_EQ(Message(object->Int64("small").status()),
            "v.small: does not fit in 64 bits");
}

TEST(JsonReaderTest, UnknownKeysAreCheckedBeforeOrAfterReading) {
  const Json node = Parse(R"({"a": 1, "b": 2})");
  absl::StatusOr<JsonObject> object = JsonValue(node, "v").Object();
  ASSERT_TRUE(object.ok());
  EXPECT_TRUE(object->RejectUnknownKeys({"a", "b"}).ok());
  EXPECT_EQ(Message(object->RejectUnknownKeys({"a"})), "v.b: unknown field");
  ASSERT_TRUE(object->Index("a").ok());
  EXPECT_EQ(Message(object->RejectUnreadKeys()),
            "v.b: is not a field of this object");
  EXPECT_FALSE(object->OptionalMember("c").has_value());
  ASSERT_TRUE(object->OptionalMember("b").has_value());
  EXPECT_TRUE(object->RejectUnreadKeys().ok());
}

TEST(JsonReaderTest, ExpectedNamesACompositeType) {
  const Json node = Parse("[true]");
  EXPECT_EQ(Message(JsonValue(node[0], "v[0]").Expected("a number or null")),
            "v[0]: expected a number or null, got boolean");
  EXPECT_EQ(
      DescribeJson(Parse(R"("a long string of more than forty characters")")),
      "string \"a long string of more than forty cha...");
}

}  // namespace
}  // namespace torchscan::report
