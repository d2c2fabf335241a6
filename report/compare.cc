#include "report/compare.h"

#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "report/json_fields.h"
#include "report/python_json.h"
#include "report/python_text.h"

namespace torchscan::report {
namespace {

using LayerKey = std::pair<std::string, std::int64_t>;

absl::Status CheckVersions(Count before, Count after) {
  if (before != after) {
    return absl::InvalidArgumentError(
        absl::StrCat("schema versions differ: ", CountToString(before),
                     " != ", CountToString(after)));
  }
  if (before != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported schema version: ", CountToString(before)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<LayerKey, const ComparableLayer*>> IndexLayers(
    const ComparableReport& report, absl::string_view name) {
  std::map<LayerKey, const ComparableLayer*> calls;
  for (const ComparableLayer& layer : report.layers) {
    if (!calls.emplace(LayerKey(layer.path, layer.call_index), &layer).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, " contains duplicate layer call (",
          PythonStringRepr(layer.path), ", ", layer.call_index, ")"));
    }
  }
  return calls;
}

absl::string_view PythonTypeName(const MetricValue& value) {
  if (std::holds_alternative<Count>(value)) return "int";
  if (std::holds_alternative<double>(value)) return "float";
  return "str";
}

double AsDouble(const MetricValue& value) {
  if (const Count* count = std::get_if<Count>(&value)) {
    return CountToDouble(*count);
  }
  return std::get<double>(value);
}

// after - before with Python's arithmetic: exact for two ints, float
// otherwise, TypeError text for strings.
absl::StatusOr<MetricValue> Subtract(const MetricValue& after,
                                     const MetricValue& before,
                                     absl::string_view name) {
  if (std::holds_alternative<std::string>(after) ||
      std::holds_alternative<std::string>(before)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unsupported operand type(s) for -: '", PythonTypeName(after),
        "' and '", PythonTypeName(before), "'"));
  }
  const Count* a = std::get_if<Count>(&after);
  const Count* b = std::get_if<Count>(&before);
  if (a != nullptr && b != nullptr) {
    std::optional<Count> delta = CheckedSubtract(*a, *b);
    if (!delta) {
      return absl::OutOfRangeError(
          absl::StrCat("metric ", PythonStringRepr(name),
                       " delta overflows a 128-bit integer"));
    }
    return MetricValue(*delta);
  }
  return MetricValue(AsDouble(after) - AsDouble(before));
}

absl::StatusOr<MetricDiff> DiffMetric(const MetricResult* before,
                                      const MetricResult* after,
                                      absl::string_view name) {
  MetricDiff diff;
  if (before == nullptr || after == nullptr ||
      before->status() == MetricStatus::kUnavailable ||
      after->status() == MetricStatus::kUnavailable) {
    diff.status = MetricStatus::kUnavailable;
  } else if (before->status() == MetricStatus::kPartial ||
             after->status() == MetricStatus::kPartial) {
    diff.status = MetricStatus::kPartial;
  } else {
    diff.status = MetricStatus::kComplete;
    absl::StatusOr<MetricValue> delta =
        Subtract(*after->value(), *before->value(), name);
    if (!delta.ok()) return delta.status();
    diff.delta = *std::move(delta);
  }
  if (before != nullptr) diff.before = *before;
  if (after != nullptr) diff.after = *after;
  return diff;
}

absl::StatusOr<std::map<std::string, MetricDiff>> DiffMetrics(
    const MetricMap& before, const MetricMap& after, bool changed_only) {
  std::set<std::string> names;
  for (const auto& [name, result] : before) names.insert(name);
  for (const auto& [name, result] : after) names.insert(name);
  std::map<std::string, MetricDiff> diffs;
  for (const std::string& name : names) {
    const MetricResult* before_metric = before.Find(name);
    const MetricResult* after_metric = after.Find(name);
    if (changed_only && before_metric != nullptr && after_metric != nullptr &&
        *before_metric == *after_metric) {
      continue;
    }
    if (before_metric != nullptr && after_metric != nullptr) {
      for (auto [field, left, right] :
           {std::tuple{"unit", &before_metric->unit(), &after_metric->unit()},
            std::tuple{"scope", &before_metric->scope(),
                       &after_metric->scope()},
            std::tuple{"method", &before_metric->method(),
                       &after_metric->method()}}) {
        if (*left != *right) {
          return absl::InvalidArgumentError(absl::StrCat(
              "metric ", PythonStringRepr(name), " has incompatible ", field));
        }
      }
    }
    absl::StatusOr<MetricDiff> diff =
        DiffMetric(before_metric, after_metric, name);
    if (!diff.ok()) return diff.status();
    diffs.emplace(name, *std::move(diff));
  }
  return diffs;
}

LayerSnapshot Snapshot(const ComparableLayer& layer) {
  return LayerSnapshot{layer.path, layer.call_index, layer.metrics};
}

absl::StatusOr<Count> VersionOf(const Json& report, absl::string_view field) {
  absl::StatusOr<const Json*> version =
      RequireMember(report, "schema_version", field);
  if (!version.ok()) return version.status();
  const std::string path = MemberPath(field, "schema_version");
  if (!IsJsonInteger(**version)) {
    return FieldError(path, absl::StrCat("expected an integer, got ",
                                         DescribeJson(**version)));
  }
  return JsonToCount(**version, path);
}

}  // namespace

ComparableReport ComparableView(const AnalysisReport& report) {
  ComparableReport view;
  view.schema_version = report.schema_version;
  view.totals = report.totals;
  for (const LayerReport& layer : report.layers) {
    view.layers.push_back(
        ComparableLayer{layer.path, layer.call_index, layer.metrics});
  }
  return view;
}

