// LayerReport: one call of one module (reference 2.4), its records declared
// in field tables (field_table.h).

#ifndef TORCHSCAN_REPORT_LAYER_REPORT_H_
#define TORCHSCAN_REPORT_LAYER_REPORT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/count.h"
#include "report/field_table.h"
#include "report/json_io.h"
#include "report/metric_map.h"
#include "report/value_metadata.h"

namespace torchscan::report {

// Parameters newly counted at this call; `shared` says some were already
// counted by an earlier record (tied weights, a reused module).
struct ParameterAttribution {
  Count trainable = 0;
  Count frozen = 0;
  Count bytes = 0;
  bool shared = false;

  bool operator==(const ParameterAttribution&) const = default;
  static constexpr auto kFields = std::make_tuple(
      FieldAs<NonNegativeCountCodec>("trainable",
                                     &ParameterAttribution::trainable),
      FieldAs<NonNegativeCountCodec>("frozen", &ParameterAttribution::frozen),
      FieldAs<NonNegativeCountCodec>("bytes", &ParameterAttribution::bytes),
      Field("shared", &ParameterAttribution::shared));
};

struct BufferAttribution {
  Count elements = 0;
  Count bytes = 0;
  bool shared = false;

  bool operator==(const BufferAttribution&) const = default;
  static constexpr auto kFields = std::make_tuple(
      FieldAs<NonNegativeCountCodec>("elements", &BufferAttribution::elements),
      FieldAs<NonNegativeCountCodec>("bytes", &BufferAttribution::bytes),
      Field("shared", &BufferAttribution::shared));
};

struct LayerReport {
  // Dotted module path, "" for the root.
  std::string path;
  // Earlier calls of the same module instance in this analysis.
  std::int64_t call_index = 0;
  // Last path component; the lower-cased class name for the root.
  std::string name;
  // 0 for the root, else the number of dots in path + 1.
  std::int64_t depth = 0;
  std::string type;
  CallMetadata input;
  ValueMetadata output = ValueMetadata::Pending();
  ParameterAttribution parameters;
  BufferAttribution buffers;
  // calls, then for metric leaves module_flops, macs, dmas and the
  // receptive-field metrics, in that order.
  MetricMap metrics;

  bool operator==(const LayerReport&) const = default;
  static constexpr auto kFields = std::make_tuple(
      Field("path", &LayerReport::path),
      FieldAs<IndexCodec>("call_index", &LayerReport::call_index),
      Field("name", &LayerReport::name),
      FieldAs<IndexCodec>("depth", &LayerReport::depth),
      Field("type", &LayerReport::type), Field("input", &LayerReport::input),
      Field("output", &LayerReport::output),
      Field("parameters", &LayerReport::parameters),
      Field("buffers", &LayerReport::buffers),
      Field("metrics", &LayerReport::metrics));
};

// The name TorchScan gives a layer: the last dotted component of `path`, or
// `root_class_name` lower-cased for the root.
std::string LayerName(absl::string_view path,
                      absl::string_view root_class_name);
// The depth TorchScan gives a layer path.
std::int64_t LayerDepth(absl::string_view path);

Json LayerReportToJson(const LayerReport& layer);
absl::StatusOr<LayerReport> LayerReportFromJson(const Json& node,
                                                absl::string_view field);

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_LAYER_REPORT_H_
