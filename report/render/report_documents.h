// The JSON edge of the renderers: any report a front end holds as JSON
// (Python's operators, the compare command) is recognized, parsed with the
// typed parsers, and rendered. Errors name the problem: a document that is
// no report says what was expected and which keys it has; a report that
// does not parse gets the parser's error, which names the field
// ("report.layers[3].metrics.macs.status: ...").

#ifndef TORCHSCAN_REPORT_RENDER_REPORT_DOCUMENTS_H_
#define TORCHSCAN_REPORT_RENDER_REPORT_DOCUMENTS_H_

#include <optional>
#include <string>
#include <variant>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/analysis_report.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "report/render/folded_stacks.h"
#include "report/render/html_report.h"
#include "report/report_diff.h"

namespace torchscan::report::render {

enum class DocumentKind {
  // crawl_module / summary: an object whose "layers" is a list.
  kAnalysis,
  // measure_flops: an object with "by_operator" or "by_module".
  kFlops,
  // compare_reports: an object whose "layers" is an object (added, removed,
  // changed).
  kDiff,
};

absl::StatusOr<DocumentKind> KindOfDocument(const Json& document);

// What KindOfDocument and the checks of `before` and `after` below ask of a
// document, made before anything is read: the kind, or the error that it
// has none or that `before` and `after` do not go with it. They read only
// the document's type, its top-level keys and the type of its "layers", so
// `document` may hold only those (a JSON front end reading the document by
// other means).
absl::StatusOr<DocumentKind> CheckDocument(const Json& document,
                                           bool has_before, bool has_after);

// A document read with the reader of its kind (the paths of its errors:
// "report", "flop_report" or "diff"), and the reports a diff was computed
// from ("before", "after"), when given.
struct ParsedDocument {
  std::variant<AnalysisReport, FlopReport, ReportDiff> report;
  std::optional<AnalysisReport> before;
  std::optional<AnalysisReport> after;
};

// The functions below on a document already read.
absl::StatusOr<std::string> HtmlOfParsed(const ParsedDocument& parsed,
                                         const HtmlOptions& options = {});
absl::StatusOr<FoldedStacks> FoldedOfParsed(const ParsedDocument& parsed);
absl::StatusOr<std::string> DiagnosticsOfParsed(const ParsedDocument& parsed,
                                                absl::string_view summary);

// The page of an analysis, a FlopReport or a diff. `before` and `after` are
// both null, or (with a diff only) the reports the diff was computed from,
// which add the before/after charts (RenderHtml).
absl::StatusOr<std::string> HtmlOfDocument(const Json& document,
                                           const Json* before,
                                           const Json* after,
                                           const HtmlOptions& options = {});

// The folded stacks of an analysis or a FlopReport; of a diff, the
// differential stacks of the two reports it was computed from, which are
// then required.
absl::StatusOr<FoldedStacks> FoldedOfDocument(const Json& document,
                                              const Json* before,
                                              const Json* after);

// ListDiagnostics of an analysis or a FlopReport; with `summary` (the
// report's RenderSummary text), SummaryWithDiagnosticsListed.
absl::StatusOr<std::string> DiagnosticsOfDocument(const Json& document,
                                                  absl::string_view summary);

}  // namespace torchscan::report::render

#endif  // TORCHSCAN_REPORT_RENDER_REPORT_DOCUMENTS_H_
