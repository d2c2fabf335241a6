#include "report/render/report_documents.h"

#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "report/compare.h"
#include "report/render/render_test_support.h"
#include "report/report_diff.h"
#include "report/test_support.h"

namespace torchscan::report::render {
namespace {

using report::testing::ParseOrFail;
using testing::SmallCnnReport;

Json AnalysisJson() { return AnalysisReportToJson(SmallCnnReport()); }

TEST(KindOfDocumentTest, TellsTheThreeReportsApart) {
  EXPECT_EQ(DocumentKind::kAnalysis, *KindOfDocument(AnalysisJson()));
  EXPECT_EQ(DocumentKind::kFlops,
            *KindOfDocument(FlopReportToJson(SmallCnnReport().operator_flops)));
  absl::StatusOr<Json> diff =
      CompareReportsJson(AnalysisJson(), AnalysisJson());
  ASSERT_TRUE(diff.ok()) << diff.status();
  EXPECT_EQ(DocumentKind::kDiff, *KindOfDocument(*diff));
}

TEST(KindOfDocumentTest, SomethingElseSaysWhatWasExpectedAndWhatCame) {
  EXPECT_EQ(
      "expected a report: crawl_module's or summary's (with 'layers'), "
      "measure_flops' (with 'by_operator') or compare_reports' diff, got an "
      "object with keys 'model', 'shape'",
      KindOfDocument(ParseOrFail(R"({"model": 1, "shape": [3]})"))
          .status()
          .message());
  EXPECT_TRUE(
      absl::EndsWith(KindOfDocument(ParseOrFail("[1]")).status().message(),
                     "got a JSON array"));
}

TEST(HtmlOfDocumentTest, ABrokenReportGetsTheParsersErrorNamingTheField) {
  Json document = AnalysisJson();
  document["layers"][2]["metrics"]["macs"]["status"] = "done";
  absl::StatusOr<std::string> html = HtmlOfDocument(document, nullptr, nullptr);
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, html.status().code());
  EXPECT_EQ(
      "report.layers[2].metrics.macs.status: status must be 'complete', "
      "'partial', or 'unavailable', got 'done'",
      html.status().message());
}

TEST(HtmlOfDocumentTest, SidesGoWithADiffOnly) {
  const Json report = AnalysisJson();
  EXPECT_EQ(
      "before and after go with a report diff (compare_reports), not with a "
      "single report",
      HtmlOfDocument(report, &report, &report).status().message());
}

TEST(HtmlOfDocumentTest, RendersADiffWithItsReports) {
  const Json report = AnalysisJson();
  absl::StatusOr<Json> diff = CompareReportsJson(report, report);
  ASSERT_TRUE(diff.ok()) << diff.status();
  absl::StatusOr<std::string> html = HtmlOfDocument(*diff, &report, &report);
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_TRUE(absl::StrContains(*html, "id=\"chart-after_operator_flops\""));
}

TEST(FoldedOfDocumentTest, ADiffNeedsItsReports) {
  const Json report = AnalysisJson();
  absl::StatusOr<Json> diff = CompareReportsJson(report, report);
  ASSERT_TRUE(diff.ok()) << diff.status();
  EXPECT_EQ(absl::StatusCode::kInvalidArgument,
            FoldedOfDocument(*diff, nullptr, nullptr).status().code());
  absl::StatusOr<FoldedStacks> folded =
      FoldedOfDocument(*diff, &report, &report);
  ASSERT_TRUE(folded.ok()) << folded.status();
  EXPECT_EQ(
      "Net 20 20\n"
      "Net;features;0 1100 1100\n"
      "Net;head 280 280\n",
      folded->text);
}

TEST(FoldedOfDocumentTest, AnUpstreamFlopReportFolds) {
  // TorchScan 0.2's report of SharedBlock, by its FlopReport: 96 FLOPs, of
  // which fc's 64 and tied's 32.
  const Json report = ParseOrFail(
      report::testing::ReadTestData("upstream/reports/shared_module.json"));
  absl::StatusOr<FoldedStacks> folded =
      FoldedOfDocument(report["operator_flops"], nullptr, nullptr);
  ASSERT_TRUE(folded.ok()) << folded.status();
  EXPECT_EQ("SharedBlock;fc 64\nSharedBlock;tied 32\n", folded->text);
}

TEST(DiagnosticsOfDocumentTest, ListsOrReplacesTheSummaryHint) {
  absl::StatusOr<std::string> listing =
      DiagnosticsOfDocument(AnalysisJson(), "");
  ASSERT_TRUE(listing.ok()) << listing.status();
  EXPECT_TRUE(absl::StartsWith(*listing, "Diagnostics: 4\n"));
  absl::StatusOr<std::string> summary = DiagnosticsOfDocument(
      AnalysisJson(), "t\nDiagnostics: 4 (inspect report['diagnostics'])\n_\n");
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(absl::StrCat("t\n", *listing, "_\n"), *summary);
}

}  // namespace
}  // namespace torchscan::report::render
