// FlopReport: operator FLOPs of one workload (TorchScan 0.2's FlopReport of
// measure_flops).

#ifndef TORCHSCAN_REPORT_FLOP_REPORT_H_
#define TORCHSCAN_REPORT_FLOP_REPORT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/count.h"
#include "report/diagnostic.h"
#include "report/json_io.h"
#include "report/metric_result.h"
#include "report/precision.h"

namespace torchscan::report {

inline constexpr int kSchemaVersion = 1;
// The counting convention our operator formulas follow, operator for operator.
inline constexpr absl::string_view kOperatorFlopsMethod =
    "torch.utils.flop_counter.FlopCounterMode";

MetricKind OperatorFlopsKind();

struct IgnoredOperator {
  Count calls = 0;
  std::string reason;

  bool operator==(const IgnoredOperator&) const = default;
};

struct FlopReport {
  int schema_version = kSchemaVersion;
  std::string torch_version;
  std::string method = std::string(kOperatorFlopsMethod);
  MetricResult total = MetricResult::Complete(Count(0), OperatorFlopsKind());
  // Inclusive FLOPs per module label ("Sequential", "Sequential.0", ...).
  std::map<std::string, Count> by_module;
  std::map<std::string, Count> by_operator;
  // Counted FLOPs per compute precision (PrecisionName: "bf16", "fp8", ...,
  // "unknown"), nonzero entries only; they sum to the total's known value.
  // Empty in a report read from JSON that has none (written before it
  // existed), and then not written either.
  std::map<std::string, Count> by_precision;
  std::map<std::string, IgnoredOperator> ignored_operators;
  std::vector<Diagnostic> diagnostics;

  bool operator==(const FlopReport&) const = default;
};

// What a counter saw of one operator packet ("aten.mm") during a workload.
struct OperatorObservation {
  std::string name;
  Count calls = 0;
  // Calls whose FLOPs a formula produced, and their sum.
  Count counted_calls = 0;
  Count flops = 0;
  // `flops` by the precision each call ran in; what these slots do not
  // account for is reported as Precision::kUnknown.
  PrecisionCounts flops_by_precision{};
  // Set when the operator has no formula but is explicitly zero-FLOP.
  std::optional<std::string> ignored_reason;
  // Calls whose formula failed, with the first failure's message.
  Count failed_calls = 0;
  std::string failure_message;
  // Set for a pseudo-operator standing for work that ran where no operator
  // call shows it (a CUDA-graph replay, a compiled graph without a tally):
  // why its FLOPs are missing.
  std::optional<std::string> unseen_reason;
};

// Assembles the report: formulas feed by_operator; ignored operators are
// listed with their reason; unseen work is an unseen_work diagnostic;
// anything else is an uncounted_operator diagnostic. Each diagnostic makes
// the total partial (a lower bound), never a silent zero. by_precision sums
// the observations' flops_by_precision.
absl::StatusOr<FlopReport> BuildFlopReport(
    std::string torch_version, std::vector<OperatorObservation> observations,
    std::map<std::string, Count> by_module);

Json FlopReportToJson(const FlopReport& report);
absl::StatusOr<FlopReport> FlopReportFromJson(
    const Json& node, absl::string_view field = "flop_report");

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_FLOP_REPORT_H_
