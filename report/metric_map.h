// MetricMap: named MetricResults in insertion order, as a Python dict keeps
// them (layer metrics read calls, module_flops, macs, ...; totals read
// parameters, ..., dmas), so that written JSON matches json.dumps.

#ifndef TORCHSCAN_REPORT_METRIC_MAP_H_
#define TORCHSCAN_REPORT_METRIC_MAP_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/field_table.h"
#include "report/json_io.h"
#include "report/json_reader.h"
#include "report/metric_result.h"

namespace torchscan::report {

// Names of the receptive-field metrics, whose values are not counts.
inline constexpr absl::string_view kReceptiveField = "receptive_field";
inline constexpr absl::string_view kEffectiveStride = "effective_stride";
inline constexpr absl::string_view kEffectivePadding = "effective_padding";

class MetricMap {
 public:
  using Entry = std::pair<std::string, MetricResult>;

  // nullptr when absent.
  const MetricResult* Find(absl::string_view name) const;
  bool Contains(absl::string_view name) const { return Find(name) != nullptr; }
  // Replaces an existing entry in place (keeping its position, as assigning
  // to a Python dict key does) or appends a new one.
  void Set(std::string name, MetricResult result);

  const std::vector<Entry>& entries() const { return entries_; }
  std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries_.end(); }
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

  // As Python dicts compare: the same names with equal results, in any order.
  bool operator==(const MetricMap& other) const;

 private:
  std::vector<Entry> entries_;
};

// Checks the number a metric carries. Counts (units calls, FLOPs, MACs, DMAs,
// bytes, elements) must be non-negative integers; receptive_field and
// effective_stride may be any number (TorchScan 0.2 emits negative and
// fractional ones), effective_padding also a string (Conv padding="same");
// any other metric any number. `field` is the metric's path.
absl::Status ValidateMetricValue(absl::string_view name,
                                 const MetricResult& result,
                                 absl::string_view field);

// An object of metrics by name, in insertion order (report::ToJson,
// report::FromJson<MetricMap>). Each entry is a MetricResult (its field
// table: exactly its six keys) with a value ValidateMetricValue accepts;
// duplicate names are rejected by ParseJson.
template <>
struct JsonCodec<MetricMap> {
  static Json Write(const MetricMap& metrics);
  static absl::StatusOr<MetricMap> Read(const JsonValue& node);
};

// The text a value prints as in messages: 12, 1.5, 'same'.
std::string DescribeMetricValue(const MetricValue& value);

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_METRIC_MAP_H_
