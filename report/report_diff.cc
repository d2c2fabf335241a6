#include "report/report_diff.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "report/json_fields.h"

namespace torchscan::report {
namespace {

absl::StatusOr<std::optional<MetricResult>> OptionalMetric(
    const Json& node, absl::string_view key, absl::string_view field) {
  absl::StatusOr<const Json*> member = RequireMember(node, key, field);
  if (!member.ok()) return member.status();
  if ((*member)->is_null()) return std::optional<MetricResult>();
  const std::string path = MemberPath(field, key);
  absl::StatusOr<MetricResult> result = MetricResultFromJson(**member, path);
  if (!result.ok()) return result.status();
  if (absl::Status status = RejectUnknownKeys(
          **member,
          {"status", "value", "known_value", "unit", "scope", "method"}, path);
      !status.ok()) {
    return status;
  }
  return std::optional<MetricResult>(*std::move(result));
}

absl::StatusOr<std::map<std::string, MetricDiff>> DiffMapFromJson(
    const Json& node, absl::string_view field) {
  if (absl::Status status = ExpectObject(node, field); !status.ok()) {
    return status;
  }
  std::map<std::string, MetricDiff> diffs;
  for (const auto& [name, entry] : node.items()) {
    const std::string path = MemberPath(field, name);
    absl::StatusOr<MetricDiff> diff = MetricDiffFromJson(entry, path);
    if (!diff.ok()) return diff.status();
    // Check the sides against the rules for this metric's name.
    for (auto [key, side] : {std::pair{"before", &diff->before},
                             std::pair{"after", &diff->after}}) {
      if (!side->has_value()) continue;
      if (absl::Status status =
              ValidateMetricValue(name, **side, MemberPath(path, key));
          !status.ok()) {
        return status;
      }
    }
    diffs.emplace(name, *std::move(diff));
  }
  return diffs;
}

// The shape both layer lists of a diff share: an object of exactly `path`,
// `call_index` and `metrics`. Reads the first two into `path` and
// `call_index` and returns the `metrics` member for the caller to parse.
absl::StatusOr<const Json*> ReadLayerKey(const Json& node,
                                         absl::string_view field,
                                         std::string& path,
                                         std::int64_t& call_index) {
  if (absl::Status status = ExpectObject(node, field); !status.ok()) {
    return status;
  }
  if (absl::Status status =
          RejectUnknownKeys(node, {"path", "call_index", "metrics"}, field);
      !status.ok()) {
    return status;
  }
  absl::StatusOr<std::string> path_value = RequireString(node, "path", field);
  if (!path_value.ok()) return path_value.status();
  path = *std::move(path_value);
  absl::StatusOr<std::int64_t> index = RequireIndex(node, "call_index", field);
  if (!index.ok()) return index.status();
  call_index = *index;
  return RequireMember(node, "metrics", field);
}

absl::StatusOr<LayerSnapshot> SnapshotFromJson(const Json& node,
                                               absl::string_view field) {
  LayerSnapshot snapshot;
  absl::StatusOr<const Json*> metrics =
      ReadLayerKey(node, field, snapshot.path, snapshot.call_index);
  if (!metrics.ok()) return metrics.status();
  absl::StatusOr<MetricMap> values =
      MetricMapFromJson(**metrics, MemberPath(field, "metrics"));
  if (!values.ok()) return values.status();
  snapshot.metrics = *std::move(values);
  return snapshot;
}

absl::StatusOr<std::vector<LayerSnapshot>> SnapshotsFromJson(
    const Json& node, absl::string_view field) {
  if (absl::Status status = ExpectArray(node, field); !status.ok()) {
    return status;
  }
  std::vector<LayerSnapshot> snapshots;
  for (std::size_t i = 0; i < node.size(); ++i) {
    absl::StatusOr<LayerSnapshot> snapshot =
        SnapshotFromJson(node[i], IndexPath(field, i));
    if (!snapshot.ok()) return snapshot.status();
    snapshots.push_back(*std::move(snapshot));
  }
  return snapshots;
}

absl::StatusOr<LayerDiff> LayerDiffFromJson(const Json& node,
                                            absl::string_view field) {
  LayerDiff layer;
  absl::StatusOr<const Json*> metrics =
      ReadLayerKey(node, field, layer.path, layer.call_index);
  if (!metrics.ok()) return metrics.status();
  absl::StatusOr<std::map<std::string, MetricDiff>> diffs =
      DiffMapFromJson(**metrics, MemberPath(field, "metrics"));
  if (!diffs.ok()) return diffs.status();
  layer.metrics = *std::move(diffs);
  return layer;
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
  node["delta"] = diff.delta ? MetricValueToJson(*diff.delta) : Json();
  node["before"] = diff.before ? MetricResultToJson(*diff.before) : Json();
  node["after"] = diff.after ? MetricResultToJson(*diff.after) : Json();
  return node;
}

absl::StatusOr<MetricDiff> MetricDiffFromJson(const Json& node,
                                              absl::string_view field) {
  if (absl::Status status = ExpectObject(node, field); !status.ok()) {
    return status;
  }
  if (absl::Status status = RejectUnknownKeys(
          node, {"status", "delta", "before", "after"}, field);
      !status.ok()) {
    return status;
  }
  MetricDiff diff;
  absl::StatusOr<std::string> status_name =
      RequireString(node, "status", field);
  if (!status_name.ok()) return status_name.status();
  absl::StatusOr<MetricStatus> status = ParseMetricStatus(*status_name);
  if (!status.ok()) {
    return FieldError(MemberPath(field, "status"), status.status().message());
  }
  diff.status = *status;
  // The sides are checked as generic metrics here; DiffMapFromJson applies
  // the rules of the metric's name.
  for (auto [key, target] :
       {std::pair{"before", &diff.before}, std::pair{"after", &diff.after}}) {
    absl::StatusOr<std::optional<MetricResult>> side =
        OptionalMetric(node, key, field);
    if (!side.ok()) return side.status();
    *target = *std::move(side);
  }
  absl::StatusOr<const Json*> delta = RequireMember(node, "delta", field);
  if (!delta.ok()) return delta.status();
  const std::string delta_path = MemberPath(field, "delta");
  if (IsJsonInteger(**delta)) {
    absl::StatusOr<Count> value = JsonToCount(**delta, delta_path);
    if (!value.ok()) return value.status();
    diff.delta = *value;
  } else if ((*delta)->is_number_float()) {
    const double value = (*delta)->get<double>();
    if (!std::isfinite(value)) return FieldError(delta_path, "is not finite");
    diff.delta = value;
  } else if (!(*delta)->is_null()) {
    return FieldError(
        delta_path,
        absl::StrCat("expected a number or null, got ", DescribeJson(**delta)));
  }
  if (diff.status != ExpectedStatus(diff)) {
    return FieldError(
        MemberPath(field, "status"),
        absl::StrCat("is '", MetricStatusName(diff.status),
                     "' but the sides make it '",
                     MetricStatusName(ExpectedStatus(diff)), "'"));
  }
  if (diff.delta.has_value() != (diff.status == MetricStatus::kComplete)) {
    return FieldError(delta_path, diff.delta ? "must be null unless complete"
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
      entry["metrics"] = MetricMapToJson(snapshot.metrics);
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
  if (absl::Status status = ExpectObject(node, field); !status.ok()) {
    return status;
  }
  if (absl::Status status = RejectUnknownKeys(
          node, {"schema_version", "totals", "layers"}, field);
      !status.ok()) {
    return status;
  }
  ReportDiff diff;
  absl::StatusOr<std::int64_t> version =
      RequireIndex(node, "schema_version", field);
  if (!version.ok()) return version.status();
  diff.schema_version = *version;
  absl::StatusOr<const Json*> totals = RequireMember(node, "totals", field);
  if (!totals.ok()) return totals.status();
  absl::StatusOr<std::map<std::string, MetricDiff>> total_diffs =
      DiffMapFromJson(**totals, MemberPath(field, "totals"));
  if (!total_diffs.ok()) return total_diffs.status();
  diff.totals = *std::move(total_diffs);

  absl::StatusOr<const Json*> layers = RequireMember(node, "layers", field);
  if (!layers.ok()) return layers.status();
  const std::string layers_path = MemberPath(field, "layers");
  if (absl::Status status = RejectUnknownKeys(
          **layers, {"added", "removed", "changed"}, layers_path);
      !status.ok()) {
    return status;
  }
  for (auto [key, target] :
       {std::pair{"added", &diff.added}, std::pair{"removed", &diff.removed}}) {
    absl::StatusOr<const Json*> list =
        RequireMember(**layers, key, layers_path);
    if (!list.ok()) return list.status();
    absl::StatusOr<std::vector<LayerSnapshot>> snapshots =
        SnapshotsFromJson(**list, MemberPath(layers_path, key));
    if (!snapshots.ok()) return snapshots.status();
    *target = *std::move(snapshots);
  }
  absl::StatusOr<const Json*> changed =
      RequireMember(**layers, "changed", layers_path);
  if (!changed.ok()) return changed.status();
  const std::string changed_path = MemberPath(layers_path, "changed");
  if (absl::Status status = ExpectArray(**changed, changed_path);
      !status.ok()) {
    return status;
  }
  for (std::size_t i = 0; i < (*changed)->size(); ++i) {
    absl::StatusOr<LayerDiff> layer =
        LayerDiffFromJson((**changed)[i], IndexPath(changed_path, i));
    if (!layer.ok()) return layer.status();
    diff.changed.push_back(*std::move(layer));
  }
  return diff;
}

}  // namespace torchscan::report
