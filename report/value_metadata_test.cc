#include "report/value_metadata.h"

#include "gtest/gtest.h"
#include "report/analysis_report.h"
#include "report/field_table_testing.h"
#include "report/json_io.h"
#include "report/summary.h"
#include "report/test_support.h"

namespace torchscan::report {
namespace {

using testing::ParseOrFail;
using testing::ReadTestData;

ValueMetadata Float32(std::vector<std::int64_t> shape) {
  return ValueMetadata::Tensor(std::move(shape), "torch.float32", "cpu", false);
}

MappingItem Item(std::optional<MappingKey> key, std::string key_type,
                 ValueMetadata value) {
  return MappingItem{std::move(key), std::move(key_type), std::move(value)};
}

// The nested_io fixture's output, written by torchscan 0.2.0 for
// {"features": (y, [None]), "text": "secret", 7: 1, "with space": (mask,)}.
TEST(ValueMetadataTest, BuildersReproduceTheUpstreamDescription) {
  const ValueMetadata output = ValueMetadata::Mapping(
      "dict", {Item(std::string("features"), "str",
                    ValueMetadata::Tuple(
                        {Float32({1, 2}),
                         ValueMetadata::List({ValueMetadata::None()})})),
               Item(std::string("text"), "str", ValueMetadata::Scalar("str")),
               Item(Count(7), "int", ValueMetadata::Scalar("int")),
               Item(std::nullopt, "str",
                    ValueMetadata::Tuple({ValueMetadata::Tensor(
                        {1, 3}, "torch.bool", "cpu", false)}))});
  absl::StatusOr<AnalysisReport> report =
      ParseAnalysisReport(ReadTestData("upstream/reports/nested_io.json"));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->layers[0].output, output);
  EXPECT_EQ(
      DumpPythonJson(ValueMetadataToJson(output)),
      DumpPythonJson(AnalysisReportToJson(*report)["layers"][0]["output"]));
  // Values and non-identifier keys never appear.
  const std::string text = ReadTestData("upstream/reports/nested_io.json");
  EXPECT_EQ(text.find("secret"), std::string::npos);
  EXPECT_EQ(text.find("with space"), std::string::npos);
  EXPECT_EQ(text.find("/private/model.pt"), std::string::npos);
}

TEST(ValueMetadataTest, EveryKindRoundTrips) {
  const Json inputs = AnalysisReportToJson(*ParseAnalysisReport(
      ReadTestData("upstream/reports/nested_io.json")))["inputs"];
  absl::StatusOr<InputsMetadata> parsed =
      InputsMetadataFromJson(inputs, "inputs");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->source, "provided");
  ASSERT_EQ(parsed->call.args.size(), 4u);
  EXPECT_EQ(parsed->call.args[1], ValueMetadata::Scalar("float"));
  EXPECT_EQ(parsed->call.args[2], ValueMetadata::None());
  ASSERT_EQ(parsed->call.kwargs.size(), 3u);
  EXPECT_EQ(parsed->call.kwargs[2].first, "handle");
  EXPECT_EQ(parsed->call.kwargs[2].second,
            ValueMetadata::Object("Outer.Inner"));
  const ValueMetadata& options = parsed->call.kwargs[1].second;
  ASSERT_EQ(options.entries.size(), 5u);
  EXPECT_EQ(options.entries[1].key, MappingKey(Count(2)));
  EXPECT_FALSE(options.entries[2].key.has_value());
  EXPECT_EQ(options.entries[3].key, MappingKey(true));
  EXPECT_EQ(InputsMetadataToJson(*parsed), inputs);

  const Json pending = ValueMetadataToJson(ValueMetadata::Pending());
  EXPECT_EQ(DumpPythonJson(pending), "{\"kind\": \"pending\"}");
  EXPECT_EQ(
      DumpPythonJson(ValueMetadataToJson(Float32({}))),
      "{\"kind\": \"tensor\", \"shape\": [], \"dtype\": \"torch.float32\", "
      "\"device\": \"cpu\", \"requires_grad\": false}");
}

TEST(ValueMetadataTest, ShapeTextFollowsTheReference) {
  // Reference 8.5: {"features": (tensor(1,), [None])} -> {((1,), [none])}.
  const ValueMetadata value = ValueMetadata::Mapping(
      "dict", {Item(std::string("features"), "str",
                    ValueMetadata::Tuple(
                        {Float32({1}),
                         ValueMetadata::List({ValueMetadata::None()})}))});
  EXPECT_EQ(ShapeText(value), "{((1,), [none])}");
  EXPECT_EQ(ShapeText(Float32({1, 8, 30, 30})), "(1, 8, 30, 30)");
  EXPECT_EQ(ShapeText(Float32({})), "()");
  EXPECT_EQ(ShapeText(ValueMetadata::Tuple({Float32({4})})), "((4,))");
  EXPECT_EQ(ShapeText(ValueMetadata::Scalar("int")), "scalar");
  EXPECT_EQ(ShapeText(ValueMetadata::Object("object")), "object");
  EXPECT_EQ(ShapeText(ValueMetadata::Pending()), "pending");
}

std::string Error(const char* json) {
  absl::StatusOr<ValueMetadata> value =
      ValueMetadataFromJson(ParseOrFail(json), "v");
  return value.ok() ? "parsed" : std::string(value.status().message());
}

