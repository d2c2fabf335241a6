// Builds the AnalysisReport of one crawl from what a front end recorded.
//
// Every front end (Python hooks, TorchScript, LibTorch modules) records the
// same things: the layer records (structure, parameters, input and output
// metadata, `calls`), the metric-leaf calls in completion order (a
// ModuleDescription and the call's shapes), the model's parameter and buffer
// totals, and the operator FlopReport. This evaluates the module formulas on
// the leaf calls, fills in their layers' metrics, and assembles the report
// with report::AssembleAnalysisReport, so the reports of all front ends agree
// by construction.

#ifndef TORCHSCAN_FORMULAS_ANALYSIS_BUILDER_H_
#define TORCHSCAN_FORMULAS_ANALYSIS_BUILDER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "formulas/module_call.h"
#include "report/aggregate.h"
#include "report/analysis_report.h"
#include "report/flop_report.h"
#include "report/json_io.h"

namespace torchscan::formulas {

struct CapturedLeafCall {
  // Index of the call's record in CrawlRecord::parts.layers.
  std::size_t layer = 0;
  CapturedModuleCall call;
};

struct CrawlRecord {
  // Layers carry their `calls` metric; context, inputs and model totals are
  // final. Module diagnostics are filled in by BuildAnalysisReport.
  report::AnalysisParts parts;
  // Metric-leaf calls in completion order (the crawler's diagnostics order).
  std::vector<CapturedLeafCall> leaf_calls;
  // The operator FLOPs measured during the same forward call; nullopt for a
  // structure-mode crawl (no dispatch, no formulas).
  std::optional<report::FlopReport> operator_flops;
  // Each layer call's own operator FLOPs, by index into parts.layers; a layer
  // call that ran no operator has none (a complete zero).
  std::map<std::size_t, report::LayerOperatorFlops> layer_call_flops;
};

absl::StatusOr<report::AnalysisReport> BuildAnalysisReport(CrawlRecord record);

// The JSON form Python's crawler sends:
// {"mode": "full"|"structure", "context": {...}, "inputs": {...},
//  "layers": [...], "model": {"trainable_parameters": n, ...},
//  "leaf_calls": [{"layer": i, "path": ..., "module": {...}, "call": {...}}],
//  "operator_flops": {...FlopReport...},                    (full mode only)
//  "layer_call_flops": {"<i>": {"total": {...}, "by_operator": {...}}},
//  "diagnostics": [...]}  (optional: the front end's own diagnostics, listed
//                          before the module formulas' ones)
//                                                (full mode, optional)
absl::StatusOr<CrawlRecord> CrawlRecordFromJson(const report::Json& node);

// The pieces of the report that need computing, for a front end that keeps
// the layer records itself (Python's crawler, which would otherwise send every
// layer's metadata to C++ and parse it back). Input: a crawl record with
// "layer_count" (and "torch_version") instead of "context", "inputs" and
// "layers". Output:
// {"layer_metrics": {"<i>": {metric: MetricResult}},   (layers with metrics)
//  "operator_flops": {...}, "layer_operator_flops": [{"total", "by_operator"}],
//  "totals": {...}, "diagnostics": [...], "analysis_mode": str|null,
//  "incomplete": "<strict message>"|null}
absl::StatusOr<report::Json> EvaluateCrawlParts(const report::Json& node);

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_ANALYSIS_BUILDER_H_
