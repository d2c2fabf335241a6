#include "report/diagnostic.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "report/analysis_report.h"
#include "report/field_table.h"
#include "report/field_table_testing.h"
#include "report/flop_report.h"
#include "report/job_merge.h"
#include "report/json_io.h"
#include "report/json_reader.h"
#include "report/metric_result.h"
#include "report/test_support.h"

namespace torchscan::report {
namespace {

Diagnostic LayerError() {
  Diagnostic diagnostic = Diagnostic::ForPath(
      std::string(kModuleMetricError), "macs", "features.0", "no formula");
  diagnostic.severity = "error";
  return diagnostic;
}

Diagnostic Uncounted() {
  return Diagnostic::ForOperator(std::string(kUncountedOperator), "flops",
                                 "aten.sin", "no FLOP formula");
}

}  // namespace

// Every field, both subject kinds, the root's empty path.
template <>
struct FieldTableSamples<Diagnostic> {
  static std::vector<Diagnostic> Get() {
    return {LayerError(), Uncounted(),
            Diagnostic::ForPath(std::string(kUnsupportedModuleMetric),
                                "receptive_field", "", "")};
  }
};

namespace {

using DiagnosticRecords = ::testing::Types<Diagnostic>;
INSTANTIATE_TYPED_TEST_SUITE_P(DiagnosticTest, FieldTableRoundTrip,
                               DiagnosticRecords);

// Reading `text` as a diagnostic at path "diagnostic": "" when it reads,
// else the error's message.
std::string ReadError(absl::string_view text) {
  absl::StatusOr<Diagnostic> read =
      FromJsonText<Diagnostic>(text, "diagnostic");
  return read.ok() ? "" : std::string(read.status().message());
}

// `document` with an unknown key in its first diagnostic of `at` (a JSON
// pointer to the array).
Json WithMisspeltKey(Json document, const std::string& at) {
  Json& diagnostic = document[Json::json_pointer(at)][0];
  diagnostic["sevrity"] = diagnostic["severity"];
  return document;
}

// The wire format, written out by hand: the subject under the key of its
// kind, between the metric and the message.
TEST(DiagnosticTest, WritesTheSubjectUnderTheKeyOfItsKind) {
  EXPECT_EQ(
      R"({"code":"module_metric_error","severity":"error","metric":"macs",)"
      R"("path":"features.0","message":"no formula"})",
      DumpJson(ToJson(LayerError())));
  EXPECT_EQ(
      R"({"code":"uncounted_operator","severity":"warning","metric":"flops",)"
      R"("operator":"aten.sin","message":"no FLOP formula"})",
      DumpJson(ToJson(Uncounted())));
}

TEST(DiagnosticTest, ReadsTheSubjectKindFromItsKey) {
  absl::StatusOr<Diagnostic> read = FromJsonText<Diagnostic>(
      R"({"code":"uncounted_operator","severity":"warning","metric":"flops",)"
      R"("message":"no FLOP formula","operator":"aten.sin"})",
      "diagnostic");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(Uncounted(), *read);
}

TEST(DiagnosticTest, AnUnknownKeyIsNamedByPath) {
  EXPECT_EQ("diagnostic.sevrity: unknown field",
            ReadError(R"({"code":"c","sevrity":"warning","metric":"flops",)"
                      R"("path":"","message":""})"));
}

TEST(DiagnosticTest, AMissingFieldIsNamedByPath) {
  EXPECT_EQ("diagnostic.message: is missing",
            ReadError(R"({"code":"c","severity":"warning","metric":"flops",)"
                      R"("path":""})"));
}

TEST(DiagnosticTest, NeedsExactlyOneSubject) {
  EXPECT_EQ("diagnostic: needs exactly one of 'path' and 'operator'",
            ReadError(R"({"code":"c","severity":"warning","metric":"flops",)"
                      R"("message":""})"));
  EXPECT_EQ("diagnostic: needs exactly one of 'path' and 'operator'",
            ReadError(R"({"code":"c","severity":"warning","metric":"flops",)"
                      R"("path":"","operator":"aten.sin","message":""})"));
  EXPECT_EQ("diagnostic.operator: expected a string, got null",
            ReadError(R"({"code":"c","severity":"warning","metric":"flops",)"
                      R"("operator":null,"message":""})"));
}

TEST(DiagnosticTest, TheSeverityIsWarningOrError) {
  EXPECT_EQ("diagnostic.severity: must be 'warning' or 'error', got 'info'",
            ReadError(R"({"code":"c","severity":"info","metric":"flops",)"
                      R"("path":"","message":""})"));
}

// Everywhere diagnostics are read, an unknown key in one is refused with
// its path.
TEST(DiagnosticTest, AnAnalysisReportRefusesAnUnknownKeyInADiagnostic) {
  AnalysisReport report = testing::Conv2dReportFromParts();
  report.diagnostics = {LayerError()};
  absl::StatusOr<AnalysisReport> read = AnalysisReportFromJson(
      WithMisspeltKey(AnalysisReportToJson(report), "/diagnostics"));
  ASSERT_FALSE(read.ok());
  EXPECT_EQ("report.diagnostics[0].sevrity: unknown field",
            read.status().message());
}

FlopReport WithDiagnostics() {
  FlopReport report;
  report.torch_version = "2.13.0";
  report.total = MetricResult::Partial(Count(0), OperatorFlopsKind());
  report.diagnostics = {Uncounted()};
  report.mask_aware = MaskAwareFlops{
      MetricResult::Partial(Count(0), MaskAwareFlopsKind()), {}, {Uncounted()}};
  report.bytes = BytesMoved{MetricResult::Partial(Count(0), BytesMovedKind()),
                            0,
                            0,
                            {},
                            {},
                            {Uncounted()}};
  return report;
}

TEST(DiagnosticTest, AFlopReportRefusesAnUnknownKeyInADiagnostic) {
  const Json json = FlopReportToJson(WithDiagnostics());
  ASSERT_TRUE(FlopReportFromJson(json, "flops").ok());
  for (const std::string at :
       {"/diagnostics", "/mask_aware/diagnostics", "/bytes/diagnostics"}) {
    absl::StatusOr<FlopReport> read =
        FlopReportFromJson(WithMisspeltKey(json, at), "flops");
    ASSERT_FALSE(read.ok()) << at;
    std::string path = "flops" + at + "[0].sevrity";
    std::replace(path.begin(), path.end(), '/', '.');
    EXPECT_EQ(path + ": unknown field", read.status().message());
  }
}

TEST(DiagnosticTest, AJobMergeRefusesAnUnknownKeyInADiagnostic) {
  Json rank = FlopReportToJson(WithDiagnostics());
  rank["distributed"] = DistributedContextToJson(
      DistributedContext{"j", 0, 1, "gloo", {{"0", {0}, std::nullopt}}});
  ASSERT_TRUE(MergeRankReportsJson({rank}, {"rank0.json"}).ok());
  absl::StatusOr<JobReport> merged = MergeRankReportsJson(
      {WithMisspeltKey(rank, "/diagnostics")}, {"rank0.json"});
  ASSERT_FALSE(merged.ok());
  EXPECT_EQ("rank0.json.diagnostics[0].sevrity: unknown field",
            merged.status().message());
}

}  // namespace
}  // namespace torchscan::report
