// MetricResult: one number with the truth about it.
//
// The status rules hold by construction (the constructor is private):
//   complete     value set, known_value == value
//   partial      value null, known_value is a lower bound
//   unavailable  both null
// so a zero can only ever be reported as a complete zero.
//
// Its JSON form, {"status", "value", "known_value", "unit", "scope",
// "method"} in that order, is declared by the field tables below
// (field_table.h): report::ToJson(result) writes it and
// report::FromJson<MetricResult>(node) reads it, refusing unknown keys and a
// document that breaks the rules, with the metric's path.

#ifndef TORCHSCAN_REPORT_METRIC_RESULT_H_
#define TORCHSCAN_REPORT_METRIC_RESULT_H_

#include <optional>
#include <string>
#include <variant>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/count.h"
#include "report/field_table.h"
#include "report/json_io.h"
#include "report/json_reader.h"

namespace torchscan::report {

enum class MetricStatus { kComplete, kPartial, kUnavailable };

absl::string_view MetricStatusName(MetricStatus status);
absl::StatusOr<MetricStatus> ParseMetricStatus(absl::string_view name);

// Integers are exact. Receptive-field values are floats in TorchScan 0.2, and
// its reports may carry a string padding ("same"), which is read back as is.
using MetricValue = std::variant<Count, double, std::string>;

// Numeric equality across kinds (1 == 1.0), as Python compares.
bool MetricValuesEqual(const MetricValue& a, const MetricValue& b);

// A value keeps its JSON kind: 1 stays 1, 1.0 stays 1.0. Reading refuses a
// non-finite number ("is not finite") and anything but a number or a string
// ("expected a number or null, got boolean"; null is the nullopt of the
// value fields around it).
template <>
struct JsonCodec<MetricValue> {
  static Json Write(const MetricValue& value);
  static absl::StatusOr<MetricValue> Read(const JsonValue& node);
};

// A metric's status, unit, scope or method. NOTE [Metric strings]: a wrong
// JSON type is named as nlohmann names it ("expected a string, got number"
// for 3, where JsonValue::String says "got integer"): a wording
// report/analysis_report_test.cc pins.
struct MetricStringCodec {
  static Json Write(const std::string& text) { return text; }
  static absl::StatusOr<std::string> Read(const JsonValue& node);
};

// "complete", "partial", "unavailable"; any other word is "status must be
// 'complete', 'partial', or 'unavailable', got 'done'".
struct MetricStatusCodec {
  static Json Write(MetricStatus status) {
    return std::string(MetricStatusName(status));
  }
  static absl::StatusOr<MetricStatus> Read(const JsonValue& node);
};

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
  static constexpr auto kFields = std::make_tuple(
      FieldAs<MetricStringCodec>("unit", &MetricKind::unit),
      FieldAs<MetricStringCodec>("scope", &MetricKind::scope),
      FieldAs<MetricStringCodec>("method", &MetricKind::method));
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

  // After reading (field_table.h): the status rules, with the metric's
  // `path` ("totals.macs: a partial metric must have a null value"). A
  // complete metric's known_value becomes its value, so one read with
  // known_value null is written back with known_value = value.
  absl::Status Validate(absl::string_view path);

 private:
  // Reading starts from an unavailable metric of no kind.
  friend struct JsonCodec<MetricResult>;
  MetricResult() = default;
  MetricResult(MetricStatus status, std::optional<MetricValue> known_value,
               MetricKind kind);

  MetricStatus status_ = MetricStatus::kUnavailable;
  std::optional<MetricValue> value_;
  std::optional<MetricValue> known_value_;
  MetricKind kind_;

 public:
  // After the members it names (a static member's initializer sees only
  // what is declared above it). value and known_value are nullable.
  static constexpr auto kFields = std::make_tuple(
      FieldAs<MetricStatusCodec>("status", &MetricResult::status_),
      Field("value", &MetricResult::value_),
      Field("known_value", &MetricResult::known_value_),
      FieldsOf(&MetricResult::kind_));
};

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_METRIC_RESULT_H_
