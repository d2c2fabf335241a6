#include "report/strict.h"

#include "gtest/gtest.h"
#include "report/test_support.h"

namespace torchscan::report {
namespace {

using testing::PartialMetric;
using testing::ReadTestData;

AnalysisReport Upstream(absl::string_view name) {
  absl::StatusOr<AnalysisReport> report = ParseAnalysisReport(
      ReadTestData(absl::StrCat("upstream/reports/", name, ".json")));
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *std::move(report) : AnalysisReport();
}

TEST(StrictTest, CompleteAnalysisPasses) {
  const AnalysisReport report = testing::Conv2dReportFromParts();
  EXPECT_FALSE(IsIncomplete(report));
  EXPECT_TRUE(CheckStrict(report).ok());
}

// Reference 2.8: an unsupported leaf whose operators are all counted.
TEST(StrictTest, UnsupportedLeafNamesItsMetrics) {
  AnalysisReport report = testing::Conv2dReportFromParts();
  for (const char* metric :
       {"module_flops", "macs", "dmas", "receptive_field"}) {
    report.diagnostics.push_back(
        Diagnostic::ForPath("unsupported_module_metric", metric, "",
                            "Module type not supported: Custom"));
  }
  report.totals.Set("module_flops", PartialMetric(Count(0), "FLOPs"));
  report.totals.Set("macs", PartialMetric(Count(0), "MACs"));
  report.totals.Set("dmas", PartialMetric(Count(0), "DMAs"));
  EXPECT_TRUE(IsIncomplete(report));
  EXPECT_EQ(
      IncompleteAnalysisMessage(report),
      "Analysis is incomplete for: dmas, macs, module_flops, receptive_field.");
  const absl::Status status = CheckStrict(report);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), IncompleteAnalysisMessage(report));
}

// Messages of IncompleteAnalysisError raised by the released package.
TEST(StrictTest, UncountedOperatorsAddFlopsAndOperatorFlops) {
  EXPECT_EQ(IncompleteMetricNames(Upstream("linear_relu_linear")),
            (std::vector<std::string>{"flops", "operator_flops"}));
  EXPECT_EQ(IncompleteAnalysisMessage(Upstream("unsupported_custom")),
            "Analysis is incomplete for: dmas, flops, macs, module_flops, "
            "operator_flops, receptive_field.");
}

TEST(StrictTest, WithoutNamesTheMessageSaysUnknownMetrics) {
  EXPECT_EQ(IncompleteAnalysisMessage(testing::Conv2dReportFromParts()),
            "Analysis is incomplete for: unknown metrics.");
}

// Structure mode: unrequested totals never fail strict mode, but the
// message, computed as upstream does, still lists them.
TEST(StrictTest, StructureModeChecksOnlyRequestedMetrics) {
  AnalysisReport report = Upstream("structure_mode");
  EXPECT_FALSE(IsIncomplete(report));
  EXPECT_TRUE(CheckStrict(report).ok());
  report.diagnostics.push_back(
      Diagnostic::ForPath("module_metric_error", "receptive_field", "0", "x"));
  EXPECT_EQ(
      CheckStrict(report).message(),
      "Analysis is incomplete for: dmas, macs, module_flops, operator_flops, "
      "receptive_field.");
}

}  // namespace
}  // namespace torchscan::report
