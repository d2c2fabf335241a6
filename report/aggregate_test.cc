#include "report/aggregate.h"

#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "report/field_table_testing.h"
#include "report/json_io.h"
#include "report/test_support.h"

namespace torchscan::report {
namespace {

using testing::CompleteMetric;
using testing::PartialMetric;
using testing::ReadTestData;
using testing::UnavailableMetric;

const MetricKind kFlops{"FLOPs", "forward", "torchscan_module_formula"};

absl::StatusOr<MetricResult> Sum(std::vector<MetricResult> parts) {
  std::vector<const MetricResult*> pointers;
  for (const MetricResult& part : parts) pointers.push_back(&part);
  return AggregateMetrics(pointers, kFlops, "totals.module_flops");
}

AnalysisReport Upstream(absl::string_view name) {
  absl::StatusOr<AnalysisReport> report = ParseAnalysisReport(
      ReadTestData(absl::StrCat("upstream/reports/", name, ".json")));
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *std::move(report) : AnalysisReport();
}

TEST(AggregateTest, StatusPropagation) {
  absl::StatusOr<MetricResult> all_complete = Sum(
      {CompleteMetric(Count(3), "FLOPs"), CompleteMetric(Count(4), "FLOPs")});
  ASSERT_TRUE(all_complete.ok());
  EXPECT_EQ(*all_complete, MetricResult::Complete(Count(7), kFlops));

  absl::StatusOr<MetricResult> with_partial =
      Sum({CompleteMetric(Count(3), "FLOPs"), PartialMetric(Count(4), "FLOPs"),
           UnavailableMetric("FLOPs")});
  ASSERT_TRUE(with_partial.ok());
  EXPECT_EQ(*with_partial, MetricResult::Partial(Count(7), kFlops));

  absl::StatusOr<MetricResult> with_unavailable =
      Sum({CompleteMetric(Count(3), "FLOPs"), UnavailableMetric("FLOPs")});
  ASSERT_TRUE(with_unavailable.ok());
  EXPECT_EQ(*with_unavailable, MetricResult::Partial(Count(3), kFlops));

  absl::StatusOr<MetricResult> none_known =
      Sum({UnavailableMetric("FLOPs"), UnavailableMetric("FLOPs")});
  ASSERT_TRUE(none_known.ok());
  EXPECT_EQ(*none_known, MetricResult::Unavailable(kFlops));

  absl::StatusOr<MetricResult> empty = Sum({});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, MetricResult::Unavailable(kFlops));

