// One test per case of upstream's tests/test_compare.py (reference 12),
// then the edges of our C++ arithmetic and input checking.

#include "report/compare.h"

#include <limits>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "report/field_table_testing.h"
#include "report/json_io.h"
#include "report/test_support.h"

namespace torchscan::report {
namespace {

using testing::CompleteMetric;
using testing::ParseOrFail;
using testing::PartialMetric;
using testing::UnavailableMetric;

MetricResult Macs(MetricValue value) {
  return CompleteMetric(std::move(value), "MACs");
}

ComparableReport Minimal(
    std::vector<std::pair<std::string, MetricResult>> totals,
    std::vector<ComparableLayer> layers = {}) {
  ComparableReport report;
  for (auto& [name, result] : totals) report.totals.Set(name, result);
  report.layers = std::move(layers);
  return report;
}

ComparableLayer Layer(
    std::string path, std::int64_t call_index,
    std::vector<std::pair<std::string, MetricResult>> metrics) {
  ComparableLayer layer{std::move(path), call_index, {}};
  for (auto& [name, result] : metrics) layer.metrics.Set(name, result);
  return layer;
}

std::vector<std::string> Keys(const std::map<std::string, MetricDiff>& diffs) {
  std::vector<std::string> keys;
  for (const auto& [key, diff] : diffs) keys.push_back(key);
  return keys;
}

// 1. numeric_totals_and_deterministic_order
TEST(CompareTest, NumericTotalsAndDeterministicOrder) {
  absl::StatusOr<ReportDiff> diff =
      CompareReports(Minimal({{"macs", Macs(Count(10))},
                              {"dmas", CompleteMetric(Count(7), "DMAs")}}),
                     Minimal({{"dmas", CompleteMetric(Count(7), "DMAs")},
                              {"macs", Macs(Count(15))}}));
  ASSERT_TRUE(diff.ok()) << diff.status();
  EXPECT_EQ(Keys(diff->totals), (std::vector<std::string>{"dmas", "macs"}));
  EXPECT_EQ(diff->totals.at("macs").status, MetricStatus::kComplete);
  EXPECT_EQ(diff->totals.at("macs").delta, MetricValue(Count(5)));
  EXPECT_EQ(diff->totals.at("dmas").delta, MetricValue(Count(0)));
  EXPECT_EQ(diff->schema_version, 1);
  const Json json = ReportDiffToJson(*diff);
  EXPECT_EQ(DumpPythonJson(json["totals"]["macs"]["delta"]), "5");
}

// 2. added_removed_and_reused_layer_calls
TEST(CompareTest, AddedRemovedAndReusedLayerCalls) {
  absl::StatusOr<ReportDiff> diff = CompareReports(
      Minimal({}, {Layer("shared", 0, {{"macs", Macs(Count(3))}}),
                   Layer("shared", 1, {{"macs", Macs(Count(3))}}),
                   Layer("old", 0, {{"macs", Macs(Count(1))}})}),
      Minimal({}, {Layer("new", 0, {{"macs", Macs(Count(2))}}),
                   Layer("shared", 1, {{"macs", Macs(Count(7))}}),
                   Layer("shared", 0, {{"macs", Macs(Count(3))}})}));
  ASSERT_TRUE(diff.ok()) << diff.status();
  ASSERT_EQ(diff->added.size(), 1u);
  EXPECT_EQ(diff->added[0].path, "new");
  EXPECT_EQ(diff->added[0].call_index, 0);
  EXPECT_EQ(*diff->added[0].metrics.Find("macs"), Macs(Count(2)));
  ASSERT_EQ(diff->removed.size(), 1u);
  EXPECT_EQ(diff->removed[0].path, "old");
  ASSERT_EQ(diff->changed.size(), 1u);
  EXPECT_EQ(diff->changed[0].path, "shared");
  EXPECT_EQ(diff->changed[0].call_index, 1);
  EXPECT_EQ(diff->changed[0].metrics.at("macs").delta, MetricValue(Count(4)));
}

// 3. propagates_incomplete_metrics
TEST(CompareTest, PropagatesIncompleteMetrics) {
  absl::StatusOr<ReportDiff> diff = CompareReports(
      Minimal({{"a", Macs(Count(1))}, {"b", PartialMetric(Count(2), "MACs")}}),
      Minimal({{"a", PartialMetric(Count(4), "MACs")},
               {"b", UnavailableMetric("MACs")}}));
  ASSERT_TRUE(diff.ok()) << diff.status();
  const MetricDiff& a = diff->totals.at("a");
  EXPECT_EQ(a.status, MetricStatus::kPartial);
  EXPECT_FALSE(a.delta.has_value());
  EXPECT_EQ(a.after->known_value(), MetricValue(Count(4)));
  EXPECT_EQ(a.before, Macs(Count(1)));
  const MetricDiff& b = diff->totals.at("b");
  EXPECT_EQ(b.status, MetricStatus::kUnavailable);
  EXPECT_FALSE(b.delta.has_value());
  EXPECT_EQ(
      DumpPythonJson(MetricDiffToJson(a)),
      "{\"status\": \"partial\", \"delta\": null, \"before\": {\"status\": "
      "\"complete\", \"value\": 1, \"known_value\": 1, \"unit\": \"MACs\", "
      "\"scope\": \"forward\", \"method\": \"torchscan_module_formula\"}, "
      "\"after\": {\"status\": \"partial\", \"value\": null, \"known_value\": "
      "4, "
      "\"unit\": \"MACs\", \"scope\": \"forward\", \"method\": "
      "\"torchscan_module_formula\"}}");
}

// 4. missing_metric_is_unavailable
TEST(CompareTest, MissingMetricIsUnavailable) {
  absl::StatusOr<ReportDiff> diff =
      CompareReports(Minimal({{"only_before", Macs(Count(1))}}),
                     Minimal({{"only_after", Macs(Count(1))}}));
  ASSERT_TRUE(diff.ok());
  EXPECT_EQ(diff->totals.at("only_before").status, MetricStatus::kUnavailable);
  EXPECT_FALSE(diff->totals.at("only_before").after.has_value());
  EXPECT_TRUE(diff->totals.at("only_before").before.has_value());
  EXPECT_EQ(diff->totals.at("only_after").status, MetricStatus::kUnavailable);
  EXPECT_FALSE(diff->totals.at("only_after").before.has_value());
  EXPECT_TRUE(absl::StartsWith(
      DumpPythonJson(MetricDiffToJson(diff->totals.at("only_after"))),
      "{\"status\": \"unavailable\", \"delta\": null, \"before\": null, "
      "\"after\": {\"status\": \"complete\""));
}

// 5. rejects_incompatible_reports
TEST(CompareTest, RejectsIncompatibleReports) {
  ComparableReport one = Minimal({});
  ComparableReport two = Minimal({});
  two.schema_version = 2;
  EXPECT_EQ(CompareReports(one, two).status().message(),
            "schema versions differ: 1 != 2");
  ComparableReport ninety_nine = Minimal({});
  ninety_nine.schema_version = 99;
  EXPECT_EQ(CompareReports(ninety_nine, ninety_nine).status().message(),
            "unsupported schema version: 99");
  const ComparableReport duplicate =
      Minimal({}, {Layer("x", 0, {}), Layer("x", 0, {})});
  EXPECT_EQ(CompareReports(duplicate, one).status().message(),
            "before contains duplicate layer call ('x', 0)");
  EXPECT_EQ(CompareReports(one, duplicate).status().message(),
            "after contains duplicate layer call ('x', 0)");
  const ComparableReport quoted =
      Minimal({}, {Layer("it's", 3, {}), Layer("it's", 3, {})});
  EXPECT_EQ(CompareReports(quoted, one).status().message(),
            "before contains duplicate layer call (\"it's\", 3)");
  EXPECT_EQ(CompareReports(duplicate, one).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// 6. rejects_incompatible_metric_metadata [unit, scope, method]
TEST(CompareTest, RejectsIncompatibleMetricMetadata) {
  const MetricResult base = CompleteMetric(Count(1), "FLOPs", "forward", "m");
  for (auto [field, other] :
       {std::pair{"unit", CompleteMetric(Count(1), "MACs", "forward", "m")},
        std::pair{"scope", CompleteMetric(Count(1), "FLOPs", "model", "m")},
        std::pair{"method",
                  CompleteMetric(Count(1), "FLOPs", "forward", "x")}}) {
    absl::StatusOr<ReportDiff> totals =
        CompareReports(Minimal({{"macs", base}}), Minimal({{"macs", other}}));
    EXPECT_EQ(totals.status().message(),
              absl::StrCat("metric 'macs' has incompatible ", field));
    absl::StatusOr<ReportDiff> layers =
        CompareReports(Minimal({}, {Layer("l", 0, {{"macs", base}})}),
                       Minimal({}, {Layer("l", 0, {{"macs", other}})}));
    EXPECT_EQ(layers.status().message(),
              absl::StrCat("metric 'macs' has incompatible ", field));
  }
}

// 7. is_json_serializable_and_does_not_mutate_inputs
TEST(CompareTest, IsJsonSerializableAndDoesNotMutateInputs) {
  const Json before = ParseOrFail(
      R"({"schema_version": 1, "totals": {"macs": {"status": "complete", "value": 1,
          "known_value": 1, "unit": "MACs", "scope": "forward", "method": "m"}},
          "layers": [{"path": "a", "call_index": 0, "metrics": {}}]})");
  const Json after = ParseOrFail(
      R"({"schema_version": 1, "totals": {"macs": {"status": "complete", "value": 3,
          "known_value": 3, "unit": "MACs", "scope": "forward", "method": "m"}},
          "layers": []})");
  const Json before_copy = before;
  const Json after_copy = after;
  absl::StatusOr<Json> diff = CompareReportsJson(before, after);
  ASSERT_TRUE(diff.ok()) << diff.status();
  absl::StatusOr<Json> reparsed = ParseJson(DumpPythonJson(*diff));
  ASSERT_TRUE(reparsed.ok());
  EXPECT_EQ(*reparsed, *diff);
  (*diff)["totals"]["macs"]["before"]["value"] = 99;
  (*diff)["layers"]["removed"][0]["path"] = "z";
  EXPECT_EQ(before, before_copy);
  EXPECT_EQ(after, after_copy);
}

