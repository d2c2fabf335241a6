#include "formulas/analysis_builder.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "formulas/formula_support.h"
#include "formulas/module_json.h"
#include "formulas/module_metrics.h"
#include "report/layer_report.h"
#include "report/metric_map.h"
#include "report/strict.h"

namespace torchscan::formulas {
namespace {

absl::Status FieldError(absl::string_view field, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", problem));
}

absl::StatusOr<const report::Json*> Member(const report::Json& object,
                                           const char* key,
                                           absl::string_view field) {
  if (!object.is_object()) return FieldError(field, "expected an object");
  auto it = object.find(key);
  if (it == object.end())
    return FieldError(absl::StrCat(field, ".", key), "is missing");
  return &*it;
}

absl::StatusOr<report::ModelTensorTotals> ModelTotalsFromJson(
    const report::Json& node) {
  report::ModelTensorTotals totals;
  for (auto [key, target] :
       {std::pair{"trainable_parameters", &totals.trainable_parameters},
        std::pair{"frozen_parameters", &totals.frozen_parameters},
        std::pair{"parameter_bytes", &totals.parameter_bytes},
        std::pair{"buffer_elements", &totals.buffer_elements},
        std::pair{"buffer_bytes", &totals.buffer_bytes}}) {
    const std::string field = absl::StrCat("crawl.model.", key);
    TS_ASSIGN_OR_RETURN(const report::Json* value,
                        Member(node, key, "crawl.model"));
    TS_ASSIGN_OR_RETURN(report::Count count,
                        report::JsonToCount(*value, field));
    if (count < 0) return FieldError(field, "must not be negative");
    *target = count;
  }
  return totals;
}

}  // namespace

absl::StatusOr<report::AnalysisReport> BuildAnalysisReport(CrawlRecord record) {
  if (!record.operator_flops) {
    return report::AssembleStructureReport(std::move(record.parts));
  }
  std::vector<report::LayerReport>& layers = record.parts.layers;
  for (const CapturedLeafCall& leaf : record.leaf_calls) {
    if (leaf.layer >= layers.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("leaf call of '", leaf.call.path, "' names layer ",
                       leaf.layer, " of ", layers.size()));
    }
    TS_ASSIGN_OR_RETURN(ModuleMetrics metrics,
                        EvaluateModuleMetrics(leaf.call));
    for (NamedMetric& metric : metrics.metrics) {
      layers[leaf.layer].metrics.Set(std::move(metric.name),
                                     std::move(metric.result));
    }
    for (report::Diagnostic& diagnostic : metrics.diagnostics) {
      record.parts.module_diagnostics.push_back(std::move(diagnostic));
    }
  }
  std::vector<report::LayerOperatorFlops> per_layer;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    auto it = record.layer_call_flops.find(i);
    report::LayerOperatorFlops entry =
        it != record.layer_call_flops.end()
            ? std::move(it->second)
            : report::LayerOperatorFlops{
                  .total = report::MetricResult::Complete(
                      report::Count(0),
                      report::MetricKind{
                          "FLOPs", "module_call",
                          std::string(report::kOperatorFlopsMethod)})};
    entry.path = layers[i].path;
    entry.call_index = layers[i].call_index;
    per_layer.push_back(std::move(entry));
  }
  TS_ASSIGN_OR_RETURN(
      report::AnalysisReport report,
      report::AssembleAnalysisReport(std::move(record.parts),
                                     *std::move(record.operator_flops)));
  report.layer_operator_flops = std::move(per_layer);
  return report;
}