absl::StatusOr<ComparableReport> ComparableReportFromJson(
    const Json& node, absl::string_view field) {
  ComparableReport report;
  absl::StatusOr<Count> version = VersionOf(node, field);
  if (!version.ok()) return version.status();
  report.schema_version = *version;

  absl::StatusOr<const Json*> totals = RequireMember(node, "totals", field);
  if (!totals.ok()) return totals.status();
  absl::StatusOr<MetricMap> total_metrics =
      MetricMapFromJson(**totals, MemberPath(field, "totals"));
  if (!total_metrics.ok()) return total_metrics.status();
  report.totals = *std::move(total_metrics);

  absl::StatusOr<const Json*> layers = RequireMember(node, "layers", field);
  if (!layers.ok()) return layers.status();
  const std::string layers_path = MemberPath(field, "layers");
  if (absl::Status status = ExpectArray(**layers, layers_path); !status.ok()) {
    return status;
  }
  for (std::size_t i = 0; i < (*layers)->size(); ++i) {
    const Json& entry = (**layers)[i];
    const std::string path = IndexPath(layers_path, i);
    ComparableLayer layer;
    absl::StatusOr<std::string> layer_path = RequireString(entry, "path", path);
    if (!layer_path.ok()) return layer_path.status();
    layer.path = *std::move(layer_path);
    absl::StatusOr<std::int64_t> call_index =
        RequireIndex(entry, "call_index", path);
    if (!call_index.ok()) return call_index.status();
    layer.call_index = *call_index;
    absl::StatusOr<const Json*> metrics = RequireMember(entry, "metrics", path);
    if (!metrics.ok()) return metrics.status();
    absl::StatusOr<MetricMap> metric_values =
        MetricMapFromJson(**metrics, MemberPath(path, "metrics"));
    if (!metric_values.ok()) return metric_values.status();
    layer.metrics = *std::move(metric_values);
    report.layers.push_back(std::move(layer));
  }
  return report;
}

absl::StatusOr<ReportDiff> CompareReports(const ComparableReport& before,
                                          const ComparableReport& after) {
  if (absl::Status status =
          CheckVersions(before.schema_version, after.schema_version);
      !status.ok()) {
    return status;
  }
  absl::StatusOr<std::map<LayerKey, const ComparableLayer*>> before_layers =
      IndexLayers(before, "before");
  if (!before_layers.ok()) return before_layers.status();
  absl::StatusOr<std::map<LayerKey, const ComparableLayer*>> after_layers =
      IndexLayers(after, "after");
  if (!after_layers.ok()) return after_layers.status();

  ReportDiff diff;
  diff.schema_version = static_cast<std::int64_t>(before.schema_version);
  for (const auto& [key, layer] : *after_layers) {
    if (!before_layers->contains(key)) diff.added.push_back(Snapshot(*layer));
  }
  for (const auto& [key, layer] : *before_layers) {
    if (!after_layers->contains(key)) diff.removed.push_back(Snapshot(*layer));
  }
  for (const auto& [key, before_layer] : *before_layers) {
    auto match = after_layers->find(key);
    if (match == after_layers->end()) continue;
    absl::StatusOr<std::map<std::string, MetricDiff>> metrics =
        DiffMetrics(before_layer->metrics, match->second->metrics,
                    /*changed_only=*/true);
    if (!metrics.ok()) return metrics.status();
    if (!metrics->empty()) {
      diff.changed.push_back(
          LayerDiff{key.first, key.second, *std::move(metrics)});
    }
  }
  absl::StatusOr<std::map<std::string, MetricDiff>> totals =
      DiffMetrics(before.totals, after.totals, /*changed_only=*/false);
  if (!totals.ok()) return totals.status();
  diff.totals = *std::move(totals);
  return diff;
}

absl::StatusOr<ReportDiff> CompareReports(const AnalysisReport& before,
                                          const AnalysisReport& after) {
  return CompareReports(ComparableView(before), ComparableView(after));
}

absl::StatusOr<Json> CompareReportsJson(const Json& before, const Json& after) {
  absl::StatusOr<Count> before_version = VersionOf(before, "before");
  if (!before_version.ok()) return before_version.status();
  absl::StatusOr<Count> after_version = VersionOf(after, "after");
  if (!after_version.ok()) return after_version.status();
  if (absl::Status status = CheckVersions(*before_version, *after_version);
      !status.ok()) {
    return status;
  }
  absl::StatusOr<ComparableReport> before_report =
      ComparableReportFromJson(before, "before");
  if (!before_report.ok()) return before_report.status();
  absl::StatusOr<ComparableReport> after_report =
      ComparableReportFromJson(after, "after");
  if (!after_report.ok()) return after_report.status();
  absl::StatusOr<ReportDiff> diff =
      CompareReports(*before_report, *after_report);
  if (!diff.ok()) return diff.status();
  return ReportDiffToJson(*diff);
}

absl::StatusOr<std::string> CompareReportsText(absl::string_view before,
                                               absl::string_view after) {
  absl::StatusOr<Json> before_json = ParseJson(before);
  if (!before_json.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("before: ", before_json.status().message()));
  }
  absl::StatusOr<Json> after_json = ParseJson(after);
  if (!after_json.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("after: ", after_json.status().message()));
  }
  absl::StatusOr<Json> diff = CompareReportsJson(*before_json, *after_json);
  if (!diff.ok()) return diff.status();
  return DumpPythonJson(*diff);
}

}  // namespace torchscan::report
