// Diagnostics for a reader at a terminal: grouped by code, with counts, the
// metrics concerned, the first few subjects and one message as an example.
//
//   Diagnostics: 5
//     uncounted_operator: 5 on 5 operators (flops)
//       aten.add, aten.max_pool2d_with_indices, aten.mean, ... and 2 more
//       e.g. aten.add was observed 8 time(s), but no FLOP formula is
//       registered.
//
// The summary table (summary.h) ends with TorchScan 0.2's
// "Diagnostics: N (inspect report['diagnostics'])", which must stay byte for
// byte for Python; a command line shows this listing in its place.

#ifndef TORCHSCAN_REPORT_RENDER_DIAGNOSTIC_LISTING_H_
#define TORCHSCAN_REPORT_RENDER_DIAGNOSTIC_LISTING_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "report/diagnostic.h"

namespace torchscan::report::render {

inline constexpr int kListedSubjects = 5;

// The diagnostics of one code.
struct DiagnosticGroup {
  std::string code;
  // Into the span given to GroupDiagnostics, in its order.
  std::vector<const Diagnostic*> diagnostics;
  // Distinct and sorted.
  std::vector<std::string> metrics;
  std::vector<std::string> severities;
  // Distinct SubjectText()s, in report order.
  std::vector<std::string> subjects;
  // "module"/"modules", "operator"/"operators", or "subject"/"subjects" for
  // a mix, agreeing with subjects.size().
  std::string subject_noun;
};

// Groups in order of each code's first appearance.
std::vector<DiagnosticGroup> GroupDiagnostics(
    absl::Span<const Diagnostic> diagnostics);

// The operator, or the module path with the root written "<root>".
std::string SubjectText(const Diagnostic& diagnostic);

// Codes in order of first appearance (module diagnostics come first in a
// report); subjects de-duplicated, in report order, the root path written
// "<root>". Every line ends in '\n'; no diagnostics give "".
std::string ListDiagnostics(absl::Span<const Diagnostic> diagnostics,
                            int max_subjects = kListedSubjects);

// `summary` (RenderSummary's text) with its "Diagnostics: N (inspect
// report['diagnostics'])" line replaced by ListDiagnostics(diagnostics); the
// listing is appended when the line is absent (a summary of other
// diagnostics).
std::string SummaryWithDiagnosticsListed(
    absl::string_view summary, absl::Span<const Diagnostic> diagnostics);

}  // namespace torchscan::report::render

#endif  // TORCHSCAN_REPORT_RENDER_DIAGNOSTIC_LISTING_H_
