#include "report/metric_map.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "report/json_reader.h"
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

Json JsonCodec<MetricMap>::Write(const MetricMap& metrics) {
  Json node = Json::object();
  for (const auto& [name, result] : metrics) node[name] = ToJson(result);
  return node;
}

absl::StatusOr<MetricMap> JsonCodec<MetricMap>::Read(const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(JsonObject object, node.Object());
  MetricMap metrics;
  for (auto& [name, entry] : object.Members()) {
    TS_ASSIGN_OR_RETURN(MetricResult result, FromJson<MetricResult>(entry));
    TS_RETURN_IF_ERROR(ValidateMetricValue(name, result, entry.path()));
    metrics.Set(name, std::move(result));
  }
  return metrics;
}

}  // namespace torchscan::report
