// Diagnostic: names what a metric is missing and why.

#ifndef TORCHSCAN_REPORT_DIAGNOSTIC_H_
#define TORCHSCAN_REPORT_DIAGNOSTIC_H_

#include <string>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "report/field_table.h"

namespace torchscan::report {

// Diagnostic codes. The first five are TorchScan 0.2's; the rest are ours.
inline constexpr absl::string_view kModuleMetricError = "module_metric_error";
inline constexpr absl::string_view kUnsupportedModuleMetric =
    "unsupported_module_metric";
inline constexpr absl::string_view kModuleMetricWarning =
    "module_metric_warning";
inline constexpr absl::string_view kMissingMetricTensor =
    "missing_metric_tensor";
inline constexpr absl::string_view kUncountedOperator = "uncounted_operator";
// A formula exists but could not be evaluated for some calls (for example
// symbolic or nested-tensor shapes); those calls are missing from the count.
inline constexpr absl::string_view kOperatorFormulaError =
    "operator_formula_error";
// Work ran that no operator call shows (a CUDA-graph replay, a compiled graph
// without a FLOP tally), so its FLOPs are missing from the count.
inline constexpr absl::string_view kUnseenWork = "unseen_work";

// Whether a diagnostic is about a layer (by module path) or an operator.
enum class DiagnosticSubject { kPath, kOperator };

// The JSON keys of the subjects: "path" and "operator".
absl::Span<const std::pair<DiagnosticSubject, absl::string_view>> EnumNames(
    DiagnosticSubject);

// In JSON (docs/report-schema.md), every key required and no other allowed:
//   {"code": str, "severity": "warning"|"error", "metric": str,
//    "path": str | "operator": str, "message": str}
// ToJson(diagnostic) writes it; FromJson<Diagnostic>(JsonValue(node, path))
// reads it, errors naming the path ("report.diagnostics[2].sevrity: unknown
// field", "...: needs exactly one of 'path' and 'operator'").
struct Diagnostic {
  std::string code;
  std::string severity = "warning";
  std::string metric;
  DiagnosticSubject subject_kind = DiagnosticSubject::kPath;
  // The layer path ("" for the root) or the operator name ("aten.sin").
  std::string subject;
  std::string message;

  static Diagnostic ForPath(std::string code, std::string metric,
                            std::string path, std::string message);
  static Diagnostic ForOperator(std::string code, std::string metric,
                                std::string op, std::string message);

  bool operator==(const Diagnostic&) const = default;
  // The severity is "warning" or "error".
  absl::Status Validate(absl::string_view path) const;

  static constexpr auto kFields = std::make_tuple(
      Field("code", &Diagnostic::code),
      Field("severity", &Diagnostic::severity),
      Field("metric", &Diagnostic::metric),
      FieldKeyedBy(&Diagnostic::subject_kind, &Diagnostic::subject),
      Field("message", &Diagnostic::message));
};

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_DIAGNOSTIC_H_