TEST(CompareTest, IntegersStayIntegersAndFloatsMakeFloats) {
  absl::StatusOr<ReportDiff> diff = CompareReports(
      Minimal({{"int", CompleteMetric(Count(10), "FLOPs")},
               {"mixed", CompleteMetric(Count(3), "ratio")},
               {"float", CompleteMetric(0.1, "ratio")},
               {"negative", CompleteMetric(Count(10), "FLOPs")}}),
      Minimal({{"int", CompleteMetric(Count(12), "FLOPs")},
               {"mixed", CompleteMetric(1.25, "ratio")},
               {"float", CompleteMetric(0.3, "ratio")},
               {"negative", CompleteMetric(Count(4), "FLOPs")}}));
  ASSERT_TRUE(diff.ok());
  EXPECT_EQ(diff->totals.at("int").delta, MetricValue(Count(2)));
  EXPECT_EQ(diff->totals.at("mixed").delta, MetricValue(-1.75));
  EXPECT_EQ(diff->totals.at("negative").delta, MetricValue(Count(-6)));
  // Python: 0.3 - 0.1 == 0.19999999999999998.
  EXPECT_EQ(DumpPythonJson(MetricDiffToJson(diff->totals.at("float"))["delta"]),
            "0.19999999999999998");
}

TEST(CompareTest, EqualIntAndFloatLayerMetricsAreNotChanges) {
  absl::StatusOr<ReportDiff> diff = CompareReports(
      Minimal(
          {},
          {Layer("a", 0,
                 {{"receptive_field", CompleteMetric(Count(1), "elements")}})}),
      Minimal({},
              {Layer("a", 0,
                     {{"receptive_field", CompleteMetric(1.0, "elements")}})}));
  ASSERT_TRUE(diff.ok());
  EXPECT_TRUE(diff->changed.empty());
}

