#include "report/compare.h"

#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "report/json_io.h"
#include "report/json_reader.h"
#include "report/python_text.h"

namespace torchscan::report {

absl::Status CheckSchemaVersions(Count before, Count after) {
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

namespace {

using LayerKey = std::pair<std::string, std::int64_t>;
using LayerIndex = std::map<LayerKey, const ComparableLayer*>;
using MetricDiffs = std::map<std::string, MetricDiff>;

absl::StatusOr<LayerIndex> IndexLayers(const ComparableReport& report,
                                       absl::string_view name) {
  LayerIndex calls;
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
    TS_ASSIGN_OR_RETURN(MetricValue delta,
                        Subtract(*after->value(), *before->value(), name));
    diff.delta = std::move(delta);
  }
  if (before != nullptr) diff.before = *before;
  if (after != nullptr) diff.after = *after;
  return diff;
}

absl::StatusOr<MetricDiffs> DiffMetrics(const MetricMap& before,
                                        const MetricMap& after,
                                        bool changed_only) {
  std::set<std::string> names;
  for (const auto& [name, result] : before) names.insert(name);
  for (const auto& [name, result] : after) names.insert(name);
  MetricDiffs diffs;
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
    TS_ASSIGN_OR_RETURN(MetricDiff diff,
                        DiffMetric(before_metric, after_metric, name));
    diffs.emplace(name, std::move(diff));
  }
  return diffs;
}

LayerSnapshot Snapshot(const ComparableLayer& layer) {
  return LayerSnapshot{layer.path, layer.call_index, layer.metrics};
}

// A report's schema_version, read before anything else so that a report of
// another schema gets the version error, not a parse error of its body.
absl::StatusOr<Count> VersionOf(const Json& report, absl::string_view field) {
  TS_ASSIGN_OR_RETURN(JsonObject object,
                      JsonValue(report, std::string(field)).Object());
  return object.Integer("schema_version");
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
  return FromJson<ComparableReport>(JsonValue(node, std::string(field)));
}

absl::StatusOr<ReportDiff> CompareReports(const ComparableReport& before,
                                          const ComparableReport& after) {
  TS_RETURN_IF_ERROR(
      CheckSchemaVersions(before.schema_version, after.schema_version));
  TS_ASSIGN_OR_RETURN(LayerIndex before_layers, IndexLayers(before, "before"));
  TS_ASSIGN_OR_RETURN(LayerIndex after_layers, IndexLayers(after, "after"));

  ReportDiff diff;
  diff.schema_version = static_cast<std::int64_t>(before.schema_version);
  for (const auto& [key, layer] : after_layers) {
    if (!before_layers.contains(key)) diff.added.push_back(Snapshot(*layer));
  }
  for (const auto& [key, layer] : before_layers) {
    if (!after_layers.contains(key)) diff.removed.push_back(Snapshot(*layer));
  }
  for (const auto& [key, before_layer] : before_layers) {
    auto match = after_layers.find(key);
    if (match == after_layers.end()) continue;
    TS_ASSIGN_OR_RETURN(
        MetricDiffs metrics,
        DiffMetrics(before_layer->metrics, match->second->metrics,
                    /*changed_only=*/true));
    if (!metrics.empty()) {
      diff.changed.push_back(
          LayerDiff{key.first, key.second, std::move(metrics)});
    }
  }
  TS_ASSIGN_OR_RETURN(
      MetricDiffs totals,
      DiffMetrics(before.totals, after.totals, /*changed_only=*/false));
  diff.totals = std::move(totals);
  return diff;
}

absl::StatusOr<ReportDiff> CompareReports(const AnalysisReport& before,
                                          const AnalysisReport& after) {
  return CompareReports(ComparableView(before), ComparableView(after));
}

absl::StatusOr<ReportDiff> CompareReportDocuments(const Json& before,
                                                  const Json& after) {
  TS_ASSIGN_OR_RETURN(Count before_version, VersionOf(before, "before"));
  TS_ASSIGN_OR_RETURN(Count after_version, VersionOf(after, "after"));
  TS_RETURN_IF_ERROR(CheckSchemaVersions(before_version, after_version));
  TS_ASSIGN_OR_RETURN(ComparableReport before_report,
                      ComparableReportFromJson(before, "before"));
  TS_ASSIGN_OR_RETURN(ComparableReport after_report,
                      ComparableReportFromJson(after, "after"));
  return CompareReports(before_report, after_report);
}

absl::StatusOr<ReportDiff> CompareReportTexts(absl::string_view before,
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
  return CompareReportDocuments(*before_json, *after_json);
}

absl::StatusOr<Json> CompareReportsJson(const Json& before, const Json& after) {
  TS_ASSIGN_OR_RETURN(ReportDiff diff, CompareReportDocuments(before, after));
  return ReportDiffToJson(diff);
}

absl::StatusOr<std::string> CompareReportsText(absl::string_view before,
                                               absl::string_view after) {
  TS_ASSIGN_OR_RETURN(ReportDiff diff, CompareReportTexts(before, after));
  return DumpPythonJson(ReportDiffToJson(diff));
}

}  // namespace torchscan::report
