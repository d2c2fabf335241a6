#include "report/render/report_documents.h"

#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "report/analysis_report.h"
#include "report/flop_report.h"
#include "report/render/diagnostic_listing.h"
#include "report/report_diff.h"

namespace torchscan::report::render {
namespace {

constexpr char kExpected[] =
    "expected a report: crawl_module's or summary's (with 'layers'), "
    "measure_flops' (with 'by_operator') or compare_reports' diff";

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

absl::StatusOr<DocumentKind> CheckDocument(const Json& document,
                                           bool has_before, bool has_after) {
  TS_ASSIGN_OR_RETURN(DocumentKind kind, KindOfDocument(document));
  if ((has_before || has_after) && kind != DocumentKind::kDiff) {
    return absl::InvalidArgumentError(
        "before and after go with a report diff (compare_reports), not with "
        "a single report");
  }
  if (has_before != has_after) {
    return absl::InvalidArgumentError(
        "pass both reports a diff was computed from (before and after), or "
        "neither");
  }
  return kind;
}

namespace {

absl::StatusOr<ParsedDocument> ParseDocument(const Json& document,
                                             const Json* before,
                                             const Json* after) {
  TS_ASSIGN_OR_RETURN(
      DocumentKind kind,
      CheckDocument(document, before != nullptr, after != nullptr));
  ParsedDocument parsed;
  switch (kind) {
    case DocumentKind::kAnalysis: {
      TS_ASSIGN_OR_RETURN(AnalysisReport report,
                          AnalysisReportFromJson(document));
      parsed.report = std::move(report);
      break;
    }
    case DocumentKind::kFlops: {
      TS_ASSIGN_OR_RETURN(FlopReport report, FlopReportFromJson(document));
      parsed.report = std::move(report);
      break;
    }
    case DocumentKind::kDiff: {
      TS_ASSIGN_OR_RETURN(ReportDiff diff, ReportDiffFromJson(document));
      parsed.report = std::move(diff);
      break;
    }
  }
  if (before != nullptr) {
    TS_ASSIGN_OR_RETURN(AnalysisReport old_report,
                        AnalysisReportFromJson(*before, "before"));
    TS_ASSIGN_OR_RETURN(AnalysisReport new_report,
                        AnalysisReportFromJson(*after, "after"));
    parsed.before = std::move(old_report);
    parsed.after = std::move(new_report);
  }
  return parsed;
}

}  // namespace

absl::StatusOr<std::string> HtmlOfDocument(const Json& document,
                                           const Json* before,
                                           const Json* after,
                                           const HtmlOptions& options) {
  TS_ASSIGN_OR_RETURN(ParsedDocument parsed,
                      ParseDocument(document, before, after));
  return HtmlOfParsed(parsed, options);
}

absl::StatusOr<std::string> HtmlOfParsed(const ParsedDocument& parsed,
                                         const HtmlOptions& options) {
  if (const auto* report = std::get_if<AnalysisReport>(&parsed.report)) {
    return RenderHtml(*report, options);
  }
  if (const auto* report = std::get_if<FlopReport>(&parsed.report)) {
    return RenderHtml(*report, options);
  }
  return RenderHtml(std::get<ReportDiff>(parsed.report),
                    parsed.before ? &*parsed.before : nullptr,
                    parsed.after ? &*parsed.after : nullptr, options);
}

absl::StatusOr<FoldedStacks> FoldedOfDocument(const Json& document,
                                              const Json* before,
                                              const Json* after) {
  TS_ASSIGN_OR_RETURN(ParsedDocument parsed,
                      ParseDocument(document, before, after));
  return FoldedOfParsed(parsed);
}

absl::StatusOr<FoldedStacks> FoldedOfParsed(const ParsedDocument& parsed) {
  if (const auto* report = std::get_if<AnalysisReport>(&parsed.report)) {
    return FoldedOperatorFlops(*report);
  }
  if (const auto* report = std::get_if<FlopReport>(&parsed.report)) {
    return FoldedOperatorFlops(*report);
  }
  if (!parsed.before) {
    return absl::InvalidArgumentError(
        "folded stacks of a diff need the two reports it was computed from "
        "(before and after): a diff holds no per-module operator FLOPs");
  }
  TS_RETURN_IF_ERROR(CheckDiffOf(std::get<ReportDiff>(parsed.report),
                                 *parsed.before, *parsed.after));
  return FoldedOperatorFlopsDiff(*parsed.before, *parsed.after);
}

absl::StatusOr<std::string> DiagnosticsOfDocument(const Json& document,
                                                  absl::string_view summary) {
  TS_ASSIGN_OR_RETURN(ParsedDocument parsed,
                      ParseDocument(document, nullptr, nullptr));
  return DiagnosticsOfParsed(parsed, summary);
}

absl::StatusOr<std::string> DiagnosticsOfParsed(const ParsedDocument& parsed,
                                                absl::string_view summary) {
  const std::vector<Diagnostic>* diagnostics = nullptr;
  if (const auto* report = std::get_if<AnalysisReport>(&parsed.report)) {
    diagnostics = &report->diagnostics;
  } else if (const auto* report = std::get_if<FlopReport>(&parsed.report)) {
    diagnostics = &report->diagnostics;
  } else {
    return absl::InvalidArgumentError(
        "a report diff holds no diagnostics; list those of its reports");
  }
  if (summary.empty()) return ListDiagnostics(*diagnostics);
  return SummaryWithDiagnosticsListed(summary, *diagnostics);
}

}  // namespace torchscan::report::render
