#include "report/metric_result.h"

#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "report/json_reader.h"

namespace torchscan::report {

absl::string_view MetricStatusName(MetricStatus status) {
  switch (status) {
    case MetricStatus::kComplete:
      return "complete";
    case MetricStatus::kPartial:
      return "partial";
    case MetricStatus::kUnavailable:
      return "unavailable";
  }
  return "unavailable";
}

absl::StatusOr<MetricStatus> ParseMetricStatus(absl::string_view name) {
  if (name == "complete") return MetricStatus::kComplete;
  if (name == "partial") return MetricStatus::kPartial;
  if (name == "unavailable") return MetricStatus::kUnavailable;
  return absl::InvalidArgumentError(absl::StrCat(
      "status must be 'complete', 'partial', or 'unavailable', got '", name,
      "'"));
}

bool MetricValuesEqual(const MetricValue& a, const MetricValue& b) {
  if (std::holds_alternative<std::string>(a) ||
      std::holds_alternative<std::string>(b)) {
    return a == b;
  }
  if (std::holds_alternative<Count>(a) && std::holds_alternative<Count>(b)) {
    return std::get<Count>(a) == std::get<Count>(b);
  }
  auto as_double = [](const MetricValue& v) {
    return std::holds_alternative<Count>(v)
               ? static_cast<double>(std::get<Count>(v))
               : std::get<double>(v);
  };
  // An int equals a float only when the float is that exact integer.
  if (std::holds_alternative<Count>(a) != std::holds_alternative<Count>(b)) {
    const Count integer = std::holds_alternative<Count>(a) ? std::get<Count>(a)
                                                           : std::get<Count>(b);
    const double real = std::holds_alternative<double>(a) ? std::get<double>(a)
                                                          : std::get<double>(b);
    return std::floor(real) == real && std::fabs(real) < 1.7e38 &&
           Count(real) == integer;
  }
  return as_double(a) == as_double(b);
}

Json JsonCodec<MetricValue>::Write(const MetricValue& value) {
  if (const Count* count = std::get_if<Count>(&value))
    return CountToJson(*count);
  if (const double* real = std::get_if<double>(&value)) return *real;
  return std::get<std::string>(value);
}

absl::StatusOr<MetricValue> JsonCodec<MetricValue>::Read(
    const JsonValue& node) {
  if (IsJsonInteger(node.node())) {
    TS_ASSIGN_OR_RETURN(Count count, node.Integer());
    return MetricValue(count);
  }
  if (node.node().is_number_float()) {
    const double number = node.node().get<double>();
    if (!std::isfinite(number)) return node.Error("is not finite");
    return MetricValue(number);
  }
  if (node.node().is_string()) {
    return MetricValue(node.node().get<std::string>());
  }
  return node.Expected("a number or null");
}

absl::StatusOr<std::string> MetricStringCodec::Read(const JsonValue& node) {
  if (!node.node().is_string()) {
    return node.Error(
        absl::StrCat("expected a string, got ", node.node().type_name()));
  }
  return node.node().get<std::string>();
}

absl::StatusOr<MetricStatus> MetricStatusCodec::Read(const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(std::string name, MetricStringCodec::Read(node));
  absl::StatusOr<MetricStatus> status = ParseMetricStatus(name);
  if (!status.ok()) return node.Error(status.status().message());
  return *status;
}

MetricResult::MetricResult(MetricStatus status,
                           std::optional<MetricValue> known_value,
                           MetricKind kind)
    : status_(status),
      known_value_(std::move(known_value)),
      kind_(std::move(kind)) {
  if (status_ == MetricStatus::kComplete) value_ = known_value_;
}

MetricResult MetricResult::Complete(MetricValue value, MetricKind kind) {
  return MetricResult(MetricStatus::kComplete, std::move(value),
                      std::move(kind));
}

MetricResult MetricResult::Partial(MetricValue known_value, MetricKind kind) {
  return MetricResult(MetricStatus::kPartial, std::move(known_value),
                      std::move(kind));
}

MetricResult MetricResult::Unavailable(MetricKind kind) {
  return MetricResult(MetricStatus::kUnavailable, std::nullopt,
                      std::move(kind));
}

bool MetricResult::operator==(const MetricResult& other) const {
  auto same = [](const std::optional<MetricValue>& a,
                 const std::optional<MetricValue>& b) {
    if (a.has_value() != b.has_value()) return false;
    return !a.has_value() || MetricValuesEqual(*a, *b);
  };
  return status_ == other.status_ && same(value_, other.value_) &&
         same(known_value_, other.known_value_) && kind_ == other.kind_;
}

absl::Status MetricResult::Validate(absl::string_view path) {
  switch (status_) {
    case MetricStatus::kComplete:
      if (!value_.has_value()) {
        return FieldError(path, "a complete metric requires a value");
      }
      if (known_value_.has_value() &&
          !MetricValuesEqual(*known_value_, *value_)) {
        return FieldError(
            path, "a complete metric must have known_value equal to value");
      }
      known_value_ = value_;
      return absl::OkStatus();
    case MetricStatus::kPartial:
      if (value_.has_value()) {
        return FieldError(path, "a partial metric must have a null value");
      }
      if (!known_value_.has_value()) {
        return FieldError(
            path, "a partial metric requires a known_value lower bound");
      }
      return absl::OkStatus();
    case MetricStatus::kUnavailable:
      if (value_.has_value() || known_value_.has_value()) {
        return FieldError(
            path, "an unavailable metric must have null value and known_value");
      }
      return absl::OkStatus();
  }
  return FieldError(path, "unknown status");
}

}  // namespace torchscan::report
