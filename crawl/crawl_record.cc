#include "crawl/crawl_record.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "formulas/module_metrics.h"
#include "report/layer_report.h"
#include "report/metric_map.h"

namespace torchscan::crawl {

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
    TS_ASSIGN_OR_RETURN(formulas::ModuleMetrics metrics,
                        formulas::EvaluateModuleMetrics(leaf.call));
    for (formulas::NamedMetric& metric : metrics.metrics) {
      layers[leaf.layer].metrics.Set(std::move(metric.name),
                                     std::move(metric.result));
    }
    for (report::Diagnostic& diagnostic : metrics.diagnostics) {
      record.parts.module_diagnostics.push_back(std::move(diagnostic));
    }
  }
  // One layer call's operator FLOPs: the operator method, per module call.
  const report::MetricKind kind{"FLOPs", std::string(report::kModuleCallScope),
                                std::string(report::kOperatorFlopsMethod)};
  std::vector<report::LayerOperatorFlops> per_layer;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    auto it = record.layer_call_flops.find(i);
    report::LayerOperatorFlops entry =
        it != record.layer_call_flops.end()
            ? std::move(it->second)
            : report::LayerOperatorFlops{
                  .total =
                      report::MetricResult::Complete(report::Count(0), kind)};
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

}  // namespace torchscan::crawl