TEST(CompareTest, DeltasAreExactBeyond64BitsAndOverflowIsAnError) {
  const Count two_64 = Count(1) << 64;
  const Count max = std::numeric_limits<Count>::max();
  absl::StatusOr<ReportDiff> diff =
      CompareReports(Minimal({{"f", CompleteMetric(two_64, "FLOPs")}}),
                     Minimal({{"f", CompleteMetric(Count(1) << 70, "FLOPs")}}));
  ASSERT_TRUE(diff.ok());
  EXPECT_EQ(diff->totals.at("f").delta, MetricValue((Count(1) << 70) - two_64));
  absl::StatusOr<ReportDiff> max_diff =
      CompareReports(Minimal({{"f", CompleteMetric(Count(0), "FLOPs")}}),
                     Minimal({{"f", CompleteMetric(max, "FLOPs")}}));
  ASSERT_TRUE(max_diff.ok());
  EXPECT_EQ(max_diff->totals.at("f").delta, MetricValue(max));
  // Receptive fields may be negative, so a difference can pass 2^127.
  absl::StatusOr<ReportDiff> overflow = CompareReports(
      Minimal(
          {{"receptive_field",
            CompleteMetric(std::numeric_limits<Count>::min(), "elements")}}),
      Minimal({{"receptive_field", CompleteMetric(Count(1), "elements")}}));
  ASSERT_FALSE(overflow.ok());
  EXPECT_EQ(overflow.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(overflow.status().message(),
            "metric 'receptive_field' delta overflows a 128-bit integer");
}

TEST(CompareTest, TextValuesCannotBeSubtracted) {
  absl::StatusOr<ReportDiff> diff = CompareReports(
      Minimal({}, {Layer("conv", 0,
                         {{"effective_padding",
                           CompleteMetric(std::string("same"), "elements")}})}),
      Minimal({}, {Layer("conv", 0,
                         {{"effective_padding",
                           CompleteMetric(Count(1), "elements")}})}));
  ASSERT_FALSE(diff.ok());
  EXPECT_EQ(diff.status().message(),
            "unsupported operand type(s) for -: 'int' and 'str'");
}

TEST(CompareTest, JsonEntryPointChecksVersionsBeforeTheBody) {
  const Json future =
      ParseOrFail(R"({"schema_version": 2, "layers": "anything"})");
  const Json current =
      ParseOrFail(R"({"schema_version": 1, "totals": {}, "layers": []})");
  EXPECT_EQ(CompareReportsJson(current, future).status().message(),
            "schema versions differ: 1 != 2");
  EXPECT_EQ(CompareReportsJson(future, future).status().message(),
            "unsupported schema version: 2");
  EXPECT_EQ(CompareReportsJson(ParseOrFail("{}"), current).status().message(),
            "before.schema_version: is missing");
  EXPECT_EQ(
      CompareReportsJson(current, ParseOrFail(R"({"schema_version": true})"))
          .status()
          .message(),
      "after.schema_version: expected an integer, got boolean true");
}

TEST(CompareTest, JsonEntryPointNamesBadFields) {
  const auto error = [](const char* before_text) {
    absl::StatusOr<std::string> diff = CompareReportsText(
        before_text, R"({"schema_version": 1, "totals": {}, "layers": []})");
    return diff.ok() ? std::string("ok") : std::string(diff.status().message());
  };
  EXPECT_EQ(
      error(
          R"({"schema_version": 1, "totals": {}, "layers": [{"path": "a"}]})"),
      "before.layers[0].call_index: is missing");
  EXPECT_EQ(error(R"({"schema_version": 1, "totals": {}, "layers": [
                     {"path": "a", "call_index": 0, "metrics": {"macs": {
                      "status": "finished", "value": 1, "known_value": 1,
                      "unit": "MACs", "scope": "s", "method": "m"}}}]})"),
            "before.layers[0].metrics.macs.status: status must be 'complete', "
            "'partial', or 'unavailable', got 'finished'");
  EXPECT_EQ(
      error(R"({"schema_version": 1, "totals": {"macs": {"status": "complete",
                     "value": -2, "known_value": -2, "unit": "MACs", "scope": "s",
                     "method": "m"}}, "layers": []})"),
      "before.totals.macs.value: a count of MACs must be a non-negative "
      "integer, got -2");
  EXPECT_EQ(
      error("{\"schema_version\": 1,"),
      "before: invalid JSON at byte 22: [json.exception.parse_error.101] "
      "parse error at line 1, column 22: syntax error while parsing object "
      "key - unexpected end of input; expected string literal");
  EXPECT_EQ(error(R"({"schema_version": 1, "totals": [], "layers": []})"),
            "before.totals: expected an object, got array");
}

