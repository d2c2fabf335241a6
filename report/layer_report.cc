#include "report/layer_report.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "base/status_macros.h"
#include "report/json_reader.h"

namespace torchscan::report {
namespace {

absl::StatusOr<ParameterAttribution> ParametersFromJson(const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(JsonObject object, node.Object());
  TS_RETURN_IF_ERROR(
      object.RejectUnknownKeys({"trainable", "frozen", "bytes", "shared"}));
  ParameterAttribution parameters;
  TS_ASSIGN_OR_RETURN(parameters.trainable,
                      object.NonNegativeCount("trainable"));
  TS_ASSIGN_OR_RETURN(parameters.frozen, object.NonNegativeCount("frozen"));
  TS_ASSIGN_OR_RETURN(parameters.bytes, object.NonNegativeCount("bytes"));
  TS_ASSIGN_OR_RETURN(parameters.shared, object.Bool("shared"));
  return parameters;
}

absl::StatusOr<BufferAttribution> BuffersFromJson(const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(JsonObject object, node.Object());
  TS_RETURN_IF_ERROR(object.RejectUnknownKeys({"elements", "bytes", "shared"}));
  BufferAttribution buffers;
  TS_ASSIGN_OR_RETURN(buffers.elements, object.NonNegativeCount("elements"));
  TS_ASSIGN_OR_RETURN(buffers.bytes, object.NonNegativeCount("bytes"));
  TS_ASSIGN_OR_RETURN(buffers.shared, object.Bool("shared"));
  return buffers;
}

}  // namespace

std::string LayerName(absl::string_view path,
                      absl::string_view root_class_name) {
  const std::size_t dot = path.rfind('.');
  const absl::string_view last =
      dot == absl::string_view::npos ? path : path.substr(dot + 1);
  // Python's str.lower() also lowers non-ASCII letters; class names are
  // ASCII in practice.
  return last.empty() ? absl::AsciiStrToLower(root_class_name)
                      : std::string(last);
}

std::int64_t LayerDepth(absl::string_view path) {
  if (path.empty()) return 0;
  return static_cast<std::int64_t>(std::count(path.begin(), path.end(), '.')) +
         1;
}

Json LayerReportToJson(const LayerReport& layer) {
  Json node = Json::object();
  node["path"] = layer.path;
  node["call_index"] = layer.call_index;
  node["name"] = layer.name;
  node["depth"] = layer.depth;
  node["type"] = layer.type;
  node["input"] = CallMetadataToJson(layer.input);
  node["output"] = ValueMetadataToJson(layer.output);
  Json parameters = Json::object();
  parameters["trainable"] = CountToJson(layer.parameters.trainable);
  parameters["frozen"] = CountToJson(layer.parameters.frozen);
  parameters["bytes"] = CountToJson(layer.parameters.bytes);
  parameters["shared"] = layer.parameters.shared;
  node["parameters"] = std::move(parameters);
  Json buffers = Json::object();
  buffers["elements"] = CountToJson(layer.buffers.elements);
  buffers["bytes"] = CountToJson(layer.buffers.bytes);
  buffers["shared"] = layer.buffers.shared;
  node["buffers"] = std::move(buffers);
  node["metrics"] = MetricMapToJson(layer.metrics);
  return node;
}

absl::StatusOr<LayerReport> LayerReportFromJson(const Json& node,
                                                absl::string_view field) {
  TS_ASSIGN_OR_RETURN(JsonObject object,
                      JsonValue(node, std::string(field)).Object());
  TS_RETURN_IF_ERROR(object.RejectUnknownKeys(
      {"path", "call_index", "name", "depth", "type", "input", "output",
       "parameters", "buffers", "metrics"}));
  LayerReport layer;
  TS_ASSIGN_OR_RETURN(layer.path, object.String("path"));
  TS_ASSIGN_OR_RETURN(layer.name, object.String("name"));
  TS_ASSIGN_OR_RETURN(layer.type, object.String("type"));
  TS_ASSIGN_OR_RETURN(layer.call_index, object.Index("call_index"));
  TS_ASSIGN_OR_RETURN(layer.depth, object.Index("depth"));
  TS_ASSIGN_OR_RETURN(JsonValue input, object.Member("input"));
  TS_ASSIGN_OR_RETURN(layer.input,
                      CallMetadataFromJson(input.node(), input.path()));
  TS_ASSIGN_OR_RETURN(JsonValue output, object.Member("output"));
  TS_ASSIGN_OR_RETURN(layer.output,
                      ValueMetadataFromJson(output.node(), output.path()));
  TS_ASSIGN_OR_RETURN(JsonValue parameters, object.Member("parameters"));
  TS_ASSIGN_OR_RETURN(layer.parameters, ParametersFromJson(parameters));
  TS_ASSIGN_OR_RETURN(JsonValue buffers, object.Member("buffers"));
  TS_ASSIGN_OR_RETURN(layer.buffers, BuffersFromJson(buffers));
  TS_ASSIGN_OR_RETURN(JsonValue metrics, object.Member("metrics"));
  TS_ASSIGN_OR_RETURN(layer.metrics,
                      MetricMapFromJson(metrics.node(), metrics.path()));
  return layer;
}

}  // namespace torchscan::report
