#include "report/analysis_report.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "report/json_fields.h"

namespace torchscan::report {
namespace {

constexpr absl::string_view kContextStrings[] = {
    "torchscan_version", "torch_version",  "python_version",
    "model_type",        "execution_mode",
};

absl::StatusOr<std::vector<std::string>> StringList(const Json& object,
                                                    absl::string_view key,
                                                    absl::string_view field) {
  absl::StatusOr<const Json*> member = RequireMember(object, key, field);
  if (!member.ok()) return member.status();
  const std::string path = MemberPath(field, key);
  if (absl::Status status = ExpectArray(**member, path); !status.ok()) {
    return status;
  }
  std::vector<std::string> values;
  for (std::size_t i = 0; i < (*member)->size(); ++i) {
    absl::StatusOr<std::string> text =
        StringValue((**member)[i], IndexPath(path, i));
    if (!text.ok()) return text.status();
    values.push_back(*std::move(text));
  }
  return values;
}

Json StringListToJson(const std::vector<std::string>& values) {
  Json node = Json::array();
  for (const std::string& value : values) node.push_back(value);
  return node;
}

absl::StatusOr<std::int64_t> SchemaVersion(const Json& node,
                                           absl::string_view field) {
  absl::StatusOr<const Json*> version =
      RequireMember(node, "schema_version", field);
  if (!version.ok()) return version.status();
  const std::string path = MemberPath(field, "schema_version");
  if (!IsJsonInteger(**version)) {
    return FieldError(path, absl::StrCat("expected an integer, got ",
                                         DescribeJson(**version)));
  }
  absl::StatusOr<Count> value = JsonToCount(**version, path);
  if (!value.ok()) return value.status();
  if (*value != kSchemaVersion) {
    return FieldError(path, absl::StrCat("unsupported schema version: ",
                                         CountToString(*value)));
  }
  return kSchemaVersion;
}

}  // namespace

Json ReportContextToJson(const ReportContext& context) {
  Json node = Json::object();
  node["torchscan_version"] = context.torchscan_version;
  node["torch_version"] = context.torch_version;
  node["python_version"] = context.python_version;
  node["model_type"] = context.model_type;
  node["execution_mode"] = context.execution_mode;
  node["training_before"] = context.training_before;
  node["devices"] = StringListToJson(context.devices);
  node["dtypes"] = StringListToJson(context.dtypes);
  if (context.analysis_mode) node["analysis_mode"] = *context.analysis_mode;
  if (context.extra.is_object()) {
    for (const auto& [key, value] : context.extra.items()) {
      if (!node.contains(key)) node[key] = value;
    }
  }
  return node;
}

absl::StatusOr<ReportContext> ReportContextFromJson(const Json& node,
                                                    absl::string_view field) {
  if (absl::Status status = ExpectObject(node, field); !status.ok()) {
    return status;
  }
  ReportContext context;
  std::string* const targets[] = {
      &context.torchscan_version, &context.torch_version,
      &context.python_version, &context.model_type, &context.execution_mode};
  for (std::size_t i = 0; i < std::size(kContextStrings); ++i) {
    absl::StatusOr<std::string> text =
        RequireString(node, kContextStrings[i], field);
    if (!text.ok()) return text.status();
    *targets[i] = *std::move(text);
  }
  absl::StatusOr<bool> training = RequireBool(node, "training_before", field);
  if (!training.ok()) return training.status();
  context.training_before = *training;
  absl::StatusOr<std::vector<std::string>> devices =
      StringList(node, "devices", field);
  if (!devices.ok()) return devices.status();
  context.devices = *std::move(devices);
  absl::StatusOr<std::vector<std::string>> dtypes =
      StringList(node, "dtypes", field);
  if (!dtypes.ok()) return dtypes.status();
  context.dtypes = *std::move(dtypes);
  if (node.contains("analysis_mode")) {
    absl::StatusOr<std::string> mode =
        RequireString(node, "analysis_mode", field);
    if (!mode.ok()) return mode.status();
    context.analysis_mode = *std::move(mode);
  }
  for (const auto& [key, value] : node.items()) {
    const bool known =
        key == "training_before" || key == "devices" || key == "dtypes" ||
        key == "analysis_mode" ||
        std::find(std::begin(kContextStrings), std::end(kContextStrings),
                  absl::string_view(key)) != std::end(kContextStrings);
    if (!known) context.extra[key] = value;
  }
  return context;
}

Json InputsMetadataToJson(const InputsMetadata& inputs) {
  Json node = Json::object();
  node["source"] = inputs.source;
  const Json call = CallMetadataToJson(inputs.call);
  node["args"] = call["args"];
  node["kwargs"] = call["kwargs"];
  return node;
}

absl::StatusOr<InputsMetadata> InputsMetadataFromJson(const Json& node,
                                                      absl::string_view field) {
  if (absl::Status status = ExpectObject(node, field); !status.ok()) {
    return status;
  }
  if (absl::Status status =
          RejectUnknownKeys(node, {"source", "args", "kwargs"}, field);
      !status.ok()) {
    return status;
  }
  InputsMetadata inputs;
  absl::StatusOr<std::string> source = RequireString(node, "source", field);
  if (!source.ok()) return source.status();
  if (*source != kGeneratedInputs && *source != kProvidedInputs) {
    return FieldError(
        MemberPath(field, "source"),
        absl::StrCat("must be 'generated' or 'provided', got '", *source, "'"));
  }
  inputs.source = *std::move(source);
  Json call = node;
  call.erase("source");
  absl::StatusOr<CallMetadata> metadata = CallMetadataFromJson(call, field);
  if (!metadata.ok()) return metadata.status();
  inputs.call = *std::move(metadata);
  return inputs;
}

Json LayerOperatorFlopsToJson(const LayerOperatorFlops& entry) {
  Json node = Json::object();
  node["path"] = entry.path;
  node["call_index"] = entry.call_index;
  node["total"] = MetricResultToJson(entry.total);
  node["by_operator"] = Json::object();
  for (const auto& [op, flops] : entry.by_operator) {
    node["by_operator"][op] = CountToJson(flops);
  }
  return node;
}

absl::StatusOr<LayerOperatorFlops> LayerOperatorFlopsFromJson(
    const Json& node, absl::string_view field) {
  if (absl::Status status = ExpectObject(node, field); !status.ok())
    return status;
  if (absl::Status status = RejectUnknownKeys(
          node, {"path", "call_index", "total", "by_operator"}, field);
      !status.ok()) {
    return status;
  }
  LayerOperatorFlops entry;
  absl::StatusOr<const Json*> path = RequireMember(node, "path", field);
  if (!path.ok()) return path.status();
  if (!(*path)->is_string()) {
    return FieldError(MemberPath(field, "path"), "expected a string");
  }
  entry.path = (*path)->get<std::string>();
  absl::StatusOr<const Json*> call_index =
      RequireMember(node, "call_index", field);
  if (!call_index.ok()) return call_index.status();
  absl::StatusOr<Count> index =
      JsonToCount(**call_index, MemberPath(field, "call_index"));
  if (!index.ok()) return index.status();
  if (*index < 0 || *index > std::numeric_limits<std::int64_t>::max()) {
    return FieldError(MemberPath(field, "call_index"),
                      "must be a non-negative int64");
  }
  entry.call_index = static_cast<std::int64_t>(*index);
  absl::StatusOr<const Json*> total = RequireMember(node, "total", field);
  if (!total.ok()) return total.status();
  absl::StatusOr<MetricResult> total_value =
      MetricResultFromJson(**total, MemberPath(field, "total"));
  if (!total_value.ok()) return total_value.status();
  entry.total = *std::move(total_value);
  absl::StatusOr<const Json*> by_operator =
      RequireMember(node, "by_operator", field);
  if (!by_operator.ok()) return by_operator.status();
  if (absl::Status status =
          ExpectObject(**by_operator, MemberPath(field, "by_operator"));
      !status.ok()) {
    return status;
  }
  for (const auto& [op, flops] : (*by_operator)->items()) {
    const std::string op_field =
        MemberPath(MemberPath(field, "by_operator"), op);
    absl::StatusOr<Count> value = JsonToCount(flops, op_field);
    if (!value.ok()) return value.status();
    if (*value < 0) return FieldError(op_field, "must not be negative");
    entry.by_operator[op] = *value;
  }
  return entry;
}

Json AnalysisReportToJson(const AnalysisReport& report) {
  Json node = Json::object();
  node["schema_version"] = report.schema_version;
  node["context"] = ReportContextToJson(report.context);
  node["inputs"] = InputsMetadataToJson(report.inputs);
  node["layers"] = Json::array();
  for (const LayerReport& layer : report.layers) {
    node["layers"].push_back(LayerReportToJson(layer));
  }
  node["operator_flops"] = FlopReportToJson(report.operator_flops);
  if (report.layer_operator_flops) {
    node["layer_operator_flops"] = Json::array();
    for (const LayerOperatorFlops& entry : *report.layer_operator_flops) {
      node["layer_operator_flops"].push_back(LayerOperatorFlopsToJson(entry));
    }
  }
  node["totals"] = MetricMapToJson(report.totals);
  node["diagnostics"] = Json::array();
  for (const Diagnostic& diagnostic : report.diagnostics) {
    node["diagnostics"].push_back(DiagnosticToJson(diagnostic));
  }
  return node;
}

absl::StatusOr<AnalysisReport> AnalysisReportFromJson(const Json& node,
                                                      absl::string_view field) {
  if (absl::Status status = ExpectObject(node, field); !status.ok()) {
    return status;
  }
  if (absl::Status status = RejectUnknownKeys(
          node,
          {"schema_version", "context", "inputs", "layers", "operator_flops",
           "layer_operator_flops", "totals", "diagnostics"},
          field);
      !status.ok()) {
    return status;
  }
  AnalysisReport report;
  absl::StatusOr<std::int64_t> version = SchemaVersion(node, field);
  if (!version.ok()) return version.status();
  report.schema_version = *version;

  absl::StatusOr<const Json*> context = RequireMember(node, "context", field);
  if (!context.ok()) return context.status();
  absl::StatusOr<ReportContext> context_value =
      ReportContextFromJson(**context, MemberPath(field, "context"));
  if (!context_value.ok()) return context_value.status();
  report.context = *std::move(context_value);

  absl::StatusOr<const Json*> inputs = RequireMember(node, "inputs", field);
  if (!inputs.ok()) return inputs.status();
  absl::StatusOr<InputsMetadata> inputs_value =
      InputsMetadataFromJson(**inputs, MemberPath(field, "inputs"));
  if (!inputs_value.ok()) return inputs_value.status();
  report.inputs = *std::move(inputs_value);

  absl::StatusOr<const Json*> layers = RequireMember(node, "layers", field);
  if (!layers.ok()) return layers.status();
  const std::string layers_path = MemberPath(field, "layers");
  if (absl::Status status = ExpectArray(**layers, layers_path); !status.ok()) {
    return status;
  }
  for (std::size_t i = 0; i < (*layers)->size(); ++i) {
    absl::StatusOr<LayerReport> layer =
        LayerReportFromJson((**layers)[i], IndexPath(layers_path, i));
    if (!layer.ok()) return layer.status();
    report.layers.push_back(*std::move(layer));
  }

  absl::StatusOr<const Json*> operator_flops =
      RequireMember(node, "operator_flops", field);
  if (!operator_flops.ok()) return operator_flops.status();
  absl::StatusOr<FlopReport> flop_report =
      FlopReportFromJson(**operator_flops, MemberPath(field, "operator_flops"));
  if (!flop_report.ok()) return flop_report.status();
  report.operator_flops = *std::move(flop_report);

  if (auto it = node.find("layer_operator_flops"); it != node.end()) {
    const std::string entries_path = MemberPath(field, "layer_operator_flops");
    if (absl::Status status = ExpectArray(*it, entries_path); !status.ok()) {
      return status;
    }
    report.layer_operator_flops.emplace();
    for (std::size_t i = 0; i < it->size(); ++i) {
      absl::StatusOr<LayerOperatorFlops> entry =
          LayerOperatorFlopsFromJson((*it)[i], IndexPath(entries_path, i));
      if (!entry.ok()) return entry.status();
      report.layer_operator_flops->push_back(*std::move(entry));
    }
  }

  absl::StatusOr<const Json*> totals = RequireMember(node, "totals", field);
  if (!totals.ok()) return totals.status();
  const std::string totals_path = MemberPath(field, "totals");
  absl::StatusOr<MetricMap> totals_value =
      MetricMapFromJson(**totals, totals_path);
  if (!totals_value.ok()) return totals_value.status();
  for (absl::string_view name : kTotalNames) {
    if (!totals_value->Contains(name)) {
      return FieldError(MemberPath(totals_path, name), "is missing");
    }
  }
  report.totals = *std::move(totals_value);

  absl::StatusOr<const Json*> diagnostics =
      RequireMember(node, "diagnostics", field);
  if (!diagnostics.ok()) return diagnostics.status();
  const std::string diagnostics_path = MemberPath(field, "diagnostics");
  if (absl::Status status = ExpectArray(**diagnostics, diagnostics_path);
      !status.ok()) {
    return status;
  }
  for (std::size_t i = 0; i < (*diagnostics)->size(); ++i) {
    const std::string path = IndexPath(diagnostics_path, i);
    const Json& entry = (**diagnostics)[i];
    absl::StatusOr<Diagnostic> diagnostic = DiagnosticFromJson(entry, path);
    if (!diagnostic.ok()) return diagnostic.status();
    if (absl::Status status = RejectUnknownKeys(
            entry,
            {"code", "severity", "metric", "path", "operator", "message"},
            path);
        !status.ok()) {
      return status;
    }
    report.diagnostics.push_back(*std::move(diagnostic));
  }
  return report;
}

absl::StatusOr<AnalysisReport> ParseAnalysisReport(absl::string_view text,
                                                   absl::string_view field) {
  absl::StatusOr<Json> document = ParseJson(text);
  if (!document.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", document.status().message()));
  }
  return AnalysisReportFromJson(*document, field);
}

}  // namespace torchscan::report
