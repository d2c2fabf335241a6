// MetricResult: one number with the truth about it.
//
// The status rules hold by construction (the constructor is private):
//   complete     value set, known_value == value
//   partial      value null, known_value is a lower bound
//   unavailable  both null
// so a zero can only ever be reported as a complete zero.

#ifndef TORCHSCAN_REPORT_METRIC_RESULT_H_
#define TORCHSCAN_REPORT_METRIC_RESULT_H_

#include <optional>
#include <string>
#include <variant>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/count.h"
#include "report/json_io.h"

namespace torchscan::report {

enum class MetricStatus { kComplete, kPartial, kUnavailable };

absl::string_view MetricStatusName(MetricStatus status);
absl::StatusOr<MetricStatus> ParseMetricStatus(absl::string_view name);

// Integers are exact. Receptive-field values are floats in TorchScan 0.2, and
// its reports may carry a string padding ("same"), which is read back as is.
using MetricValue = std::variant<Count, double, std::string>;

// Numeric equality across kinds (1 == 1.0), as Python compares.
bool MetricValuesEqual(const MetricValue& a, const MetricValue& b);
Json MetricValueToJson(const MetricValue& value);

// The scope of a metric of one call of one module (a layer record's
// metrics, a layer call's operator FLOPs).
inline constexpr absl::string_view kModuleCallScope = "module_call";
// The methods of layer metrics: TorchScan's module formulas, and the forward
// hooks that count a layer's `calls`.
inline constexpr absl::string_view kModuleFormulaMethod =
    "torchscan_module_formula";
inline constexpr absl::string_view kModuleHookMethod = "pytorch_hook";

// What a metric measures: its unit, the scope it covers and the method used.
struct MetricKind {
  std::string unit;
  std::string scope;
  std::string method;

  bool operator==(const MetricKind&) const = default;
};

class MetricResult {
 public:
  static MetricResult Complete(MetricValue value, MetricKind kind);
  static MetricResult Partial(MetricValue known_value, MetricKind kind);
  static MetricResult Unavailable(MetricKind kind);

  MetricStatus status() const { return status_; }
  bool is_complete() const { return status_ == MetricStatus::kComplete; }
  // Set only when complete.
  const std::optional<MetricValue>& value() const { return value_; }
  // Set when complete or partial.
  const std::optional<MetricValue>& known_value() const { return known_value_; }
  const MetricKind& kind() const { return kind_; }
  const std::string& unit() const { return kind_.unit; }
  const std::string& scope() const { return kind_.scope; }
  const std::string& method() const { return kind_.method; }

  // Deep equality with numeric comparison across int and float.
  bool operator==(const MetricResult& other) const;

 private:
  MetricResult(MetricStatus status, std::optional<MetricValue> known_value,
               MetricKind kind);

  MetricStatus status_;
  std::optional<MetricValue> value_;
  std::optional<MetricValue> known_value_;
  MetricKind kind_;
};

Json MetricResultToJson(const MetricResult& result);
// `field` names the metric in error messages (e.g. "totals.macs").
absl::StatusOr<MetricResult> MetricResultFromJson(const Json& node,
                                                  absl::string_view field);

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_METRIC_RESULT_H_
