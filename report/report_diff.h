// ReportDiff: what compare_reports returns (reference 2.7), and its JSON.

#ifndef TORCHSCAN_REPORT_REPORT_DIFF_H_
#define TORCHSCAN_REPORT_REPORT_DIFF_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/field_table.h"
#include "report/json_io.h"
#include "report/json_reader.h"
#include "report/metric_map.h"
#include "report/metric_result.h"

namespace torchscan::report {

// A diff's status: a metric status by name, read as JSON text
// ("expected a string, got integer").
struct DiffStatusCodec {
  static Json Write(MetricStatus status);
  static absl::StatusOr<MetricStatus> Read(const JsonValue& node);
};

// A diff's delta: an integer or a finite float, never a string ("expected
// a number or null, got string"; null is the nullopt around it).
struct DeltaCodec {
  static Json Write(const MetricValue& delta);
  static absl::StatusOr<MetricValue> Read(const JsonValue& node);
};

struct MetricDiff;

// The diffs of metrics by name: each a MetricDiff whose sides are checked
// against the rules of its metric's name (ValidateMetricValue).
struct MetricDiffsCodec {
  static Json Write(const std::map<std::string, MetricDiff>& diffs);
  static absl::StatusOr<std::map<std::string, MetricDiff>> Read(
      const JsonValue& node);
};

// {"status", "delta", "before", "after"}; the sides are read as generic
// metrics (MetricDiffsCodec applies the rules of the metric's name).
struct MetricDiff {
  // unavailable if either side is missing or unavailable, else partial if
  // either is partial, else complete.
  MetricStatus status = MetricStatus::kUnavailable;
  // after.value - before.value, only when complete: an integer when both are
  // integers, a float when either is.
  std::optional<MetricValue> delta;
  std::optional<MetricResult> before;
  std::optional<MetricResult> after;

  bool operator==(const MetricDiff&) const = default;
  // The status is the one the sides make it; delta is set exactly when it
  // is complete.
  absl::Status Validate(absl::string_view path) const;
  static constexpr auto kFields = std::make_tuple(
      FieldAs<DiffStatusCodec>("status", &MetricDiff::status),
      FieldAs<DeltaCodec>("delta", &MetricDiff::delta),
      Field("before", &MetricDiff::before), Field("after", &MetricDiff::after));
};

// A layer call present on one side only, with all its metrics.
struct LayerSnapshot {
  std::string path;
  std::int64_t call_index = 0;
  MetricMap metrics;

  bool operator==(const LayerSnapshot&) const = default;
  static constexpr auto kFields = std::make_tuple(
      Field("path", &LayerSnapshot::path),
      FieldAs<IndexCodec>("call_index", &LayerSnapshot::call_index),
      Field("metrics", &LayerSnapshot::metrics));
};

// A layer call on both sides whose metrics differ; only differing metrics.
struct LayerDiff {
  std::string path;
  std::int64_t call_index = 0;
  // Sorted by name, as upstream emits them (std::map's byte order is
  // Python's code-point order for UTF-8).
  std::map<std::string, MetricDiff> metrics;

  bool operator==(const LayerDiff&) const = default;
  static constexpr auto kFields = std::make_tuple(
      Field("path", &LayerDiff::path),
      FieldAs<IndexCodec>("call_index", &LayerDiff::call_index),
      FieldAs<MetricDiffsCodec>("metrics", &LayerDiff::metrics));
};

// {"schema_version", "totals", "layers": {"added", "removed", "changed"}}
// (docs/report-schema.md).

struct ReportDiff {
  std::int64_t schema_version = 1;
  // Every total of either side, sorted by name.
  std::map<std::string, MetricDiff> totals;
  // Each sorted by (path, call_index).
  std::vector<LayerSnapshot> added;
  std::vector<LayerSnapshot> removed;
  std::vector<LayerDiff> changed;

  bool operator==(const ReportDiff&) const = default;
  static constexpr auto kFields = std::make_tuple(
      FieldAs<IndexCodec>("schema_version", &ReportDiff::schema_version),
      FieldAs<MetricDiffsCodec>("totals", &ReportDiff::totals),
      FieldGroup("layers", Field("added", &ReportDiff::added),
                 Field("removed", &ReportDiff::removed),
                 Field("changed", &ReportDiff::changed)));
};

// ToJson and FromJson at path `field`, by the names their callers know.
Json MetricDiffToJson(const MetricDiff& diff);
absl::StatusOr<MetricDiff> MetricDiffFromJson(const Json& node,
                                              absl::string_view field);
Json ReportDiffToJson(const ReportDiff& diff);
absl::StatusOr<ReportDiff> ReportDiffFromJson(const Json& node,
                                              absl::string_view field = "diff");

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_REPORT_DIFF_H_
