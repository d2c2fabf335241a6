#include "crawl/crawl_record.h"

#include <utility>
#include <variant>

#include "absl/status/statusor.h"
#include "formulas/module_description.h"
#include "gtest/gtest.h"
#include "report/analysis_report.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "report/metric_result.h"

namespace torchscan::crawl {
namespace {

using formulas::CallValue;
using report::Count;
using report::MetricStatus;

Count Value(const report::MetricResult* metric) {
  return std::get<Count>(*metric->known_value());
}

// nn.Linear(4, 2) called once on a batch of one: the root and only layer.
CrawlRecord LinearCrawl(bool full) {
  CrawlRecord record;
  report::LayerReport layer;
  layer.name = "linear";
  layer.type = "Linear";
  record.parts.layers.push_back(std::move(layer));
  record.parts.model.trainable_parameters = 4 * 2 + 2;
  if (!full) return record;
  formulas::ModuleDescription linear{
      .type = "Linear",
      .family = formulas::ModuleFamily::kLinear,
      .params = formulas::LinearParams{.in_features = 4, .out_features = 2},
      .parameter_count = 4 * 2 + 2};
  record.leaf_calls.push_back(CapturedLeafCall{
      0, formulas::CapturedModuleCall{
             "", std::move(linear),
             formulas::ModuleCall{{CallValue::Tensor({1, 4})},
                                  CallValue::Tensor({1, 2})}}});
  absl::StatusOr<report::FlopReport> flops = report::BuildFlopReport(
      "2.13.0",
      {report::OperatorObservation{
          .name = "aten.addmm", .calls = 1, .counted_calls = 1, .flops = 16}},
      {});
  record.operator_flops = *std::move(flops);
  return record;
}

TEST(CrawlRecordTest, LeafCallsGetTorchScansModuleFormulas) {
  absl::StatusOr<report::AnalysisReport> report =
      BuildAnalysisReport(LinearCrawl(/*full=*/true));
  ASSERT_TRUE(report.ok()) << report.status();
  const report::MetricMap& metrics = report->layers[0].metrics;
  // FLOPs out * (2 * in - 1) + out (bias), MACs in * out, DMAs in + params
  // + out.
  EXPECT_EQ(Value(metrics.Find("module_flops")), 2 * (2 * 4 - 1) + 2);
  EXPECT_EQ(Value(metrics.Find("macs")), 4 * 2);
  EXPECT_EQ(Value(metrics.Find("dmas")), 4 + 10 + 2);
  EXPECT_EQ(Value(report->totals.Find("module_flops")), 16);
  EXPECT_EQ(Value(report->totals.Find("operator_flops")), 16);
  EXPECT_EQ(Value(report->totals.Find("parameters")), 10);
  EXPECT_TRUE(report->diagnostics.empty());
}

TEST(CrawlRecordTest, LayerCallsWithoutOperatorsRunNone) {
  absl::StatusOr<report::AnalysisReport> report =
      BuildAnalysisReport(LinearCrawl(/*full=*/true));
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->layer_operator_flops.has_value());
  ASSERT_EQ(report->layer_operator_flops->size(), 1u);
  const report::LayerOperatorFlops& flops = (*report->layer_operator_flops)[0];
  EXPECT_EQ(flops.total.status(), MetricStatus::kComplete);
  EXPECT_EQ(std::get<Count>(*flops.total.value()), 0);
  EXPECT_EQ(flops.total.scope(), report::kModuleCallScope);
}

TEST(CrawlRecordTest, StructureModeRequestsNoFormulas) {
  absl::StatusOr<report::AnalysisReport> report =
      BuildAnalysisReport(LinearCrawl(/*full=*/false));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->context.analysis_mode, "structure");
  EXPECT_EQ(report->totals.Find("module_flops")->status(),
            MetricStatus::kUnavailable);
  EXPECT_EQ(report->totals.Find("module_flops")->method(), "not_requested");
  EXPECT_FALSE(report->layer_operator_flops.has_value());
}

TEST(CrawlRecordTest, ALeafCallMustNameARecordedLayer) {
  CrawlRecord record = LinearCrawl(/*full=*/true);
  record.leaf_calls[0].layer = 1;
  EXPECT_EQ(BuildAnalysisReport(std::move(record)).status().message(),
            "leaf call of '' names layer 1 of 1");
}

// Found by //crawl:crawl_fuzz_test: Conv2d(2, 4, 3) with groups set to -1
// after construction makes TorchScan 0.2's formulas negative. The report
// says unavailable (a negative value is no count and does not read back).
TEST(CrawlRecordTest, ANegativeFormulaResultIsUnavailableAndReadsBack) {
  CrawlRecord record = LinearCrawl(/*full=*/true);
  formulas::ModuleDescription conv{
      .type = "Conv2d",
      .family = formulas::ModuleFamily::kConv,
      .params =
          formulas::ConvParams{
              .in_channels = 2,
              .kernel_size = formulas::HyperParameter::Tuple({3, 3}),
              .stride = formulas::HyperParameter::Tuple({1, 1}),
              .padding = formulas::HyperParameter::Tuple({1, 1}),
              .dilation = formulas::HyperParameter::Tuple({1, 1}),
              .groups = -1},
      .parameter_count = 4 * 2 * 9 + 4};
  record.leaf_calls[0].call = formulas::CapturedModuleCall{
      "", std::move(conv),
      formulas::ModuleCall{{CallValue::Tensor({1, 2, 5, 5})},
                           CallValue::Tensor({1, 4, 5, 5})}};
  absl::StatusOr<report::AnalysisReport> report =
      BuildAnalysisReport(std::move(record));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(MetricStatus::kUnavailable,
            report->layers[0].metrics.Find("module_flops")->status());
  EXPECT_EQ(MetricStatus::kUnavailable,
            report->totals.Find("module_flops")->status());
  absl::StatusOr<report::AnalysisReport> again = report::ParseAnalysisReport(
      report::DumpPythonJson(report::AnalysisReportToJson(*report)));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*report, *again);
}

}  // namespace
}  // namespace torchscan::crawl
