// The JSON edge of the renderers: any report a front end holds as JSON
// (Python's operators, the compare command) is recognized, parsed with the
// typed parsers, and rendered. Errors name the problem: a document that is
// no report says what was expected and which keys it has; a report that
// does not parse gets the parser's error, which names the field
// ("report.layers[3].metrics.macs.status: ...").

#ifndef TORCHSCAN_REPORT_RENDER_REPORT_DOCUMENTS_H_
#define TORCHSCAN_REPORT_RENDER_REPORT_DOCUMENTS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/json_io.h"
#include "report/render/folded_stacks.h"
#include "report/render/html_report.h"

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
