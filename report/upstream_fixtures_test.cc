// Reports, summary tables and diffs written by the released torchscan==0.2.0
// (tools/make_upstream_fixtures.py): we must read them, write them back byte
// for byte, render the same tables and compute the same diffs and errors.

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "report/analysis_report.h"
#include "report/compare.h"
#include "report/json_io.h"
#include "report/strict.h"
#include "report/summary.h"
#include "report/test_support.h"

namespace torchscan::report {
namespace {

using testing::ParseOrFail;
using testing::ReadTestData;

// A file named by the manifest, relative to report/testdata/upstream.
std::string UpstreamFile(const std::string& file) {
  return ReadTestData("upstream/" + file);
}

Json Manifest() { return ParseOrFail(ReadTestData("upstream/manifest.json")); }

AnalysisReport UpstreamReport(absl::string_view name) {
  absl::StatusOr<AnalysisReport> report = ParseAnalysisReport(
      ReadTestData(absl::StrCat("upstream/reports/", name, ".json")));
  EXPECT_TRUE(report.ok()) << name << ": " << report.status();
  return report.ok() ? *std::move(report) : AnalysisReport();
}

// Python's str(error) without the exception class our statuses do not carry.
std::string PythonMessage(absl::string_view error) {
  absl::ConsumePrefix(&error, "ValueError: ");
  absl::ConsumePrefix(&error, "TypeError: ");
  return std::string(error);
}

TEST(UpstreamFixturesTest, ManifestWasMadeByTheReleasedPackage) {
  const Json manifest = Manifest();
  EXPECT_EQ(manifest["torchscan_version"], "0.2.0");
  EXPECT_EQ(manifest["reports"].size(), 13u);
  EXPECT_EQ(manifest["summaries"].size(), 24u);
  EXPECT_EQ(manifest["compares"].size(), 36u);
}

TEST(UpstreamFixturesTest, ReportsRoundTripByteForByte) {
  const Json manifest = Manifest();
  for (const Json& entry : manifest["reports"]) {
    const std::string name = entry["name"];
    SCOPED_TRACE(name);
    const std::string text = UpstreamFile(entry["file"].get<std::string>());
    absl::StatusOr<AnalysisReport> report = ParseAnalysisReport(text);
    ASSERT_TRUE(report.ok()) << report.status();
    // json.dumps(report) + "\n", as the generator wrote it.
    EXPECT_EQ(DumpPythonJson(AnalysisReportToJson(*report)) + "\n", text);
    // The native compact form reads back to the same report.
    absl::StatusOr<AnalysisReport> again =
        ParseAnalysisReport(DumpJson(AnalysisReportToJson(*report)));
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*again, *report);
  }
}

TEST(UpstreamFixturesTest,
     StrictVerdictAndMessageMatchIncompleteAnalysisError) {
  const Json manifest = Manifest();
  for (const Json& entry : manifest["reports"]) {
    const std::string name = entry["name"];
    SCOPED_TRACE(name);
    const AnalysisReport report = UpstreamReport(name);
    const absl::Status strict = CheckStrict(report);
    if (entry["strict_error"].is_null()) {
      EXPECT_TRUE(strict.ok()) << strict;
    } else {
      EXPECT_EQ(strict.code(), absl::StatusCode::kFailedPrecondition);
      EXPECT_EQ(strict.message(), entry["strict_error"].get<std::string>());
      EXPECT_EQ(IncompleteAnalysisMessage(report),
                entry["strict_error"].get<std::string>());
    }
  }
}

TEST(UpstreamFixturesTest, SummariesRenderCharacterForCharacter) {
  const Json manifest = Manifest();
  for (const Json& entry : manifest["summaries"]) {
    const std::string name = entry["report"];
    const Json& options_json = entry["options"];
    SCOPED_TRACE(name + " " + DumpPythonJson(options_json));
    SummaryOptions options;
    if (options_json.contains("wrap_mode")) {
      options.wrap_mode.reset();
      if (!options_json["wrap_mode"].is_null()) {
        options.wrap_mode = options_json["wrap_mode"].get<std::string>();
      }
    }
    if (options_json.contains("max_depth")) {
      options.max_depth = options_json["max_depth"].get<std::int64_t>();
    }
    options.receptive_field = options_json.value("receptive_field", false);
    options.effective_rf_stats =
        options_json.value("effective_rf_stats", false);
    absl::StatusOr<std::string> text =
        RenderSummary(UpstreamReport(name), options);
    if (entry.contains("file")) {
      ASSERT_TRUE(text.ok()) << text.status();
      EXPECT_EQ(*text, UpstreamFile(entry["file"].get<std::string>()));
    } else if (entry.contains("deviation_file")) {
      // Documented deviation: upstream raises on string receptive fields.
      ASSERT_TRUE(text.ok()) << text.status();
      EXPECT_EQ(*text,
                UpstreamFile(entry["deviation_file"].get<std::string>()));
    } else {
      ASSERT_FALSE(text.ok());
      EXPECT_EQ(text.status().message(), entry["error"].get<std::string>());
    }
  }
}

TEST(UpstreamFixturesTest, ComparesGiveTheSameDiffsAndErrors) {
  const Json manifest = Manifest();
  for (const Json& entry : manifest["compares"]) {
    const std::string name = entry["name"];
    SCOPED_TRACE(name);
    absl::StatusOr<std::string> diff =
        CompareReportsText(UpstreamFile(entry["before"].get<std::string>()),
                           UpstreamFile(entry["after"].get<std::string>()));
    if (entry.contains("file")) {
      ASSERT_TRUE(diff.ok()) << diff.status();
      const std::string expected =
          UpstreamFile(entry["file"].get<std::string>());
      EXPECT_EQ(*diff + "\n", expected);
      // The diff itself reads back losslessly.
      absl::StatusOr<ReportDiff> typed =
          ReportDiffFromJson(ParseOrFail(expected));
      ASSERT_TRUE(typed.ok()) << typed.status();
      EXPECT_EQ(DumpPythonJson(ReportDiffToJson(*typed)) + "\n", expected);
    } else {
      ASSERT_FALSE(diff.ok());
      EXPECT_EQ(diff.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_EQ(diff.status().message(),
                PythonMessage(entry["error"].get<std::string>()));
    }
  }
}

TEST(UpstreamFixturesTest, TypedCompareAgreesWithTheJsonEntryPoint) {
  const Json manifest = Manifest();
  for (const Json& entry : manifest["compares"]) {
    const std::string name = entry["name"];
    if (!absl::StrContains(name, "__vs__") || !entry.contains("file")) continue;
    SCOPED_TRACE(name);
    absl::StatusOr<AnalysisReport> before =
        ParseAnalysisReport(UpstreamFile(entry["before"].get<std::string>()));
    absl::StatusOr<AnalysisReport> after =
        ParseAnalysisReport(UpstreamFile(entry["after"].get<std::string>()));
    ASSERT_TRUE(before.ok() && after.ok());
    absl::StatusOr<ReportDiff> diff = CompareReports(*before, *after);
    ASSERT_TRUE(diff.ok()) << diff.status();
    EXPECT_EQ(DumpPythonJson(ReportDiffToJson(*diff)) + "\n",
              UpstreamFile(entry["file"].get<std::string>()));
  }
}

TEST(UpstreamFixturesTest, ReportComparedWithItselfHasNoChanges) {
  const Json manifest = Manifest();
  for (const Json& entry : manifest["reports"]) {
    const std::string name = entry["name"];
    SCOPED_TRACE(name);
    const AnalysisReport report = UpstreamReport(name);
    absl::StatusOr<ReportDiff> diff = CompareReports(report, report);
    ASSERT_TRUE(diff.ok()) << diff.status();
    EXPECT_TRUE(diff->added.empty());
    EXPECT_TRUE(diff->removed.empty());
    EXPECT_TRUE(diff->changed.empty());
    ASSERT_EQ(diff->totals.size(), 10u);
    for (const auto& [total, metric] : diff->totals) {
      EXPECT_EQ(metric.status, report.totals.Find(total)->status()) << total;
      if (metric.status == MetricStatus::kComplete) {
        EXPECT_EQ(metric.delta, MetricValue(Count(0))) << total;
      } else {
        EXPECT_FALSE(metric.delta.has_value()) << total;
      }
    }
  }
}

// Reference 11's report, assembled by our code, is the upstream file.
TEST(UpstreamFixturesTest, OurConv2dReportIsTheUpstreamReport) {
  const AnalysisReport ours = testing::Conv2dReportFromParts();
  EXPECT_EQ(DumpPythonJson(AnalysisReportToJson(ours)) + "\n",
            ReadTestData("upstream/reports/conv2d_3_8_3.json"));
  EXPECT_EQ(ours, UpstreamReport("conv2d_3_8_3"));
}

// README: Conv2d(3, 8, 3) vs Conv2d(3, 12, 3) -> parameters complete, 112.
TEST(UpstreamFixturesTest, OursComparedWithUpstreamGivesTheUpstreamDiff) {
  const AnalysisReport ours = testing::Conv2dReportFromParts();
  absl::StatusOr<ReportDiff> diff =
      CompareReports(ours, UpstreamReport("conv2d_3_12_3"));
  ASSERT_TRUE(diff.ok()) << diff.status();
  EXPECT_EQ(diff->totals.at("parameters").status, MetricStatus::kComplete);
  EXPECT_EQ(diff->totals.at("parameters").delta, MetricValue(Count(112)));
  EXPECT_EQ(
      DumpPythonJson(ReportDiffToJson(*diff)) + "\n",
      ReadTestData("upstream/diffs/conv2d_3_8_3__vs__conv2d_3_12_3.json"));
  // And the other way round, against the upstream twin of ours.
  absl::StatusOr<ReportDiff> same =
      CompareReports(UpstreamReport("conv2d_3_8_3"), ours);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(DumpPythonJson(ReportDiffToJson(*same)) + "\n",
            ReadTestData("upstream/diffs/conv2d_3_8_3__vs__conv2d_3_8_3.json"));
}

TEST(UpstreamFixturesTest, OurSummaryOfConv2dIsTheUpstreamTable) {
  absl::StatusOr<std::string> text =
      RenderSummary(testing::Conv2dReportFromParts());
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, ReadTestData("upstream/summaries/00_conv2d_3_8_3.txt"));
}

}  // namespace
}  // namespace torchscan::report
