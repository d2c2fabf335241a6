#include "report/report_diff.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "report/json_reader.h"

namespace torchscan::report {
namespace {

absl::StatusOr<std::optional<MetricResult>> OptionalMetric(
    const JsonObject& diff, absl::string_view key) {
  TS_ASSIGN_OR_RETURN(JsonValue side, diff.Member(key));
  if (side.is_null()) return std::optional<MetricResult>();
  TS_ASSIGN_OR_RETURN(MetricResult result, FromJson<MetricResult>(side));
  return std::optional<MetricResult>(std::move(result));
}

absl::StatusOr<std::map<std::string, MetricDiff>> DiffMapFromJson(
    const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(JsonObject object, node.Object());
  std::map<std::string, MetricDiff> diffs;
  for (auto& [name, entry] : object.Members()) {
    TS_ASSIGN_OR_RETURN(MetricDiff diff,
                        MetricDiffFromJson(entry.node(), entry.path()));
    // Check the sides against the rules for this metric's name.
    for (auto [key, side] :
         {std::pair{"before", &diff.before}, std::pair{"after", &diff.after}}) {
      if (!side->has_value()) continue;
      TS_RETURN_IF_ERROR(
          ValidateMetricValue(name, **side, MemberPath(entry.path(), key)));
    }
    diffs.emplace(name, std::move(diff));
  }
  return diffs;
}

// The shape both layer lists of a diff share: an object of exactly `path`,
// `call_index` and `metrics`. Reads the first two into `path` and
// `call_index` and returns the `metrics` member for the caller to parse.
absl::StatusOr<JsonValue> ReadLayerKey(const JsonValue& node, std::string& path,
                                       std::int64_t& call_index) {
  TS_ASSIGN_OR_RETURN(JsonObject object, node.Object());
  TS_RETURN_IF_ERROR(
      object.RejectUnknownKeys({"path", "call_index", "metrics"}));
  TS_ASSIGN_OR_RETURN(path, object.String("path"));
  TS_ASSIGN_OR_RETURN(call_index, object.Index("call_index"));
  return object.Member("metrics");
}

absl::StatusOr<std::vector<LayerSnapshot>> SnapshotsFromJson(
    const JsonObject& layers, absl::string_view key) {
  TS_ASSIGN_OR_RETURN(JsonArray list, layers.Array(key));
  std::vector<LayerSnapshot> snapshots;
  for (std::size_t i = 0; i < list.size(); ++i) {
    LayerSnapshot snapshot;
    TS_ASSIGN_OR_RETURN(
        JsonValue metrics,
        ReadLayerKey(list.Item(i), snapshot.path, snapshot.call_index));
    TS_ASSIGN_OR_RETURN(snapshot.metrics, FromJson<MetricMap>(metrics));
    snapshots.push_back(std::move(snapshot));
  }
  return snapshots;
}

absl::StatusOr<std::vector<LayerDiff>> LayerDiffsFromJson(
    const JsonObject& layers) {
  TS_ASSIGN_OR_RETURN(JsonArray list, layers.Array("changed"));
  std::vector<LayerDiff> changed;
  for (std::size_t i = 0; i < list.size(); ++i) {
    LayerDiff layer;
    TS_ASSIGN_OR_RETURN(
        JsonValue metrics,
        ReadLayerKey(list.Item(i), layer.path, layer.call_index));
    TS_ASSIGN_OR_RETURN(layer.metrics, DiffMapFromJson(metrics));
    changed.push_back(std::move(layer));
  }
  return changed;
}

MetricStatus ExpectedStatus(const MetricDiff& diff) {
  if (!diff.before || !diff.after) return MetricStatus::kUnavailable;
  const MetricStatus before = diff.before->status();
  const MetricStatus after = diff.after->status();
  if (before == MetricStatus::kUnavailable ||
      after == MetricStatus::kUnavailable) {
    return MetricStatus::kUnavailable;
  }
  if (before == MetricStatus::kPartial || after == MetricStatus::kPartial) {
    return MetricStatus::kPartial;
  }
  return MetricStatus::kComplete;
}

}  // namespace

Json MetricDiffToJson(const MetricDiff& diff) {
  Json node = Json::object();
  node["status"] = std::string(MetricStatusName(diff.status));
  node["delta"] = ToJson(diff.delta);
  node["before"] = ToJson(diff.before);
  node["after"] = ToJson(diff.after);
  return node;
}

absl::StatusOr<MetricDiff> MetricDiffFromJson(const Json& node,
                                              absl::string_view field) {
  TS_ASSIGN_OR_RETURN(JsonObject object,
                      JsonValue(node, std::string(field)).Object());
  TS_RETURN_IF_ERROR(
      object.RejectUnknownKeys({"status", "delta", "before", "after"}));
  MetricDiff diff;
  TS_ASSIGN_OR_RETURN(std::string status_name, object.String("status"));
  absl::StatusOr<MetricStatus> status = ParseMetricStatus(status_name);
  if (!status.ok()) {
    return FieldError(object.PathOf("status"), status.status().message());
  }
  diff.status = *status;
  // The sides are checked as generic metrics here; DiffMapFromJson applies
  // the rules of the metric's name.
  TS_ASSIGN_OR_RETURN(diff.before, OptionalMetric(object, "before"));
  TS_ASSIGN_OR_RETURN(diff.after, OptionalMetric(object, "after"));
  TS_ASSIGN_OR_RETURN(JsonValue delta, object.Member("delta"));
  if (IsJsonInteger(delta.node())) {
    TS_ASSIGN_OR_RETURN(diff.delta, delta.Integer());
  } else if (delta.node().is_number_float()) {
    const double value = delta.node().get<double>();
    if (!std::isfinite(value)) return delta.Error("is not finite");
    diff.delta = value;
  } else if (!delta.is_null()) {
    return delta.Error(absl::StrCat("expected a number or null, got ",
                                    DescribeJson(delta.node())));
  }
  if (diff.status != ExpectedStatus(diff)) {
    return FieldError(
        object.PathOf("status"),
        absl::StrCat("is '", MetricStatusName(diff.status),
                     "' but the sides make it '",
                     MetricStatusName(ExpectedStatus(diff)), "'"));
  }
  if (diff.delta.has_value() != (diff.status == MetricStatus::kComplete)) {
    return delta.Error(diff.delta ? "must be null unless complete"
                                  : "is required when complete");
  }
  return diff;
}

Json ReportDiffToJson(const ReportDiff& diff) {
  Json node = Json::object();
  node["schema_version"] = diff.schema_version;
  node["totals"] = Json::object();
  for (const auto& [name, metric] : diff.totals) {
    node["totals"][name] = MetricDiffToJson(metric);
  }
  Json layers = Json::object();
  for (auto [key, snapshots] :
       {std::pair{"added", &diff.added}, std::pair{"removed", &diff.removed}}) {
    layers[key] = Json::array();
    for (const LayerSnapshot& snapshot : *snapshots) {
      Json entry = Json::object();
      entry["path"] = snapshot.path;
      entry["call_index"] = snapshot.call_index;
      entry["metrics"] = ToJson(snapshot.metrics);
      layers[key].push_back(std::move(entry));
    }
  }
  layers["changed"] = Json::array();
  for (const LayerDiff& layer : diff.changed) {
    Json entry = Json::object();
    entry["path"] = layer.path;
    entry["call_index"] = layer.call_index;
    entry["metrics"] = Json::object();
    for (const auto& [name, metric] : layer.metrics) {
      entry["metrics"][name] = MetricDiffToJson(metric);
    }
    layers["changed"].push_back(std::move(entry));
  }
  node["layers"] = std::move(layers);
  return node;
}

absl::StatusOr<ReportDiff> ReportDiffFromJson(const Json& node,
                                              absl::string_view field) {
  TS_ASSIGN_OR_RETURN(JsonObject object,
                      JsonValue(node, std::string(field)).Object());
  TS_RETURN_IF_ERROR(
      object.RejectUnknownKeys({"schema_version", "totals", "layers"}));
  ReportDiff diff;
  TS_ASSIGN_OR_RETURN(diff.schema_version, object.Index("schema_version"));
  TS_ASSIGN_OR_RETURN(JsonValue totals, object.Member("totals"));
  TS_ASSIGN_OR_RETURN(diff.totals, DiffMapFromJson(totals));
  TS_ASSIGN_OR_RETURN(JsonValue layers_node, object.Member("layers"));
  TS_ASSIGN_OR_RETURN(JsonObject layers, layers_node.Object());
  TS_RETURN_IF_ERROR(layers.RejectUnknownKeys({"added", "removed", "changed"}));
  TS_ASSIGN_OR_RETURN(diff.added, SnapshotsFromJson(layers, "added"));
  TS_ASSIGN_OR_RETURN(diff.removed, SnapshotsFromJson(layers, "removed"));
  TS_ASSIGN_OR_RETURN(diff.changed, LayerDiffsFromJson(layers));
  return diff;
}

}  // namespace torchscan::report
