#include "report/report_diff.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "report/field_table.h"
#include "report/field_table_testing.h"
#include "report/json_io.h"
#include "report/metric_map.h"
#include "report/metric_result.h"

namespace torchscan::report {
namespace {

MetricKind Flops() { return MetricKind{"FLOPs", "layer", "m"}; }

MetricDiff Complete() {
  return MetricDiff{MetricStatus::kComplete, MetricValue(Count(5)),
                    MetricResult::Complete(Count(10), Flops()),
                    MetricResult::Complete(Count(15), Flops())};
}

MetricDiff Partial() {
  return MetricDiff{MetricStatus::kPartial, std::nullopt,
                    MetricResult::Partial(Count(1), Flops()),
                    MetricResult::Complete(Count(2), Flops())};
}

MetricMap Metrics() {
  MetricMap metrics;
  metrics.Set("flops", MetricResult::Complete(Count(3), Flops()));
  return metrics;
}

}  // namespace

template <>
struct FieldTableSamples<MetricDiff> {
  static std::vector<MetricDiff> Get() {
    return {MetricDiff{}, Complete(), Partial(),
            MetricDiff{MetricStatus::kComplete, MetricValue(0.5),
                       MetricResult::Complete(1.0, Flops()),
                       MetricResult::Complete(1.5, Flops())}};
  }
};
template <>
struct FieldTableSamples<LayerSnapshot> {
  static std::vector<LayerSnapshot> Get() {
    return {LayerSnapshot{}, LayerSnapshot{"a.b", 2, Metrics()}};
  }
};
template <>
struct FieldTableSamples<LayerDiff> {
  static std::vector<LayerDiff> Get() {
    return {LayerDiff{"a", 0, {{"flops", Complete()}, {"macs", Partial()}}}};
  }
};
template <>
struct FieldTableSamples<ReportDiff> {
  static std::vector<ReportDiff> Get() {
    return {ReportDiff{}, ReportDiff{1,
                                     {{"flops", Complete()}},
                                     {LayerSnapshot{"new", 0, Metrics()}},
                                     {LayerSnapshot{"old", 1, Metrics()}},
                                     FieldTableSamples<LayerDiff>::Get()}};
  }
};

namespace {

using ReportDiffRecords =
    ::testing::Types<MetricDiff, LayerSnapshot, LayerDiff, ReportDiff>;
INSTANTIATE_TYPED_TEST_SUITE_P(ReportDiff, FieldTableRoundTrip,
                               ReportDiffRecords);

std::string ReadError(const std::string& text) {
  absl::StatusOr<ReportDiff> read = FromJsonText<ReportDiff>(text, "diff");
  return read.ok() ? "" : std::string(read.status().message());
}

TEST(ReportDiffTest, TheLayersAreOneObjectOfThreeLists) {
  EXPECT_EQ(R"({"schema_version":1,"totals":{},)"
            R"("layers":{"added":[],"removed":[],"changed":[]}})",
            DumpJson(ToJson(ReportDiff{})));
  EXPECT_EQ("diff.layers.moved: unknown field",
            ReadError(R"({"schema_version":1,"totals":{},"layers":)"
                      R"({"added":[],"removed":[],"changed":[],"moved":[]}})"));
}

// The sides of a diff are checked by the rules of the metric's name: a
// count of FLOPs is an integer.
TEST(ReportDiffTest, TheSidesFollowTheRulesOfTheMetricsName) {
  Json diff = ToJson(ReportDiff{1, {{"flops", Complete()}}, {}, {}, {}});
  diff["totals"]["flops"]["after"]["value"] = 15.5;
  diff["totals"]["flops"]["after"]["known_value"] = 15.5;
  diff["totals"]["flops"]["delta"] = 5.5;
  EXPECT_EQ(
      "diff.totals.flops.after.value: a count of FLOPs must be a non-negative "
      "integer, got 15.5",
      ReadError(DumpJson(diff)));
}

TEST(ReportDiffTest, AStatusIsTheOneTheSidesMake) {
  Json diff = ToJson(Partial());
  diff["status"] = "complete";
  absl::StatusOr<MetricDiff> read = FromJson<MetricDiff>(JsonValue(diff, "d"));
  ASSERT_FALSE(read.ok());
  EXPECT_EQ("d.status: is 'complete' but the sides make it 'partial'",
            read.status().message());
  diff = ToJson(Complete());
  diff["delta"] = nullptr;
  read = FromJson<MetricDiff>(JsonValue(diff, "d"));
  ASSERT_FALSE(read.ok());
  EXPECT_EQ("d.delta: is required when complete", read.status().message());
  diff["delta"] = "5";
  read = FromJson<MetricDiff>(JsonValue(diff, "d"));
  ASSERT_FALSE(read.ok());
  EXPECT_EQ("d.delta: expected a number or null, got string \"5\"",
            read.status().message());
}

}  // namespace
}  // namespace torchscan::report
