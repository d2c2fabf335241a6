#include "report/metric_result.h"

#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace torchscan::report {
namespace {

absl::Status FieldError(absl::string_view field, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", problem));
}

absl::StatusOr<std::optional<MetricValue>> OptionalValueFromJson(
    const Json& node, absl::string_view field) {
  if (node.is_null()) return std::optional<MetricValue>();
  if (IsJsonInteger(node)) {
    absl::StatusOr<Count> count = JsonToCount(node, field);
    if (!count.ok()) return count.status();
    return std::optional<MetricValue>(*count);
  }
  if (node.is_number_float()) {
    const double number = node.get<double>();
    if (!std::isfinite(number)) return FieldError(field, "is not finite");
    return std::optional<MetricValue>(number);
  }
  if (node.is_string()) {
    return std::optional<MetricValue>(node.get<std::string>());
  }
  return FieldError(
      field, absl::StrCat("expected a number or null, got ", node.type_name()));
}

absl::StatusOr<std::string> StringField(const Json& object,
                                        absl::string_view key,
                                        absl::string_view field) {
  const std::string path = absl::StrCat(field, ".", key);
  auto it = object.find(std::string(key));
  if (it == object.end()) return FieldError(path, "is missing");
  if (!it->is_string()) {
    return FieldError(path,
                      absl::StrCat("expected a string, got ", it->type_name()));
  }
  return it->get<std::string>();
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

bool IsNumeric(const MetricValue& value) {
  return !std::holds_alternative<std::string>(value);
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
  if (!node.is_object()) {
    return FieldError(field, absl::StrCat("expected a metric object, got ",
                                          node.type_name()));
  }
  absl::StatusOr<std::string> status_name = StringField(node, "status", field);
  if (!status_name.ok()) return status_name.status();
  absl::StatusOr<MetricStatus> status = ParseMetricStatus(*status_name);
  if (!status.ok()) {
    return FieldError(absl::StrCat(field, ".status"),
                      status.status().message());
  }
  MetricKind kind;
  for (auto [key, target] :
       {std::pair{"unit", &kind.unit}, std::pair{"scope", &kind.scope},
        std::pair{"method", &kind.method}}) {
    absl::StatusOr<std::string> text = StringField(node, key, field);
    if (!text.ok()) return text.status();
    *target = *std::move(text);
  }
  auto read_optional =
      [&](const char* key) -> absl::StatusOr<std::optional<MetricValue>> {
    auto it = node.find(key);
    if (it == node.end())
      return FieldError(absl::StrCat(field, ".", key), "is missing");
    return OptionalValueFromJson(*it, absl::StrCat(field, ".", key));
  };
  absl::StatusOr<std::optional<MetricValue>> value = read_optional("value");
  if (!value.ok()) return value.status();
  absl::StatusOr<std::optional<MetricValue>> known =
      read_optional("known_value");
  if (!known.ok()) return known.status();

  switch (*status) {
    case MetricStatus::kComplete:
      if (!value->has_value()) {
        return FieldError(field, "a complete metric requires a value");
      }
      if (known->has_value() && !MetricValuesEqual(**known, **value)) {
        return FieldError(
            field, "a complete metric must have known_value equal to value");
      }
      return MetricResult::Complete(**value, std::move(kind));
    case MetricStatus::kPartial:
      if (value->has_value()) {
        return FieldError(field, "a partial metric must have a null value");
      }
      if (!known->has_value()) {
        return FieldError(
            field, "a partial metric requires a known_value lower bound");
      }
      return MetricResult::Partial(**known, std::move(kind));
    case MetricStatus::kUnavailable:
      if (value->has_value() || known->has_value()) {
        return FieldError(
            field,
            "an unavailable metric must have null value and known_value");
      }
      return MetricResult::Unavailable(std::move(kind));
  }
  return FieldError(field, "unknown status");
}

}  // namespace torchscan::report