  // A known zero stays a complete zero.
  absl::StatusOr<MetricResult> zero = Sum({CompleteMetric(Count(0), "FLOPs")});
  ASSERT_TRUE(zero.ok());
  EXPECT_TRUE(zero->is_complete());
  EXPECT_EQ(*zero->value(), MetricValue(Count(0)));
}

// Python's sum(): exact ints, then float arithmetic from the first float on,
// left to right (values from Python 3.11).
TEST(AggregateTest, SumsAsPythonSumDoes) {
  const auto total = [](std::vector<MetricValue> values) {
    std::vector<MetricResult> parts;
    for (MetricValue& value : values) {
      parts.push_back(CompleteMetric(std::move(value), "ratio"));
    }
    absl::StatusOr<MetricResult> sum = Sum(parts);
    EXPECT_TRUE(sum.ok()) << sum.status();
    return sum.ok() ? *sum->value() : MetricValue(std::string("error"));
  };
  const Count two_53 = Count(1) << 53;
  EXPECT_EQ(total({two_53, 1.0}), MetricValue(9007199254740992.0));
  EXPECT_EQ(total({two_53 + 1, 0.5}), MetricValue(9007199254740992.0));
  EXPECT_EQ(total({0.1, 0.2, Count(3)}), MetricValue(3.3));
  EXPECT_EQ(total({Count(3), 0.1, 0.2}), MetricValue(3.3000000000000003));
  EXPECT_EQ(total({Count(1), Count(2)}), MetricValue(Count(3)));
}

TEST(AggregateTest, OverflowIsAnErrorAtThe128BitBoundary) {
  const Count max = std::numeric_limits<Count>::max();
  const Count two_63 = Count(1) << 63;
  const Count two_64 = Count(1) << 64;
  absl::StatusOr<MetricResult> past_63 =
      Sum({CompleteMetric(two_63, "FLOPs"), CompleteMetric(two_63, "FLOPs")});
  ASSERT_TRUE(past_63.ok());
  EXPECT_EQ(*past_63->value(), MetricValue(two_64));
  absl::StatusOr<MetricResult> past_64 =
      Sum({CompleteMetric(two_64, "FLOPs"), CompleteMetric(two_64 - 1, "FLOPs"),
           CompleteMetric(Count(1), "FLOPs")});
  ASSERT_TRUE(past_64.ok());
  EXPECT_EQ(*past_64->value(), MetricValue(Count(1) << 65));
  absl::StatusOr<MetricResult> at_max =
      Sum({CompleteMetric(max - 1, "FLOPs"), PartialMetric(Count(1), "FLOPs")});
  ASSERT_TRUE(at_max.ok());
  EXPECT_EQ(*at_max, MetricResult::Partial(max, kFlops));
  for (std::vector<MetricResult> parts :
       {std::vector<MetricResult>{CompleteMetric(max, "FLOPs"),
                                  CompleteMetric(Count(1), "FLOPs")},
        std::vector<MetricResult>{CompleteMetric(Count(1) << 126, "FLOPs"),
                                  PartialMetric(Count(1) << 126, "FLOPs")}}) {
    absl::StatusOr<MetricResult> overflow = Sum(parts);
    ASSERT_FALSE(overflow.ok());
    EXPECT_EQ(overflow.status().code(), absl::StatusCode::kOutOfRange);
    EXPECT_EQ(overflow.status().message(),
              "totals.module_flops overflows a 128-bit integer");
  }
}

TEST(AggregateTest, TextIsNotSummed) {
  absl::StatusOr<MetricResult> sum =
      Sum({CompleteMetric(Count(1), "elements"),
           CompleteMetric(std::string("same"), "elements")});
  ASSERT_FALSE(sum.ok());
  EXPECT_EQ(
      sum.status().message(),
      "totals.module_flops: cannot add the non-numeric value string 'same'");
}

// Reference 4.8: Linear(8,4)-ReLU-Linear(4,2) -> 84 / 40 / 72.
TEST(AggregateTest, LayerTotalsOfLinearReluLinear) {
  const AnalysisReport report = Upstream("linear_relu_linear");
  for (auto [name, unit, value] :
       {std::tuple{"module_flops", "FLOPs", 84}, std::tuple{"macs", "MACs", 40},
        std::tuple{"dmas", "DMAs", 72}}) {
    absl::StatusOr<MetricResult> total =
        AggregateLayerMetric(report.layers, name, unit);
    ASSERT_TRUE(total.ok());
    EXPECT_EQ(*total,
              MetricResult::Complete(
                  Count(value),
                  MetricKind{unit, "forward", "torchscan_module_formula"}));
    EXPECT_EQ(*total, *report.totals.Find(name));
  }
}

AnalysisParts PartsOf(const AnalysisReport& report) {
  AnalysisParts parts;
  parts.context = report.context;
  parts.context.analysis_mode.reset();
  parts.inputs = report.inputs;
  parts.layers = report.layers;
  const auto value = [&](absl::string_view name) {
    return std::get<Count>(*report.totals.Find(name)->value());
  };
  parts.model =
      ModelTensorTotals{value("trainable_parameters"),
                        value("frozen_parameters"), value("parameter_bytes"),
                        value("buffer_elements"), value("buffer_bytes")};
  const std::size_t module_diagnostics =
      report.diagnostics.size() - report.operator_flops.diagnostics.size();
  parts.module_diagnostics.assign(
      report.diagnostics.begin(),
      report.diagnostics.begin() + module_diagnostics);
  return parts;
}

// Every upstream report, rebuilt from its parts by our assembler, is the
// same file: totals, their order, statuses and the diagnostics order.
TEST(AggregateTest, AssemblyReproducesEveryUpstreamReport) {
  for (const char* name :
       {"conv2d_3_8_3", "conv2d_3_12_3", "linear_relu_linear", "shared_module",
        "unsupported_custom", "conv_same_padding", "nested_io",
        "receptive_fields", "scaled_units", "tera_linear_meta", "deep_names",
        "frozen_and_buffers"}) {
    SCOPED_TRACE(name);
    const AnalysisReport upstream = Upstream(name);
    absl::StatusOr<AnalysisReport> ours =
        AssembleAnalysisReport(PartsOf(upstream), upstream.operator_flops);
    ASSERT_TRUE(ours.ok()) << ours.status();
    EXPECT_EQ(DumpPythonJson(AnalysisReportToJson(*ours)) + "\n",
              ReadTestData(absl::StrCat("upstream/reports/", name, ".json")));
  }
}

TEST(AggregateTest, StructureModeIsWhatTorchScanEmits) {
  const AnalysisReport upstream = Upstream("structure_mode");
  ASSERT_EQ(upstream.context.analysis_mode, "structure");
  absl::StatusOr<AnalysisReport> ours =
      AssembleStructureReport(PartsOf(upstream));
  ASSERT_TRUE(ours.ok()) << ours.status();
  EXPECT_EQ(DumpPythonJson(AnalysisReportToJson(*ours)) + "\n",
            ReadTestData("upstream/reports/structure_mode.json"));
  const MetricResult& macs = *ours->totals.Find("macs");
  EXPECT_EQ(macs.status(), MetricStatus::kUnavailable);
  EXPECT_EQ(macs.method(), "not_requested");
}

TEST(AggregateTest, ParameterTotalOverflowIsAnError) {
  AnalysisParts parts;
  parts.model.trainable_parameters = std::numeric_limits<Count>::max();
  parts.model.frozen_parameters = 1;
  absl::StatusOr<AnalysisReport> report =
      AssembleAnalysisReport(std::move(parts), FlopReport());
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), absl::StatusCode::kOutOfRange);
  AnalysisParts negative;
  negative.model.buffer_bytes = -1;
  EXPECT_EQ(AssembleAnalysisReport(std::move(negative), FlopReport())
                .status()
                .message(),
            "model tensor totals must not be negative, got -1");
}

}  // namespace
// A crawl record's "model" (crawl/crawl_document.h); a huge count is kept
// whole.
template <>
struct FieldTableSamples<ModelTensorTotals> {
  static std::vector<ModelTensorTotals> Get() {
    return {ModelTensorTotals{224, 1, 896, 2, 8},
            ModelTensorTotals{.buffer_bytes = Count(1) << 100}};
  }
};
INSTANTIATE_TYPED_TEST_SUITE_P(ModelTensorTotals, FieldTableRoundTrip,
                               ::testing::Types<ModelTensorTotals>);

}  // namespace torchscan::report
