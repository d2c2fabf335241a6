// What one crawl recorded, and the AnalysisReport built from it.
//
// Every front end (Python hooks, TorchScript, LibTorch modules) records the
// same things: the layer records (structure, parameters, input and output
// metadata, `calls`), the metric-leaf calls in completion order (a
// ModuleDescription and the call's values), the model's parameter and buffer
// totals, and the operator FlopReport. BuildAnalysisReport evaluates the
// module formulas on the leaf calls, fills in their layers' metrics and
// assembles the report with report::AssembleAnalysisReport, so the reports
// of all front ends agree by construction. The C++ front ends and Python's
// nn.Module crawler (python/operators/crawl_recorder.cc) build a CrawlRecord
// directly; the ExportedProgram crawler sends one as Python objects
// (crawl_document.h).

#ifndef TORCHSCAN_CRAWL_CRAWL_RECORD_H_
#define TORCHSCAN_CRAWL_CRAWL_RECORD_H_

#include <cstddef>
#include <map>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "formulas/module_call.h"
#include "report/aggregate.h"
#include "report/analysis_report.h"
#include "report/flop_report.h"

namespace torchscan::crawl {

struct CapturedLeafCall {
  // Index of the call's record in CrawlRecord::parts.layers.
  std::size_t layer = 0;
  formulas::CapturedModuleCall call;
};

struct CrawlRecord {
  // Layers carry their `calls` metric; context, inputs and model totals are
  // final. module_diagnostics holds the front end's own diagnostics, if any;
  // BuildAnalysisReport appends the module formulas' ones.
  report::AnalysisParts parts;
  // Metric-leaf calls in completion order (the crawler's diagnostics order).
  std::vector<CapturedLeafCall> leaf_calls;
  // The operator FLOPs measured during the same forward call; nullopt for a
  // structure-mode crawl (no dispatch, no formulas).
  std::optional<report::FlopReport> operator_flops;
  // Each layer call's own operator FLOPs, by index into parts.layers; a layer
  // call that ran no operator has none (a complete zero). Only `total` and
  // `by_operator` are read: the layer gives the path and call index.
  std::map<std::size_t, report::LayerOperatorFlops> layer_call_flops;
};

// A structure-mode record gives AssembleStructureReport's report; a full one
// gets the module formulas' metrics and diagnostics, and per-layer operator
// FLOPs for every layer. InvalidArgument for a leaf call naming a layer the
// record does not have or a malformed module description.
absl::StatusOr<report::AnalysisReport> BuildAnalysisReport(CrawlRecord record);

}  // namespace torchscan::crawl

#endif  // TORCHSCAN_CRAWL_CRAWL_RECORD_H_
