#include "report/metric_map.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "report/json_fields.h"
#include "report/python_text.h"

namespace torchscan::report {
namespace {

bool IsCountUnit(absl::string_view unit) {
  return unit == "calls" || unit == "FLOPs" || unit == "MACs" ||
         unit == "DMAs" || unit == "bytes" || unit == "elements";
}

}  // namespace

const MetricResult* MetricMap::Find(absl::string_view name) const {
  for (const Entry& entry : entries_) {
    if (entry.first == name) return &entry.second;
  }
  return nullptr;
}

void MetricMap::Set(std::string name, MetricResult result) {
  for (Entry& entry : entries_) {
    if (entry.first == name) {
      entry.second = std::move(result);
      return;
    }
  }
  entries_.emplace_back(std::move(name), std::move(result));
}

bool MetricMap::operator==(const MetricMap& other) const {
  if (entries_.size() != other.entries_.size()) return false;
  return std::all_of(entries_.begin(), entries_.end(), [&](const Entry& entry) {
    const MetricResult* match = other.Find(entry.first);
    return match != nullptr && *match == entry.second;
  });
}

std::string DescribeMetricValue(const MetricValue& value) {
  if (const Count* count = std::get_if<Count>(&value)) {
    return CountToString(*count);
  }
  if (const double* real = std::get_if<double>(&value)) {
    return PythonFloatRepr(*real);
  }
  return absl::StrCat("string ",
                      PythonStringRepr(std::get<std::string>(value)));
}

absl::Status ValidateMetricValue(absl::string_view name,
                                 const MetricResult& result,
                                 absl::string_view field) {
  if (!result.known_value().has_value()) return absl::OkStatus();
  const MetricValue& value = *result.known_value();
  const std::string path =
      MemberPath(field, result.is_complete() ? "value" : "known_value");
  const bool is_string = std::holds_alternative<std::string>(value);
  if (name == kEffectivePadding) return absl::OkStatus();
  if (name == kReceptiveField || name == kEffectiveStride ||
      !IsCountUnit(result.unit())) {
    if (!is_string) return absl::OkStatus();
    return FieldError(path, absl::StrCat("expected a number, got ",
                                         DescribeMetricValue(value)));
  }
  const Count* count = std::get_if<Count>(&value);
  if (count == nullptr || *count < 0) {
    return FieldError(path,
                      absl::StrCat("a count of ", result.unit(),
                                   " must be a non-negative integer, got ",
                                   DescribeMetricValue(value)));
  }
  return absl::OkStatus();
}

Json MetricMapToJson(const MetricMap& metrics) {
  Json node = Json::object();
  for (const auto& [name, result] : metrics) {
    node[name] = MetricResultToJson(result);
  }
  return node;
}

absl::StatusOr<MetricMap> MetricMapFromJson(const Json& node,
                                            absl::string_view field) {
  if (absl::Status status = ExpectObject(node, field); !status.ok()) {
    return status;
  }
  MetricMap metrics;
  for (const auto& [name, entry] : node.items()) {
    const std::string path = MemberPath(field, name);
    absl::StatusOr<MetricResult> result = MetricResultFromJson(entry, path);
    if (!result.ok()) return result.status();
    if (absl::Status status = RejectUnknownKeys(
            entry,
            {"status", "value", "known_value", "unit", "scope", "method"},
            path);
        !status.ok()) {
      return status;
    }
    if (absl::Status status = ValidateMetricValue(name, *result, path);
        !status.ok()) {
      return status;
    }
    metrics.Set(name, *std::move(result));
  }
  return metrics;
}

}  // namespace torchscan::report
