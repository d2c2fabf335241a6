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
#include "report/json_io.h"
#include "report/metric_map.h"
#include "report/metric_result.h"

namespace torchscan::report {

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
};

// A layer call present on one side only, with all its metrics.
struct LayerSnapshot {
  std::string path;
  std::int64_t call_index = 0;
  MetricMap metrics;

  bool operator==(const LayerSnapshot&) const = default;
};

// A layer call on both sides whose metrics differ; only differing metrics.
struct LayerDiff {
  std::string path;
  std::int64_t call_index = 0;
  // Sorted by name, as upstream emits them (std::map's byte order is
  // Python's code-point order for UTF-8).
  std::map<std::string, MetricDiff> metrics;

  bool operator==(const LayerDiff&) const = default;
};

struct ReportDiff {
  std::int64_t schema_version = 1;
  // Every total of either side, sorted by name.
  std::map<std::string, MetricDiff> totals;
  // Each sorted by (path, call_index).
  std::vector<LayerSnapshot> added;
  std::vector<LayerSnapshot> removed;
  std::vector<LayerDiff> changed;

  bool operator==(const ReportDiff&) const = default;
};

Json MetricDiffToJson(const MetricDiff& diff);
absl::StatusOr<MetricDiff> MetricDiffFromJson(const Json& node,
                                              absl::string_view field);
Json ReportDiffToJson(const ReportDiff& diff);
absl::StatusOr<ReportDiff> ReportDiffFromJson(const Json& node,
                                              absl::string_view field = "diff");

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_REPORT_DIFF_H_
