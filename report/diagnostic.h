// Diagnostic: names what a metric is missing and why.

#ifndef TORCHSCAN_REPORT_DIAGNOSTIC_H_
#define TORCHSCAN_REPORT_DIAGNOSTIC_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/json_io.h"

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
};

Json DiagnosticToJson(const Diagnostic& diagnostic);
absl::StatusOr<Diagnostic> DiagnosticFromJson(const Json& node,
                                              absl::string_view field);

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_DIAGNOSTIC_H_
