#include "report/layer_report.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "report/json_fields.h"

namespace torchscan::report {
namespace {

absl::StatusOr<ParameterAttribution> ParametersFromJson(
    const Json& node, absl::string_view field) {
  if (absl::Status status = ExpectObject(node, field); !status.ok()) {
    return status;
  }
  if (absl::Status status = RejectUnknownKeys(
          node, {"trainable", "frozen", "bytes", "shared"}, field);
      !status.ok()) {
    return status;
  }
  ParameterAttribution parameters;
  for (auto [key, target] : {std::pair{"trainable", &parameters.trainable},
                             std::pair{"frozen", &parameters.frozen},
                             std::pair{"bytes", &parameters.bytes}}) {
    absl::StatusOr<Count> value = RequireCount(node, key, field);
    if (!value.ok()) return value.status();
    *target = *value;
  }
  absl::StatusOr<bool> shared = RequireBool(node, "shared", field);
  if (!shared.ok()) return shared.status();
  parameters.shared = *shared;
  return parameters;
}

absl::StatusOr<BufferAttribution> BuffersFromJson(const Json& node,
                                                  absl::string_view field) {
  if (absl::Status status = ExpectObject(node, field); !status.ok()) {
    return status;
  }
  if (absl::Status status =
          RejectUnknownKeys(node, {"elements", "bytes", "shared"}, field);
      !status.ok()) {
    return status;
  }
  BufferAttribution buffers;
  for (auto [key, target] : {std::pair{"elements", &buffers.elements},
                             std::pair{"bytes", &buffers.bytes}}) {
    absl::StatusOr<Count> value = RequireCount(node, key, field);
    if (!value.ok()) return value.status();
    *target = *value;
  }
  absl::StatusOr<bool> shared = RequireBool(node, "shared", field);
  if (!shared.ok()) return shared.status();
  buffers.shared = *shared;
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
  if (absl::Status status = ExpectObject(node, field); !status.ok()) {
    return status;
  }
  if (absl::Status status = RejectUnknownKeys(
          node,
          {"path", "call_index", "name", "depth", "type", "input", "output",
           "parameters", "buffers", "metrics"},
          field);
      !status.ok()) {
    return status;
  }
  LayerReport layer;
  for (auto [key, target] :
       {std::pair{"path", &layer.path}, std::pair{"name", &layer.name},
        std::pair{"type", &layer.type}}) {
    absl::StatusOr<std::string> text = RequireString(node, key, field);
    if (!text.ok()) return text.status();
    *target = *std::move(text);
  }
  for (auto [key, target] : {std::pair{"call_index", &layer.call_index},
                             std::pair{"depth", &layer.depth}}) {
    absl::StatusOr<std::int64_t> value = RequireIndex(node, key, field);
    if (!value.ok()) return value.status();
    *target = *value;
  }
  absl::StatusOr<const Json*> input = RequireMember(node, "input", field);
  if (!input.ok()) return input.status();
  absl::StatusOr<CallMetadata> call =
      CallMetadataFromJson(**input, MemberPath(field, "input"));
  if (!call.ok()) return call.status();
  layer.input = *std::move(call);

  absl::StatusOr<const Json*> output = RequireMember(node, "output", field);
  if (!output.ok()) return output.status();
  absl::StatusOr<ValueMetadata> output_value =
      ValueMetadataFromJson(**output, MemberPath(field, "output"));
  if (!output_value.ok()) return output_value.status();
  layer.output = *std::move(output_value);

  absl::StatusOr<const Json*> parameters =
      RequireMember(node, "parameters", field);
  if (!parameters.ok()) return parameters.status();
  absl::StatusOr<ParameterAttribution> parameter_values =
      ParametersFromJson(**parameters, MemberPath(field, "parameters"));
  if (!parameter_values.ok()) return parameter_values.status();
  layer.parameters = *parameter_values;

  absl::StatusOr<const Json*> buffers = RequireMember(node, "buffers", field);
  if (!buffers.ok()) return buffers.status();
  absl::StatusOr<BufferAttribution> buffer_values =
      BuffersFromJson(**buffers, MemberPath(field, "buffers"));
  if (!buffer_values.ok()) return buffer_values.status();
  layer.buffers = *buffer_values;

  absl::StatusOr<const Json*> metrics = RequireMember(node, "metrics", field);
  if (!metrics.ok()) return metrics.status();
  absl::StatusOr<MetricMap> metric_values =
      MetricMapFromJson(**metrics, MemberPath(field, "metrics"));
  if (!metric_values.ok()) return metric_values.status();
  layer.metrics = *std::move(metric_values);
  return layer;
}

}  // namespace torchscan::report
