#include "report/metric_result.h"

#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "report/json_reader.h"

namespace torchscan::report {
namespace {

absl::StatusOr<std::optional<MetricValue>> OptionalValueFromJson(
    const JsonValue& node) {
  if (node.is_null()) return std::optional<MetricValue>();
  if (IsJsonInteger(node.node())) {
    TS_ASSIGN_OR_RETURN(Count count, node.Integer());
    return std::optional<MetricValue>(count);
  }
  if (node.node().is_number_float()) {
    const double number = node.node().get<double>();
    if (!std::isfinite(number)) return node.Error("is not finite");
    return std::optional<MetricValue>(number);
  }
  if (node.node().is_string()) {
    return std::optional<MetricValue>(node.node().get<std::string>());
  }
  return node.Expected("a number or null");
}

// A metric's status, unit, scope or method. NOTE: these name a wrong JSON
// type as nlohmann does ("got number" for 3 where JsonValue::String says
// "got integer"): a wording report/analysis_report_test.cc pins.
absl::StatusOr<std::string> MetricString(const JsonObject& metric,
                                         absl::string_view key) {
  TS_ASSIGN_OR_RETURN(JsonValue value, metric.Member(key));
  if (!value.node().is_string()) {
    return value.Error(
        absl::StrCat("expected a string, got ", value.node().type_name()));
  }
  return value.node().get<std::string>();
}

}  // namespace

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

Json MetricValueToJson(const MetricValue& value) {
  if (const Count* count = std::get_if<Count>(&value))
    return CountToJson(*count);
  if (const double* real = std::get_if<double>(&value)) return *real;
  return std::get<std::string>(value);
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

Json MetricResultToJson(const MetricResult& result) {
  Json node = Json::object();
  node["status"] = std::string(MetricStatusName(result.status()));
  node["value"] = result.value() ? MetricValueToJson(*result.value()) : Json();
  node["known_value"] =
      result.known_value() ? MetricValueToJson(*result.known_value()) : Json();
  node["unit"] = result.unit();
  node["scope"] = result.scope();
  node["method"] = result.method();
  return node;
}

absl::StatusOr<MetricResult> MetricResultFromJson(const Json& node,
                                                  absl::string_view field) {
  TS_ASSIGN_OR_RETURN(JsonObject metric,
                      JsonValue(node, std::string(field)).Object());
  TS_ASSIGN_OR_RETURN(std::string status_name, MetricString(metric, "status"));
  absl::StatusOr<MetricStatus> status = ParseMetricStatus(status_name);
  if (!status.ok()) {
    return FieldError(metric.PathOf("status"), status.status().message());
  }
  MetricKind kind;
  TS_ASSIGN_OR_RETURN(kind.unit, MetricString(metric, "unit"));
  TS_ASSIGN_OR_RETURN(kind.scope, MetricString(metric, "scope"));
  TS_ASSIGN_OR_RETURN(kind.method, MetricString(metric, "method"));
  TS_ASSIGN_OR_RETURN(JsonValue value_node, metric.Member("value"));
  TS_ASSIGN_OR_RETURN(std::optional<MetricValue> value,
                      OptionalValueFromJson(value_node));
  TS_ASSIGN_OR_RETURN(JsonValue known_node, metric.Member("known_value"));
  TS_ASSIGN_OR_RETURN(std::optional<MetricValue> known,
                      OptionalValueFromJson(known_node));

  switch (*status) {
    case MetricStatus::kComplete:
      if (!value.has_value()) {
        return metric.Error("a complete metric requires a value");
      }
      if (known.has_value() && !MetricValuesEqual(*known, *value)) {
        return metric.Error(
            "a complete metric must have known_value equal to value");
      }
      return MetricResult::Complete(*value, std::move(kind));
    case MetricStatus::kPartial:
      if (value.has_value()) {
        return metric.Error("a partial metric must have a null value");
      }
      if (!known.has_value()) {
        return metric.Error(
            "a partial metric requires a known_value lower bound");
      }
      return MetricResult::Partial(*known, std::move(kind));
    case MetricStatus::kUnavailable:
      if (value.has_value() || known.has_value()) {
        return metric.Error(
            "an unavailable metric must have null value and known_value");
      }
      return MetricResult::Unavailable(std::move(kind));
  }
  return metric.Error("unknown status");
}

}  // namespace torchscan::report