// Full reports carry much more; only schema_version/totals/layers matter.
TEST(CompareTest, FullReportsCompareThroughTheirComparableView) {
  const AnalysisReport conv = testing::Conv2dReportFromParts();
  absl::StatusOr<ReportDiff> diff = CompareReports(conv, conv);
  ASSERT_TRUE(diff.ok());
  EXPECT_EQ(diff->totals.size(), 10u);
  EXPECT_TRUE(diff->changed.empty());
  EXPECT_EQ(ComparableView(conv).layers.size(), 1u);
}

TEST(CompareTest, DiffJsonIsCheckedWhenRead) {
  const auto error = [](const char* text) {
    absl::StatusOr<ReportDiff> diff = ReportDiffFromJson(ParseOrFail(text));
    return diff.ok() ? std::string("ok") : std::string(diff.status().message());
  };
  EXPECT_EQ(
      error(R"({"schema_version": 1, "totals": {"m": {"status": "complete",
                     "delta": null, "before": null, "after": null}},
                     "layers": {"added": [], "removed": [], "changed": []}})"),
      "diff.totals.m.status: is 'complete' but the sides make it "
      "'unavailable'");
  EXPECT_EQ(error(R"({"schema_version": 1, "totals": {},
                     "layers": {"added": [], "removed": []}})"),
            "diff.layers.changed: is missing");
}

}  // namespace

