#include "crawl/crawl_json.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "formulas/module_call.h"
#include "formulas/module_json.h"
#include "report/aggregate.h"
#include "report/field_table.h"
#include "report/json_reader.h"
#include "report/metric_map.h"
#include "report/metric_result.h"
#include "report/strict.h"

namespace torchscan::crawl {
namespace {

using formulas::CapturedModuleCall;
using report::Json;
using report::JsonArray;
using report::JsonObject;
using report::JsonValue;

absl::StatusOr<std::string> CrawlMode(const JsonObject& crawl) {
  TS_ASSIGN_OR_RETURN(JsonValue mode, crawl.Member("mode"));
  if (!mode.node().is_string() ||
      (mode.node() != "full" && mode.node() != "structure")) {
    return mode.Error("must be 'full' or 'structure'");
  }
  return mode.node().get<std::string>();
}

// A layer index into `layers`: "is not a layer index" otherwise.
absl::StatusOr<std::size_t> LayerIndex(const JsonValue& value,
                                       std::size_t layers) {
  TS_ASSIGN_OR_RETURN(report::Count index, value.Integer());
  if (index < 0 || index >= static_cast<report::Count>(layers)) {
    return value.Error("is not a layer index");
  }
  return static_cast<std::size_t>(index);
}

// The record; its operator FLOPs too when `with_flops`.
absl::StatusOr<CrawlRecord> ReadCrawlRecord(const Json& node, bool with_flops) {
  TS_ASSIGN_OR_RETURN(JsonObject crawl, JsonValue(node, "crawl").Object());
  CrawlRecord record;
  TS_ASSIGN_OR_RETURN(std::string mode, CrawlMode(crawl));
  TS_ASSIGN_OR_RETURN(JsonValue count, crawl.Member("layer_count"));
  TS_ASSIGN_OR_RETURN(report::Count layers, count.Integer());
  if (layers < 0 || layers > (report::Count(1) << 31)) {
    return count.Error("is not a layer count");
  }
  record.parts.layers.resize(static_cast<std::size_t>(layers));
  // Structure mode's not-requested operator report names the torch version.
  if (std::optional<JsonValue> version = crawl.OptionalMember("torch_version");
      version && version->node().is_string()) {
    record.parts.context.torch_version = version->node().get<std::string>();
  }
  TS_ASSIGN_OR_RETURN(JsonValue model, crawl.Member("model"));
  TS_ASSIGN_OR_RETURN(record.parts.model,
                      report::FromJson<report::ModelTensorTotals>(model));
  if (std::optional<JsonValue> diagnostics =
          crawl.OptionalMember("diagnostics")) {
    TS_ASSIGN_OR_RETURN(
        record.parts.module_diagnostics,
        report::FromJson<std::vector<report::Diagnostic>>(*diagnostics));
  }
  if (mode == "structure") return record;

  const std::size_t layer_count = record.parts.layers.size();
  TS_ASSIGN_OR_RETURN(JsonArray leaf_calls, crawl.Array("leaf_calls"));
  for (std::size_t i = 0; i < leaf_calls.size(); ++i) {
    TS_ASSIGN_OR_RETURN(JsonObject entry, leaf_calls.Item(i).Object());
    TS_ASSIGN_OR_RETURN(JsonValue layer, entry.Member("layer"));
    TS_ASSIGN_OR_RETURN(std::size_t index, LayerIndex(layer, layer_count));
    // The fields are read in place: copying each call's JSON costs more than
    // evaluating its formulas.
    CapturedModuleCall captured;
    TS_ASSIGN_OR_RETURN(captured.path, entry.String("path"));
    TS_ASSIGN_OR_RETURN(JsonValue module, entry.Member("module"));
    TS_ASSIGN_OR_RETURN(captured.module,
                        report::FromJson<formulas::ModuleDescription>(module));
    TS_ASSIGN_OR_RETURN(JsonValue call, entry.Member("call"));
    TS_ASSIGN_OR_RETURN(captured.call,
                        report::FromJson<formulas::ModuleCall>(call));
    record.leaf_calls.push_back(CapturedLeafCall{index, std::move(captured)});
  }
  if (!with_flops) return record;
  TS_ASSIGN_OR_RETURN(JsonValue flops, crawl.Member("operator_flops"));
  TS_ASSIGN_OR_RETURN(record.operator_flops,
                      report::FlopReportFromJson(flops.node(), flops.path()));

  if (crawl.Contains("layer_call_flops")) {
    TS_ASSIGN_OR_RETURN(JsonObject per_layer, crawl.Object("layer_call_flops"));
    for (auto& [label, value] : per_layer.Members()) {
      std::optional<report::Count> index = report::ParseCount(label);
      if (!index || *index < 0 ||
          *index >= static_cast<report::Count>(layer_count)) {
        return value.Error("is not a layer index");
      }
      TS_ASSIGN_OR_RETURN(
          record.layer_call_flops[static_cast<std::size_t>(*index)],
          report::LayerCallFlopsFromJson(value.node(), value.path()));
    }
  }
  return record;
}

}  // namespace

absl::StatusOr<CrawlRecord> CrawlRecordFromJson(const Json& node) {
  return ReadCrawlRecord(node, /*with_flops=*/true);
}

CrawlParts CrawlPartsOf(report::AnalysisReport report) {
  CrawlParts parts;
  // Before the members it reads are moved.
  if (report::IsIncomplete(report)) {
    parts.incomplete = report::IncompleteAnalysisMessage(report);
  }
  for (std::size_t i = 0; i < report.layers.size(); ++i) {
    if (report.layers[i].metrics.empty()) continue;
    parts.layer_metrics[static_cast<std::int64_t>(i)] =
        std::move(report.layers[i].metrics);
  }
  parts.operator_flops = std::move(report.operator_flops);
  parts.layer_operator_flops = std::move(report.layer_operator_flops);
  parts.totals = std::move(report.totals);
  parts.diagnostics = std::move(report.diagnostics);
  parts.analysis_mode = std::move(report.context.analysis_mode);
  return parts;
}

absl::StatusOr<CrawlRecord> MeasuredCrawlRecordFromJson(
    const Json& node, report::FlopReport operator_flops,
    std::map<std::size_t, report::LayerOperatorFlops> layer_call_flops) {
  TS_ASSIGN_OR_RETURN(CrawlRecord record,
                      ReadCrawlRecord(node, /*with_flops=*/false));
  if (node["mode"] != "full") {
    return absl::InvalidArgumentError(
        "crawl.mode: a measured crawl must be 'full'");
  }
  const std::size_t layer_count = record.parts.layers.size();
  for (auto& [index, flops] : layer_call_flops) {
    if (index >= layer_count) {
      return absl::InvalidArgumentError(absl::StrCat(
          "crawl.layer_call_flops.", index, ": is not a layer index"));
    }
    record.layer_call_flops[index] = std::move(flops);
  }
  record.operator_flops = std::move(operator_flops);
  return record;
}

absl::StatusOr<Json> EvaluateMeasuredCrawlParts(
    const Json& node, report::FlopReport operator_flops,
    std::map<std::size_t, report::LayerOperatorFlops> layer_call_flops) {
  TS_ASSIGN_OR_RETURN(CrawlRecord record, MeasuredCrawlRecordFromJson(
                                              node, std::move(operator_flops),
                                              std::move(layer_call_flops)));
  TS_ASSIGN_OR_RETURN(report::AnalysisReport report,
                      BuildAnalysisReport(std::move(record)));
  return report::ToJson(CrawlPartsOf(std::move(report)));
}

absl::StatusOr<Json> EvaluateCrawlParts(const Json& node) {
  TS_ASSIGN_OR_RETURN(CrawlRecord record, CrawlRecordFromJson(node));
  TS_ASSIGN_OR_RETURN(report::AnalysisReport report,
                      BuildAnalysisReport(std::move(record)));
  return report::ToJson(CrawlPartsOf(std::move(report)));
}

}  // namespace torchscan::crawl