TEST(ValueMetadataTest, BadMetadataIsNamed) {
  EXPECT_EQ(Error(R"({"kind": "tensor", "shape": [1, -2], "dtype": "d",
                      "device": "cpu", "requires_grad": false})"),
            "v.shape[1]: must not be negative, got -2");
  EXPECT_EQ(
      Error(
          R"({"kind": "tensor", "shape": [1], "dtype": "d", "device": "cpu"})"),
      "v.requires_grad: is missing");
  EXPECT_EQ(Error(R"({"kind": "mapping", "type": "dict", "items": [
                      {"key": "/private/model.pt", "key_type": "str",
                       "value": {"kind": "none"}}]})"),
            "v.items[0].key: a kept mapping key must be an identifier");
  EXPECT_EQ(
      Error(R"({"kind": "mapping", "type": "dict", "items": [
                      {"key": 1.5, "key_type": "float", "value": {"kind": "none"}}]})"),
      "v.items[0].key: expected an integer, boolean or string, got float");
  EXPECT_EQ(Error(R"({"kind": "list", "items": {}})"),
            "v.items: expected an array, got object");
  EXPECT_EQ(Error(R"({"kind": "none", "value": 3})"), "v.value: unknown field");
  EXPECT_EQ(Error(R"({"kind": 3})"), "v.kind: expected a string, got integer");
  EXPECT_EQ(Error(R"([])"), "v: expected an object, got array");
  EXPECT_EQ(Error(R"({"kind": "mapping", "type": "dict", "items": [
                      {"key": "_ok9", "key_type": "str", "value": {"kind": "none"}},
                      {"key": "n\u00e9", "key_type": "str", "value": {"kind": "none"}},
                      {"key": -7, "key_type": "int", "value": {"kind": "none"}}]})"),
            "parsed");
}

TEST(ValueMetadataTest, IdentifierKeys) {
  EXPECT_TRUE(IsIdentifierKey("attention_mask"));
  EXPECT_TRUE(IsIdentifierKey("_x1"));
  EXPECT_FALSE(IsIdentifierKey("1x"));
  EXPECT_FALSE(IsIdentifierKey(""));
  EXPECT_FALSE(IsIdentifierKey("with space"));
  EXPECT_FALSE(IsIdentifierKey("a.b"));
}

// The wire form of each kind, written out by hand.
TEST(ValueMetadataTest, EachKindWritesItsOwnKeysInOrder) {
  EXPECT_EQ(
      R"({"kind":"tensor","shape":[],"dtype":"torch.float32","device":"cpu",)"
      R"("requires_grad":false})",
      DumpJson(ValueMetadataToJson(Float32({}))));
  EXPECT_EQ(R"({"kind":"list","items":[]})",
            DumpJson(ValueMetadataToJson(ValueMetadata::List({}))));
  EXPECT_EQ(
      R"({"kind":"mapping","type":"dict","items":[{"key":true,)"
      R"("key_type":"bool","value":{"kind":"pending"}},{"key_type":)"
      R"("str","value":{"kind":"object","type":"a.B"}}]})",
      DumpJson(ValueMetadataToJson(ValueMetadata::Mapping(
          "dict", {Item(true, "bool", ValueMetadata::Pending()),
                   Item(std::nullopt, "str", ValueMetadata::Object("a.B"))}))));
  EXPECT_EQ(R"({"args":[{"kind":"none"}],"kwargs":{"b":{"kind":"scalar",)"
            R"("type":"int"},"a":{"kind":"none"}}})",
            DumpJson(CallMetadataToJson({{ValueMetadata::None()},
                                         {{"b", ValueMetadata::Scalar("int")},
                                          {"a", ValueMetadata::None()}}})));
  EXPECT_EQ(Error(R"({"kind": "list", "items": [], "type": "t"})"),
            "v.type: unknown field");
  EXPECT_EQ(Error(R"({"kind": "scalar"})"), "v.type: is missing");
}

}  // namespace

// Every kind, so that every key of the table is written.
template <>
struct FieldTableSamples<ValueMetadata> {
  static std::vector<ValueMetadata> Get() {
    return {ValueMetadata::Tensor({2, 0, 3}, "torch.bool", "meta", true),
            ValueMetadata::None(),
            ValueMetadata::Tuple({ValueMetadata::None(), Float32({1})}),
            ValueMetadata::List({}),
            ValueMetadata::Mapping(
                "OrderedDict",
                {Item(Count(-7), "int", ValueMetadata::Scalar("int")),
                 Item(std::nullopt, "str", ValueMetadata::List({}))}),
            ValueMetadata::Scalar("float"),
            ValueMetadata::Object("collections.Counter"),
            ValueMetadata::Pending()};
  }
};
template <>
struct FieldTableSamples<MappingItem> {
  static std::vector<MappingItem> Get() {
    return {Item(Count(1) << 80, "int", ValueMetadata::None()),
            Item(false, "bool", Float32({})),
            Item(std::string("x_1"), "str", ValueMetadata::Pending()),
            Item(std::nullopt, "tuple", ValueMetadata::None())};
  }
};
template <>
struct FieldTableSamples<CallMetadata> {
  static std::vector<CallMetadata> Get() {
    return {CallMetadata{},
            {{Float32({3}), ValueMetadata::None()},
             {{"z", ValueMetadata::Scalar("int")}, {"a", Float32({})}}}};
  }
};

namespace {

using ValueRecords = ::testing::Types<ValueMetadata, MappingItem, CallMetadata>;
INSTANTIATE_TYPED_TEST_SUITE_P(ValueMetadata, FieldTableRoundTrip,
                               ValueRecords);

}  // namespace
}  // namespace torchscan::report