template <>
struct FieldTableSamples<ComparableLayer> {
  static std::vector<ComparableLayer> Get() {
    return ComparableView(testing::Conv2dReportFromParts()).layers;
  }
};
template <>
struct FieldTableSamples<ComparableReport> {
  static std::vector<ComparableReport> Get() {
    return {ComparableReport{},
            ComparableView(testing::Conv2dReportFromParts())};
  }
};

namespace {

using ComparableRecords = ::testing::Types<ComparableLayer, ComparableReport>;
INSTANTIATE_TYPED_TEST_SUITE_P(Compare, FieldTableRoundTrip, ComparableRecords);

// What compare_reports does not read is accepted and dropped, at both
// levels, as upstream ignores it.
TEST(CompareTest, AComparableReportDropsWhatItDoesNotRead) {
  Json json = Json::parse(
      R"({"schema_version": 1, "model": "m", "totals": {}, "layers": [)"
      R"({"path": "a", "call_index": 0, "metrics": {}, "type": "Conv2d"}]})");
  absl::StatusOr<ComparableReport> read =
      ComparableReportFromJson(json, "before");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(R"({"schema_version":1,"totals":{},"layers":[)"
            R"({"path":"a","call_index":0,"metrics":{}}]})",
            DumpJson(ToJson(*read)));
  json["layers"][0].erase("call_index");
  EXPECT_EQ("before.layers[0].call_index: is missing",
            ComparableReportFromJson(json, "before").status().message());
}

}  // namespace
}  // namespace torchscan::report
