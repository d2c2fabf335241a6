// libFuzzer target: parsing, compare, strict checking and the summary table
// on hostile input. Besides crashes and sanitizer reports it fails on broken
// invariants: whatever parses must write back to a fixed point, and every
// diff compare_reports produces must itself parse.
//
// Input: one JSON document, or two separated by the first NUL byte (before,
// after). A single document is also compared with itself.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/string_view.h"
#include "report/analysis_report.h"
#include "report/compare.h"
#include "report/json_io.h"
#include "report/report_diff.h"
#include "report/strict.h"
#include "report/summary.h"
#include "report/value_metadata.h"

namespace torchscan::report {
namespace {

void Require(bool condition, const char* what) {
  if (condition) return;
  std::fprintf(stderr, "report fuzzer invariant broken: %s\n", what);
  std::abort();
}

void ExerciseReport(const AnalysisReport& report) {
  const Json json = AnalysisReportToJson(report);
  // The canonical form parses back to the same report and the same JSON.
  for (const std::string& text : {DumpPythonJson(json), DumpJson(json, 1)}) {
    absl::StatusOr<AnalysisReport> again = ParseAnalysisReport(text);
    Require(again.ok(), "a written report parses");
    Require(*again == report, "a written report reads back equal");
    Require(AnalysisReportToJson(*again) == json,
            "report JSON is a fixed point");
  }
  (void)IncompleteAnalysisMessage(report);
  (void)CheckStrict(report);
  SummaryOptions options;
  (void)RenderSummary(report, options);
  options.receptive_field = options.effective_rf_stats = true;
  options.wrap_mode = "end";
  (void)RenderSummary(report, options);
  options.wrap_mode.reset();
  for (std::int64_t depth : {0, 1, 2}) {
    options.max_depth = depth;
    (void)RenderSummary(report, options);
  }
  (void)CompareReports(report, report);
}

void ExerciseDiff(const Json& json) {
  absl::StatusOr<ReportDiff> diff = ReportDiffFromJson(json);
  if (!diff.ok()) return;
  const Json written = ReportDiffToJson(*diff);
  absl::StatusOr<Json> reparsed = ParseJson(DumpPythonJson(written));
  Require(reparsed.ok(), "a written diff parses as JSON");
  absl::StatusOr<ReportDiff> again = ReportDiffFromJson(*reparsed);
  Require(again.ok(), "a written diff parses");
  Require(*again == *diff, "a written diff reads back equal");
}

void ExerciseDocument(const Json& json) {
  absl::StatusOr<AnalysisReport> report = AnalysisReportFromJson(json);
  if (report.ok()) ExerciseReport(*report);
  ExerciseDiff(json);
  (void)ComparableReportFromJson(json, "report");
  (void)ValueMetadataFromJson(json, "value");
  (void)FlopReportFromJson(json);
}

}  // namespace
}  // namespace torchscan::report

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  using namespace torchscan::report;
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t split = input.find('\0');
  const absl::string_view before = input.substr(0, split);
  const absl::string_view after =
      split == absl::string_view::npos ? before : input.substr(split + 1);

  absl::StatusOr<Json> before_json = ParseJson(before);
  absl::StatusOr<Json> after_json = ParseJson(after);
  if (before_json.ok()) ExerciseDocument(*before_json);
  if (after_json.ok() && split != absl::string_view::npos) {
    ExerciseDocument(*after_json);
  }
  if (before_json.ok() && after_json.ok()) {
    absl::StatusOr<Json> diff = CompareReportsJson(*before_json, *after_json);
    if (diff.ok()) {
      absl::StatusOr<ReportDiff> typed = ReportDiffFromJson(*diff);
      Require(typed.ok(), "every diff compare produces parses");
      Require(ReportDiffToJson(*typed) == *diff, "diff JSON is a fixed point");
    }
  }
  (void)CompareReportsText(before, after);
  return 0;
}