// Everything of a crawl record after its layers: model totals, front-end
// diagnostics, leaf calls, operator FLOPs, per-layer-call FLOPs.
absl::Status ParseCrawlRest(const report::Json& node, CrawlRecord& record) {
  TS_ASSIGN_OR_RETURN(const report::Json* model,
                      Member(node, "model", "crawl"));
  TS_ASSIGN_OR_RETURN(record.parts.model, ModelTotalsFromJson(*model));
  if (auto it = node.find("diagnostics"); it != node.end()) {
    if (!it->is_array()) {
      return FieldError("crawl.diagnostics", "expected an array");
    }
    for (std::size_t i = 0; i < it->size(); ++i) {
      TS_ASSIGN_OR_RETURN(
          report::Diagnostic diagnostic,
          report::DiagnosticFromJson(
              (*it)[i], absl::StrCat("crawl.diagnostics[", i, "]")));
      record.parts.module_diagnostics.push_back(std::move(diagnostic));
    }
  }
  if (node.value("mode", "") == "structure") return absl::OkStatus();

  TS_ASSIGN_OR_RETURN(const report::Json* leaf_calls,
                      Member(node, "leaf_calls", "crawl"));
  if (!leaf_calls->is_array())
    return FieldError("crawl.leaf_calls", "expected an array");
  for (std::size_t i = 0; i < leaf_calls->size(); ++i) {
    const std::string field = absl::StrCat("crawl.leaf_calls[", i, "]");
    const report::Json& entry = (*leaf_calls)[i];
    TS_ASSIGN_OR_RETURN(const report::Json* layer,
                        Member(entry, "layer", field));
    TS_ASSIGN_OR_RETURN(
        report::Count index,
        report::JsonToCount(*layer, absl::StrCat(field, ".layer")));
    if (index < 0 ||
        index >= static_cast<report::Count>(record.parts.layers.size())) {
      return FieldError(absl::StrCat(field, ".layer"), "is not a layer index");
    }
    // The fields are read in place: copying each call's JSON costs more than
    // evaluating its formulas.
    CapturedModuleCall captured;
    TS_ASSIGN_OR_RETURN(const report::Json* path, Member(entry, "path", field));
    if (!path->is_string()) {
      return FieldError(absl::StrCat(field, ".path"), "expected a string");
    }
    captured.path = path->get<std::string>();
    TS_ASSIGN_OR_RETURN(const report::Json* module,
                        Member(entry, "module", field));
    TS_ASSIGN_OR_RETURN(
        captured.module,
        ModuleDescriptionFromJson(*module, absl::StrCat(field, ".module")));
    TS_ASSIGN_OR_RETURN(const report::Json* call, Member(entry, "call", field));
    TS_ASSIGN_OR_RETURN(
        captured.call, ModuleCallFromJson(*call, absl::StrCat(field, ".call")));
    record.leaf_calls.push_back(
        CapturedLeafCall{static_cast<std::size_t>(index), std::move(captured)});
  }
  TS_ASSIGN_OR_RETURN(const report::Json* flops,
                      Member(node, "operator_flops", "crawl"));
  TS_ASSIGN_OR_RETURN(
      report::FlopReport flop_report,
      report::FlopReportFromJson(*flops, "crawl.operator_flops"));
  record.operator_flops = std::move(flop_report);

  if (auto it = node.find("layer_call_flops"); it != node.end()) {
    if (!it->is_object())
      return FieldError("crawl.layer_call_flops", "expected an object");
    for (const auto& [label, value] : it->items()) {
      const std::string field = absl::StrCat("crawl.layer_call_flops.", label);
      std::optional<report::Count> index = report::ParseCount(label);
      if (!index || *index < 0 ||
          *index >= static_cast<report::Count>(record.parts.layers.size())) {
        return FieldError(field, "is not a layer index");
      }
      report::Json entry = value;
      entry["path"] = "";
      entry["call_index"] = 0;
      TS_ASSIGN_OR_RETURN(report::LayerOperatorFlops flops,
                          report::LayerOperatorFlopsFromJson(entry, field));
      record.layer_call_flops[static_cast<std::size_t>(*index)] =
          std::move(flops);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<CrawlRecord> CrawlRecordFromJson(const report::Json& node) {
  CrawlRecord record;
  TS_ASSIGN_OR_RETURN(const report::Json* mode, Member(node, "mode", "crawl"));
  if (!mode->is_string() || (*mode != "full" && *mode != "structure")) {
    return FieldError("crawl.mode", "must be 'full' or 'structure'");
  }
  TS_ASSIGN_OR_RETURN(const report::Json* context,
                      Member(node, "context", "crawl"));
  TS_ASSIGN_OR_RETURN(record.parts.context,
                      report::ReportContextFromJson(*context, "crawl.context"));
  TS_ASSIGN_OR_RETURN(const report::Json* inputs,
                      Member(node, "inputs", "crawl"));
  TS_ASSIGN_OR_RETURN(record.parts.inputs,
                      report::InputsMetadataFromJson(*inputs, "crawl.inputs"));
  TS_ASSIGN_OR_RETURN(const report::Json* layers,
                      Member(node, "layers", "crawl"));
  if (!layers->is_array())
    return FieldError("crawl.layers", "expected an array");
  for (std::size_t i = 0; i < layers->size(); ++i) {
    TS_ASSIGN_OR_RETURN(
        report::LayerReport layer,
        report::LayerReportFromJson((*layers)[i],
                                    absl::StrCat("crawl.layers[", i, "]")));
    record.parts.layers.push_back(std::move(layer));
  }
  TS_RETURN_IF_ERROR(ParseCrawlRest(node, record));
  return record;
}

absl::StatusOr<report::Json> EvaluateCrawlParts(const report::Json& node) {
  CrawlRecord record;
  TS_ASSIGN_OR_RETURN(const report::Json* mode, Member(node, "mode", "crawl"));
  if (!mode->is_string() || (*mode != "full" && *mode != "structure")) {
    return FieldError("crawl.mode", "must be 'full' or 'structure'");
  }
  TS_ASSIGN_OR_RETURN(const report::Json* count,
                      Member(node, "layer_count", "crawl"));
  TS_ASSIGN_OR_RETURN(report::Count layers,
                      report::JsonToCount(*count, "crawl.layer_count"));
  if (layers < 0 || layers > (report::Count(1) << 31)) {
    return FieldError("crawl.layer_count", "is not a layer count");
  }
  record.parts.layers.resize(static_cast<std::size_t>(layers));
  // Structure mode's not-requested operator report names the torch version.
  if (auto it = node.find("torch_version");
      it != node.end() && it->is_string()) {
    record.parts.context.torch_version = it->get<std::string>();
  }
  TS_RETURN_IF_ERROR(ParseCrawlRest(node, record));
  TS_ASSIGN_OR_RETURN(report::AnalysisReport report,
                      BuildAnalysisReport(std::move(record)));

  report::Json parts = report::Json::object();
  parts["layer_metrics"] = report::Json::object();
  for (std::size_t i = 0; i < report.layers.size(); ++i) {
    if (report.layers[i].metrics.empty()) continue;
    parts["layer_metrics"][std::to_string(i)] =
        report::MetricMapToJson(report.layers[i].metrics);
  }
  parts["operator_flops"] = report::FlopReportToJson(report.operator_flops);
  if (report.layer_operator_flops) {
    parts["layer_operator_flops"] = report::Json::array();
    for (const report::LayerOperatorFlops& entry :
         *report.layer_operator_flops) {
      report::Json flops = report::LayerOperatorFlopsToJson(entry);
      flops.erase("path");
      flops.erase("call_index");
      parts["layer_operator_flops"].push_back(std::move(flops));
    }
  }
  parts["totals"] = report::MetricMapToJson(report.totals);
  parts["diagnostics"] = report::Json::array();
  for (const report::Diagnostic& diagnostic : report.diagnostics) {
    parts["diagnostics"].push_back(report::DiagnosticToJson(diagnostic));
  }
  parts["analysis_mode"] = report.context.analysis_mode
                               ? report::Json(*report.context.analysis_mode)
                               : report::Json();
  parts["incomplete"] =
      report::IsIncomplete(report)
          ? report::Json(report::IncompleteAnalysisMessage(report))
          : report::Json();
  return parts;
}

}  // namespace torchscan::formulas
