#include "report/render/diagnostic_listing.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "report/render/render_test_support.h"
#include "report/summary.h"

namespace torchscan::report::render {
namespace {

TEST(ListDiagnosticsTest, GroupsByCodeWithCountsSubjectsAndAnExample) {
  EXPECT_EQ(
      "Diagnostics: 4\n"
      "  unsupported_module_metric: 3 on 1 module (dmas, macs, module_flops)\n"
      "    pool\n"
      "    e.g. AdaptiveAvgPool2d has no module_flops formula.\n"
      "  uncounted_operator: 1 on 1 operator (flops)\n"
      "    aten.relu\n"
      "    e.g. aten.relu was observed 1 time(s), but no FLOP formula is "
      "registered.\n",
      ListDiagnostics(testing::SmallCnnReport().diagnostics));
}

TEST(ListDiagnosticsTest, ShowsTheFirstSubjectsAndCountsTheRest) {
  std::vector<Diagnostic> diagnostics;
  for (int i = 0; i < 8; ++i) {
    diagnostics.push_back(Diagnostic::ForPath("unsupported_module_metric",
                                              "macs", absl::StrCat("block", i),
                                              "no formula"));
  }
  EXPECT_EQ(
      "Diagnostics: 8\n"
      "  unsupported_module_metric: 8 on 8 modules (macs)\n"
      "    block0, block1, block2, ... and 5 more\n"
      "    e.g. no formula\n",
      ListDiagnostics(diagnostics, 3));
}

TEST(ListDiagnosticsTest, NamesTheRootAndSeveritiesOtherThanWarning) {
  Diagnostic error =
      Diagnostic::ForPath("module_metric_error", "macs", "", "boom");
  error.severity = "error";
  EXPECT_EQ(
      "Diagnostics: 1\n"
      "  module_metric_error: 1 on 1 module (macs, severity error)\n"
      "    <root>\n"
      "    e.g. boom\n",
      ListDiagnostics({error}));
}

TEST(ListDiagnosticsTest, NothingToList) { EXPECT_EQ("", ListDiagnostics({})); }

TEST(SummaryWithDiagnosticsListedTest, ReplacesOnlyThePythonHint) {
  const AnalysisReport report = testing::SmallCnnReport();
  absl::StatusOr<std::string> summary = RenderSummary(report);
  ASSERT_TRUE(summary.ok()) << summary.status();
  const std::string hint = "Diagnostics: 4 (inspect report['diagnostics'])\n";
  const std::size_t at = summary->find(hint);
  ASSERT_NE(at, std::string::npos) << *summary;

  EXPECT_EQ(
      absl::StrCat(summary->substr(0, at), ListDiagnostics(report.diagnostics),
                   summary->substr(at + hint.size())),
      SummaryWithDiagnosticsListed(*summary, report.diagnostics));
}

TEST(SummaryWithDiagnosticsListedTest, AppendsWhenTheHintIsAbsent) {
  const std::vector<Diagnostic> diagnostics =
      testing::SmallCnnReport().diagnostics;
  EXPECT_EQ(absl::StrCat("table\n", ListDiagnostics(diagnostics)),
            SummaryWithDiagnosticsListed("table\n", diagnostics));
}

}  // namespace
}  // namespace torchscan::report::render
