#include "report/render/report_documents.h"

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "report/analysis_report.h"
#include "report/flop_report.h"
#include "report/render/diagnostic_listing.h"
#include "report/report_diff.h"

namespace torchscan::report::render {
namespace {

constexpr char kExpected[] =
    "expected a report: crawl_module's or summary's (with 'layers'), "
    "measure_flops' (with 'by_operator') or compare_reports' diff";

// The diff's reports, parsed; both null when neither is given.
struct DiffSides {
  std::optional<AnalysisReport> before;
  std::optional<AnalysisReport> after;
};

absl::StatusOr<DiffSides> ParseSides(DocumentKind kind, const Json* before,
                                     const Json* after) {
  if (before == nullptr && after == nullptr) return DiffSides{};
  if (kind != DocumentKind::kDiff) {
    return absl::InvalidArgumentError(
        "before and after go with a report diff (compare_reports), not with "
        "a single report");
  }
  if (before == nullptr || after == nullptr) {
    return absl::InvalidArgumentError(
        "pass both reports a diff was computed from (before and after), or "
        "neither");
  }
  DiffSides sides;
  absl::StatusOr<AnalysisReport> old_report =
      AnalysisReportFromJson(*before, "before");
  if (!old_report.ok()) return old_report.status();
  absl::StatusOr<AnalysisReport> new_report =
      AnalysisReportFromJson(*after, "after");
  if (!new_report.ok()) return new_report.status();
  sides.before = *std::move(old_report);
  sides.after = *std::move(new_report);
  return sides;
}

}  // namespace

absl::StatusOr<DocumentKind> KindOfDocument(const Json& document) {
  if (!document.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kExpected, ", got a JSON ", document.type_name()));
  }
  if (auto layers = document.find("layers"); layers != document.end()) {
    if (layers->is_array()) return DocumentKind::kAnalysis;
    if (layers->is_object()) return DocumentKind::kDiff;
  }
  if (document.contains("by_operator") || document.contains("by_module")) {
    return DocumentKind::kFlops;
  }
  std::vector<std::string> keys;
  for (const auto& [key, unused] : document.items()) {
    if (keys.size() == 8) {
      keys.push_back("...");
      break;
    }
    keys.push_back(absl::StrCat("'", key, "'"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(kExpected, ", got an object with keys ",
                   keys.empty() ? "(none)" : absl::StrJoin(keys, ", ")));
}

absl::StatusOr<std::string> HtmlOfDocument(const Json& document,
                                           const Json* before,
                                           const Json* after,
                                           const HtmlOptions& options) {
  absl::StatusOr<DocumentKind> kind = KindOfDocument(document);
  if (!kind.ok()) return kind.status();
  absl::StatusOr<DiffSides> sides = ParseSides(*kind, before, after);
  if (!sides.ok()) return sides.status();
  switch (*kind) {
    case DocumentKind::kAnalysis: {
      absl::StatusOr<AnalysisReport> report = AnalysisReportFromJson(document);
      if (!report.ok()) return report.status();
      return RenderHtml(*report, options);
    }
    case DocumentKind::kFlops: {
      absl::StatusOr<FlopReport> report = FlopReportFromJson(document);
      if (!report.ok()) return report.status();
      return RenderHtml(*report, options);
    }
    case DocumentKind::kDiff: {
      absl::StatusOr<ReportDiff> diff = ReportDiffFromJson(document);
      if (!diff.ok()) return diff.status();
      return RenderHtml(*diff, sides->before ? &*sides->before : nullptr,
                        sides->after ? &*sides->after : nullptr, options);
    }
  }
  return absl::InternalError("unknown document kind");
}

absl::StatusOr<FoldedStacks> FoldedOfDocument(const Json& document,
                                              const Json* before,
                                              const Json* after) {
  absl::StatusOr<DocumentKind> kind = KindOfDocument(document);
  if (!kind.ok()) return kind.status();
  absl::StatusOr<DiffSides> sides = ParseSides(*kind, before, after);
  if (!sides.ok()) return sides.status();
  switch (*kind) {
    case DocumentKind::kAnalysis: {
      absl::StatusOr<AnalysisReport> report = AnalysisReportFromJson(document);
      if (!report.ok()) return report.status();
      return FoldedOperatorFlops(*report);
    }
    case DocumentKind::kFlops: {
      absl::StatusOr<FlopReport> report = FlopReportFromJson(document);
      if (!report.ok()) return report.status();
      return FoldedOperatorFlops(*report);
    }
    case DocumentKind::kDiff: {
      if (!sides->before) {
        return absl::InvalidArgumentError(
            "folded stacks of a diff need the two reports it was computed "
            "from (before and after): a diff holds no per-module operator "
            "FLOPs");
      }
      absl::StatusOr<ReportDiff> diff = ReportDiffFromJson(document);
      if (!diff.ok()) return diff.status();
      if (absl::Status status =
              CheckDiffOf(*diff, *sides->before, *sides->after);
          !status.ok()) {
        return status;
      }
      return FoldedOperatorFlopsDiff(*sides->before, *sides->after);
    }
  }
  return absl::InternalError("unknown document kind");
}

absl::StatusOr<std::string> DiagnosticsOfDocument(const Json& document,
                                                  absl::string_view summary) {
  absl::StatusOr<DocumentKind> kind = KindOfDocument(document);
  if (!kind.ok()) return kind.status();
  std::vector<Diagnostic> diagnostics;
  if (*kind == DocumentKind::kAnalysis) {
    absl::StatusOr<AnalysisReport> report = AnalysisReportFromJson(document);
    if (!report.ok()) return report.status();
    diagnostics = std::move(report->diagnostics);
  } else if (*kind == DocumentKind::kFlops) {
    absl::StatusOr<FlopReport> report = FlopReportFromJson(document);
    if (!report.ok()) return report.status();
    diagnostics = std::move(report->diagnostics);
  } else {
    return absl::InvalidArgumentError(
        "a report diff holds no diagnostics; list those of its reports");
  }
  if (summary.empty()) return ListDiagnostics(diagnostics);
  return SummaryWithDiagnosticsListed(summary, diagnostics);
}

}  // namespace torchscan::report::render
