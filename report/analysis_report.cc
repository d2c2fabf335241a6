#include "report/analysis_report.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "report/json_reader.h"

namespace torchscan::report {
namespace {

constexpr absl::string_view kContextStrings[] = {
    "torchscan_version", "torch_version",  "python_version",
    "model_type",        "execution_mode",
};

absl::StatusOr<std::vector<std::string>> StringList(const JsonObject& object,
                                                    absl::string_view key) {
  TS_ASSIGN_OR_RETURN(JsonArray list, object.Array(key));
  std::vector<std::string> values;
  for (std::size_t i = 0; i < list.size(); ++i) {
    TS_ASSIGN_OR_RETURN(std::string text, list.Item(i).String());
    values.push_back(std::move(text));
  }
  return values;
}

Json StringListToJson(const std::vector<std::string>& values) {
  Json node = Json::array();
  for (const std::string& value : values) node.push_back(value);
  return node;
}

absl::StatusOr<std::int64_t> SchemaVersion(const JsonObject& report) {
  TS_ASSIGN_OR_RETURN(Count version, report.Integer("schema_version"));
  if (version != kSchemaVersion) {
    return FieldError(
        report.PathOf("schema_version"),
        absl::StrCat("unsupported schema version: ", CountToString(version)));
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
  TS_ASSIGN_OR_RETURN(JsonObject object,
                      JsonValue(node, std::string(field)).Object());
  ReportContext context;
  std::string* const targets[] = {
      &context.torchscan_version, &context.torch_version,
      &context.python_version, &context.model_type, &context.execution_mode};
  for (std::size_t i = 0; i < std::size(kContextStrings); ++i) {
    TS_ASSIGN_OR_RETURN(*targets[i], object.String(kContextStrings[i]));
  }
  TS_ASSIGN_OR_RETURN(context.training_before, object.Bool("training_before"));
  TS_ASSIGN_OR_RETURN(context.devices, StringList(object, "devices"));
  TS_ASSIGN_OR_RETURN(context.dtypes, StringList(object, "dtypes"));
  if (object.Contains("analysis_mode")) {
    TS_ASSIGN_OR_RETURN(context.analysis_mode, object.String("analysis_mode"));
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
  TS_ASSIGN_OR_RETURN(JsonObject object,
                      JsonValue(node, std::string(field)).Object());
  TS_RETURN_IF_ERROR(object.RejectUnknownKeys({"source", "args", "kwargs"}));
  InputsMetadata inputs;
  TS_ASSIGN_OR_RETURN(inputs.source, object.String("source"));
  if (inputs.source != kGeneratedInputs && inputs.source != kProvidedInputs) {
    return FieldError(object.PathOf("source"),
                      absl::StrCat("must be 'generated' or 'provided', got '",
                                   inputs.source, "'"));
  }
  Json call = node;
  call.erase("source");
  TS_ASSIGN_OR_RETURN(inputs.call, CallMetadataFromJson(call, field));
  return inputs;
}

Json LayerCallFlopsToJson(const LayerOperatorFlops& entry) {
  Json node = Json::object();
  node["total"] = MetricResultToJson(entry.total);
  node["by_operator"] = Json::object();
  for (const auto& [op, flops] : entry.by_operator) {
    node["by_operator"][op] = CountToJson(flops);
  }
  return node;
}

Json LayerOperatorFlopsToJson(const LayerOperatorFlops& entry) {
  Json node = Json::object();
  node["path"] = entry.path;
  node["call_index"] = entry.call_index;
  Json values = LayerCallFlopsToJson(entry);
  for (auto& [key, value] : values.items()) node[key] = std::move(value);
  return node;
}

namespace {

// `total` and `by_operator`, the members both forms share.
absl::Status ReadLayerCallFlops(const JsonObject& object,
                                LayerOperatorFlops& entry) {
  TS_ASSIGN_OR_RETURN(JsonValue total, object.Member("total"));
  TS_ASSIGN_OR_RETURN(entry.total,
                      MetricResultFromJson(total.node(), total.path()));
  TS_ASSIGN_OR_RETURN(JsonObject by_operator, object.Object("by_operator"));
  for (auto& [op, flops] : by_operator.Members()) {
    TS_ASSIGN_OR_RETURN(entry.by_operator[op], flops.NonNegativeCount());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LayerOperatorFlops> LayerCallFlopsFromJson(
    const Json& node, absl::string_view field) {
  TS_ASSIGN_OR_RETURN(JsonObject object,
                      JsonValue(node, std::string(field)).Object());
  TS_RETURN_IF_ERROR(object.RejectUnknownKeys({"total", "by_operator"}));
  LayerOperatorFlops entry;
  TS_RETURN_IF_ERROR(ReadLayerCallFlops(object, entry));
  return entry;
}

absl::StatusOr<LayerOperatorFlops> LayerOperatorFlopsFromJson(
    const Json& node, absl::string_view field) {
  TS_ASSIGN_OR_RETURN(JsonObject object,
                      JsonValue(node, std::string(field)).Object());
  TS_RETURN_IF_ERROR(
      object.RejectUnknownKeys({"path", "call_index", "total", "by_operator"}));
  LayerOperatorFlops entry;
  TS_ASSIGN_OR_RETURN(entry.path, object.String("path"));
  TS_ASSIGN_OR_RETURN(entry.call_index, object.Index("call_index"));
  TS_RETURN_IF_ERROR(ReadLayerCallFlops(object, entry));
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
  TS_ASSIGN_OR_RETURN(JsonObject object,
                      JsonValue(node, std::string(field)).Object());
  TS_RETURN_IF_ERROR(object.RejectUnknownKeys(
      {"schema_version", "context", "inputs", "layers", "operator_flops",
       "layer_operator_flops", "totals", "diagnostics"}));
  AnalysisReport report;
  TS_ASSIGN_OR_RETURN(report.schema_version, SchemaVersion(object));

  TS_ASSIGN_OR_RETURN(JsonValue context, object.Member("context"));
  TS_ASSIGN_OR_RETURN(report.context,
                      ReportContextFromJson(context.node(), context.path()));
  TS_ASSIGN_OR_RETURN(JsonValue inputs, object.Member("inputs"));
  TS_ASSIGN_OR_RETURN(report.inputs,
                      InputsMetadataFromJson(inputs.node(), inputs.path()));

  TS_ASSIGN_OR_RETURN(JsonArray layers, object.Array("layers"));
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const JsonValue item = layers.Item(i);
    TS_ASSIGN_OR_RETURN(LayerReport layer,
                        LayerReportFromJson(item.node(), item.path()));
    report.layers.push_back(std::move(layer));
  }

  TS_ASSIGN_OR_RETURN(JsonValue operator_flops,
                      object.Member("operator_flops"));
  TS_ASSIGN_OR_RETURN(
      report.operator_flops,
      FlopReportFromJson(operator_flops.node(), operator_flops.path()));

  if (object.Contains("layer_operator_flops")) {
    TS_ASSIGN_OR_RETURN(JsonArray entries,
                        object.Array("layer_operator_flops"));
    report.layer_operator_flops.emplace();
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const JsonValue item = entries.Item(i);
      TS_ASSIGN_OR_RETURN(LayerOperatorFlops entry,
                          LayerOperatorFlopsFromJson(item.node(), item.path()));
      report.layer_operator_flops->push_back(std::move(entry));
    }
  }

  TS_ASSIGN_OR_RETURN(JsonValue totals, object.Member("totals"));
  TS_ASSIGN_OR_RETURN(report.totals,
                      MetricMapFromJson(totals.node(), totals.path()));
  for (absl::string_view name : kTotalNames) {
    if (!report.totals.Contains(name)) {
      return FieldError(MemberPath(totals.path(), name), "is missing");
    }
  }

  TS_ASSIGN_OR_RETURN(JsonArray diagnostics, object.Array("diagnostics"));
  for (std::size_t i = 0; i < diagnostics.size(); ++i) {
    const JsonValue item = diagnostics.Item(i);
    TS_ASSIGN_OR_RETURN(Diagnostic diagnostic,
                        DiagnosticFromJson(item.node(), item.path()));
    TS_ASSIGN_OR_RETURN(JsonObject entry, item.Object());
    TS_RETURN_IF_ERROR(entry.RejectUnknownKeys(
        {"code", "severity", "metric", "path", "operator", "message"}));
    report.diagnostics.push_back(std::move(diagnostic));
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
