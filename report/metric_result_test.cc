#include "report/metric_result.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "report/count.h"
#include "report/field_table.h"
#include "report/field_table_testing.h"
#include "report/json_io.h"

namespace torchscan::report {
namespace {

MetricKind Flops() { return MetricKind{"FLOPs", "workload", "counted"}; }

std::string ReadError(absl::string_view text) {
  absl::StatusOr<MetricResult> read = FromJsonText<MetricResult>(text, "total");
  return read.ok() ? "" : std::string(read.status().message());
}

}  // namespace

template <>
struct FieldTableSamples<MetricKind> {
  static std::vector<MetricKind> Get() { return {{}, Flops()}; }
};
template <>
struct FieldTableSamples<MetricResult> {
  static std::vector<MetricResult> Get() {
    return {MetricResult::Complete(Count(1) << 100, Flops()),
            MetricResult::Complete(0.5, Flops()),
            MetricResult::Complete(std::string("same"), Flops()),
            MetricResult::Partial(Count(7), Flops()),
            MetricResult::Unavailable(Flops())};
  }
};

namespace {

using MetricRecords = ::testing::Types<MetricKind, MetricResult>;
INSTANTIATE_TYPED_TEST_SUITE_P(MetricResult, FieldTableRoundTrip,
                               MetricRecords);

TEST(MetricResultTest, WritesItsSixKeysInOrder) {
  EXPECT_EQ(
      R"({"status":"partial","value":null,"known_value":7,"unit":"FLOPs",)"
      R"("scope":"workload","method":"counted"})",
      DumpJson(ToJson(MetricResult::Partial(Count(7), Flops()))));
}

TEST(MetricResultTest, ValuesKeepTheirJsonKind) {
  EXPECT_EQ("1", DumpJson(ToJson(MetricValue(Count(1)))));
  EXPECT_EQ("1.0", DumpJson(ToJson(MetricValue(1.0))));
  EXPECT_EQ(R"("same")", DumpJson(ToJson(MetricValue(std::string("same")))));
}

// The status rules are checked after reading, with the metric's path.
TEST(MetricResultTest, ADocumentBreakingTheStatusRulesIsRefused) {
  const std::string kind =
      R"("unit":"FLOPs","scope":"workload","method":"counted"})";
  EXPECT_EQ("total: a complete metric requires a value",
            ReadError(R"({"status":"complete","value":null,"known_value":1,)" +
                      kind));
  EXPECT_EQ(
      "total: a complete metric must have known_value equal to value",
      ReadError(R"({"status":"complete","value":2,"known_value":1,)" + kind));
  EXPECT_EQ(
      "total: a partial metric must have a null value",
      ReadError(R"({"status":"partial","value":2,"known_value":1,)" + kind));
  EXPECT_EQ("total: a partial metric requires a known_value lower bound",
            ReadError(R"({"status":"partial","value":null,)"
                      R"("known_value":null,)" +
                      kind));
  EXPECT_EQ(
      "total: an unavailable metric must have null value and known_value",
      ReadError(R"({"status":"unavailable","value":null,"known_value":0,)" +
                kind));
}

TEST(MetricResultTest, ACompleteMetricReadWithoutKnownValueGetsItsValue) {
  absl::StatusOr<MetricResult> read = FromJsonText<MetricResult>(
      R"({"status":"complete","value":1.0,"known_value":null,"unit":"FLOPs",)"
      R"("scope":"workload","method":"counted"})",
      "total");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(MetricResult::Complete(1.0, Flops()), *read);
  EXPECT_EQ(R"({"status":"complete","value":1.0,"known_value":1.0,)"
            R"("unit":"FLOPs","scope":"workload","method":"counted"})",
            DumpJson(ToJson(*read)));
}

TEST(MetricResultTest, ErrorsNameTheKey) {
  EXPECT_EQ(
      "total.status: status must be 'complete', 'partial', or "
      "'unavailable', got 'done'",
      ReadError(R"({"status":"done","value":null,"known_value":null,)"
                R"("unit":"","scope":"","method":""})"));
  EXPECT_EQ(
      "total.unit: expected a string, got number",
      ReadError(R"({"status":"unavailable","value":null,)"
                R"("known_value":null,"unit":3,"scope":"","method":""})"));
  EXPECT_EQ(
      "total.value: expected a number or null, got boolean",
      ReadError(R"({"status":"complete","value":true,)"
                R"("known_value":null,"unit":"","scope":"","method":""})"));
  EXPECT_EQ("total.method: is missing",
            ReadError(R"({"status":"unavailable","value":null,)"
                      R"("known_value":null,"unit":"","scope":""})"));
  EXPECT_EQ("total.extra: unknown field",
            ReadError(R"({"status":"unavailable","value":null,)"
                      R"("known_value":null,"unit":"","scope":"","method":"",)"
                      R"("extra":1})"));
}

TEST(MetricResultTest, ANonFiniteValueIsRefused) {
  Json document = ToJson(MetricResult::Complete(1.0, Flops()));
  document["value"] = std::nan("");
  absl::StatusOr<MetricResult> read =
      FromJson<MetricResult>(JsonValue(document, "total"));
  ASSERT_FALSE(read.ok());
  EXPECT_EQ("total.value: is not finite", read.status().message());
}

}  // namespace
}  // namespace torchscan::report
