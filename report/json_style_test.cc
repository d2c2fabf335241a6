// The two JSON styles of one writer, difference by difference: the compact
// native form (DumpJson) and the bytes of Python's json.dumps
// (DumpPythonJson). Each Python expectation is what CPython 3.11's
// json.dumps writes for the same document.

#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "report/count.h"
#include "report/json_io.h"

namespace torchscan::report {
namespace {

Json SmallObject() {
  Json document = Json::object();
  document["a"] = 1;
  document["b"] = Json::array({1, 2});
  return document;
}

Json BigInteger() { return CountToJson(Count(1) << 100); }

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// Separators on one line.

TEST(JsonStyleTest, NativeOneLineHasNoSpaces) {
  EXPECT_EQ("{\"a\":1,\"b\":[1,2]}", DumpJson(SmallObject()));
}

TEST(JsonStyleTest, PythonOneLineSeparatesWithSpaces) {
  // json.dumps({"a": 1, "b": [1, 2]})
  EXPECT_EQ("{\"a\": 1, \"b\": [1, 2]}", DumpPythonJson(SmallObject()));
}

TEST(JsonStyleTest, NativeOneLineWithBigIntegerHasNoSpaces) {
  Json document = SmallObject();
  document["c"] = BigInteger();
  EXPECT_EQ("{\"a\":1,\"b\":[1,2],\"c\":1267650600228229401496703205376}",
            DumpJson(document));
}

// Indentation: the same in both styles.

TEST(JsonStyleTest, NativeIndentsWithCommaAtLineEnd) {
  EXPECT_EQ("{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ]\n}",
            DumpJson(SmallObject(), 2));
}

TEST(JsonStyleTest, PythonIndentsWithCommaAtLineEnd) {
  // json.dumps({"a": 1, "b": [1, 2]}, indent=2)
  EXPECT_EQ("{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ]\n}",
            DumpPythonJson(SmallObject(), 2));
}

TEST(JsonStyleTest, NativeIndentZeroBreaksLinesWithoutSpaces) {
  EXPECT_EQ("{\n\"a\": 1,\n\"b\": [\n1,\n2\n]\n}", DumpJson(SmallObject(), 0));
}

TEST(JsonStyleTest, PythonIndentZeroBreaksLinesWithoutSpaces) {
  // json.dumps({"a": 1, "b": [1, 2]}, indent=0)
  EXPECT_EQ("{\n\"a\": 1,\n\"b\": [\n1,\n2\n]\n}",
            DumpPythonJson(SmallObject(), 0));
}

TEST(JsonStyleTest, NativeIndentedWithBigIntegerMatchesWithout) {
  Json document = SmallObject();
  document["c"] = BigInteger();
  EXPECT_EQ(
      "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ],\n"
      "  \"c\": 1267650600228229401496703205376\n}",
      DumpJson(document, 2));
}

TEST(JsonStyleTest, NativeEmptyContainersStayOnOneLine) {
  EXPECT_EQ("[\n  {},\n  []\n]",
            DumpJson(Json::array({Json::object(), Json::array()}), 2));
}

TEST(JsonStyleTest, PythonEmptyContainersStayOnOneLine) {
  // json.dumps([{}, []], indent=2)
  EXPECT_EQ("[\n  {},\n  []\n]",
            DumpPythonJson(Json::array({Json::object(), Json::array()}), 2));
}

// Key order: insertion order in both.

TEST(JsonStyleTest, NativeKeepsInsertionOrder) {
  Json document = Json::object();
  document["z"] = 1;
  document["a"] = 2;
  EXPECT_EQ("{\"z\":1,\"a\":2}", DumpJson(document));
}

TEST(JsonStyleTest, PythonKeepsInsertionOrder) {
  Json document = Json::object();
  document["z"] = 1;
  document["a"] = 2;
  // json.dumps({"z": 1, "a": 2})
  EXPECT_EQ("{\"z\": 1, \"a\": 2}", DumpPythonJson(document));
}

// Integers.

TEST(JsonStyleTest, NativeWritesBigIntegersExactly) {
  EXPECT_EQ("[-1180591620717411303424]",
            DumpJson(Json::array({CountToJson(-(Count(1) << 70))})));
}

TEST(JsonStyleTest, PythonWritesBigIntegersExactly) {
  // json.dumps([-2**70])
  EXPECT_EQ("[-1180591620717411303424]",
            DumpPythonJson(Json::array({CountToJson(-(Count(1) << 70))})));
}

TEST(JsonStyleTest, NativeWritesUnsigned64BitIntegers) {
  EXPECT_EQ("[18446744073709551615]",
            DumpJson(Json::array({std::numeric_limits<std::uint64_t>::max()})));
}

TEST(JsonStyleTest, PythonWritesUnsigned64BitIntegers) {
  // json.dumps([2**64 - 1])
  EXPECT_EQ(
      "[18446744073709551615]",
      DumpPythonJson(Json::array({std::numeric_limits<std::uint64_t>::max()})));
}

// Floats.

TEST(JsonStyleTest, NativeWritesIntegralFloatWithPointZero) {
  EXPECT_EQ("[1.0]", DumpJson(Json::array({1.0})));
}

TEST(JsonStyleTest, PythonWritesIntegralFloatWithPointZero) {
  // json.dumps([1.0])
  EXPECT_EQ("[1.0]", DumpPythonJson(Json::array({1.0})));
}

TEST(JsonStyleTest, NativeWritesSmallFloatWithTwoDigitExponent) {
  EXPECT_EQ("[1e-05]", DumpJson(Json::array({1e-5})));
}

TEST(JsonStyleTest, PythonWritesSmallFloatWithTwoDigitExponent) {
  // json.dumps([1e-5])
  EXPECT_EQ("[1e-05]", DumpPythonJson(Json::array({1e-5})));
}

TEST(JsonStyleTest, NativeWritesOneE15WithExponent) {
  EXPECT_EQ("[1e+15]", DumpJson(Json::array({1e15})));
}

TEST(JsonStyleTest, PythonWritesOneE15Positionally) {
  // json.dumps([1e15])
  EXPECT_EQ("[1000000000000000.0]", DumpPythonJson(Json::array({1e15})));
}

TEST(JsonStyleTest, NativeWritesOneE16WithExponent) {
  EXPECT_EQ("[1e+16]", DumpJson(Json::array({1e16})));
}

TEST(JsonStyleTest, PythonWritesOneE16WithExponent) {
  // json.dumps([1e16])
  EXPECT_EQ("[1e+16]", DumpPythonJson(Json::array({1e16})));
}

TEST(JsonStyleTest, NativeWritesNegativeZero) {
  EXPECT_EQ("[-0.0]", DumpJson(Json::array({-0.0})));
}

TEST(JsonStyleTest, PythonWritesNegativeZero) {
  // json.dumps([-0.0])
  EXPECT_EQ("[-0.0]", DumpPythonJson(Json::array({-0.0})));
}

TEST(JsonStyleTest, NativeWritesNonFiniteFloatsAsNull) {
  EXPECT_EQ("[null,null,null]",
            DumpJson(Json::array({kInfinity, -kInfinity, kNan})));
}

TEST(JsonStyleTest, NativeWithBigIntegerWritesNonFiniteFloatsAsNull) {
  EXPECT_EQ("[null,1267650600228229401496703205376]",
            DumpJson(Json::array({kNan, BigInteger()})));
}

TEST(JsonStyleTest, PythonWritesNonFiniteFloatsAsJavaScriptNames) {
  // json.dumps([float("inf"), float("-inf"), float("nan")])
  EXPECT_EQ("[Infinity, -Infinity, NaN]",
            DumpPythonJson(Json::array({kInfinity, -kInfinity, kNan})));
}

// Strings.

TEST(JsonStyleTest, NativeWritesNonAsciiAsUtf8) {
  EXPECT_EQ("[\"\xc3\xa9\xf0\x9f\x98\x80\"]",
            DumpJson(Json::array({"\xc3\xa9\xf0\x9f\x98\x80"})));
}

TEST(JsonStyleTest, PythonEscapesNonAsciiWithSurrogatePairs) {
  // json.dumps(["\u00e9\U0001F600"])
  EXPECT_EQ("[\"\\u00e9\\ud83d\\ude00\"]",
            DumpPythonJson(Json::array({"\xc3\xa9\xf0\x9f\x98\x80"})));
}

TEST(JsonStyleTest, NativeWritesDeleteAsItself) {
  EXPECT_EQ("[\"\x7f\"]", DumpJson(Json::array({"\x7f"})));
}

TEST(JsonStyleTest, PythonEscapesDelete) {
  // json.dumps(["\x7f"])
  EXPECT_EQ("[\"\\u007f\"]", DumpPythonJson(Json::array({"\x7f"})));
}

TEST(JsonStyleTest, NativeEscapesControlCharacters) {
  EXPECT_EQ("[\"\\u0001\\b\\f\\n\\r\\t\\\"\\\\/\"]",
            DumpJson(Json::array({"\x01\b\f\n\r\t\"\\/"})));
}

TEST(JsonStyleTest, PythonEscapesControlCharacters) {
  // json.dumps(["\x01\b\f\n\r\t\"\\/"])
  EXPECT_EQ("[\"\\u0001\\b\\f\\n\\r\\t\\\"\\\\/\"]",
            DumpPythonJson(Json::array({"\x01\b\f\n\r\t\"\\/"})));
}

TEST(JsonStyleTest, PythonEscapesNonAsciiKeys) {
  Json document = Json::object();
  document["\xc3\xa9"] = 1;
  // json.dumps({"\u00e9": 1})
  EXPECT_EQ("{\"\\u00e9\": 1}", DumpPythonJson(document));
}

TEST(JsonStyleTest, NativeRejectsMalformedUtf8) {
  EXPECT_THROW(DumpJson(Json::array({"a\xff"})), nlohmann::json::type_error);
}

TEST(JsonStyleTest, NativeWithBigIntegerRejectsMalformedUtf8) {
  EXPECT_THROW(DumpJson(Json::array({"a\xff", BigInteger()})),
               nlohmann::json::type_error);
}

TEST(JsonStyleTest, PythonReplacesMalformedUtf8) {
  EXPECT_EQ("[\"a\\ufffd\"]", DumpPythonJson(Json::array({"a\xff"})));
}

}  // namespace
}  // namespace torchscan::report
