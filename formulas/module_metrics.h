// The module-formula metrics of one captured metric-leaf call, exactly as
// TorchScan 0.2's crawl_module records them (its per-call metric evaluation and
// diagnostics order): the metric entries of the call's layer record and the
// diagnostics, in the order the crawler appends them.
//
// Every front end (Python hooks, TorchScript, LibTorch modules) captures a
// call as a path, a ModuleDescription and a ModuleCall and hands it here;
// evaluating captured calls in completion order and concatenating their
// diagnostics reproduces the crawler's module diagnostics.

#ifndef TORCHSCAN_FORMULAS_MODULE_METRICS_H_
#define TORCHSCAN_FORMULAS_MODULE_METRICS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "formulas/formula_outcome.h"
#include "formulas/module_call.h"
#include "formulas/module_description.h"
#include "formulas/module_formulas.h"
#include "report/diagnostic.h"
#include "report/json_io.h"
#include "report/metric_result.h"

namespace torchscan::formulas {

inline constexpr absl::string_view kMissingMetricTensorMessage =
    "The module call did not expose both an input and output tensor.";

// Metric names, in the order a layer record lists them.
inline constexpr absl::string_view kModuleFlopsMetric = "module_flops";
inline constexpr absl::string_view kMacsMetric = "macs";
inline constexpr absl::string_view kDmasMetric = "dmas";
inline constexpr absl::string_view kReceptiveFieldMetric = "receptive_field";
inline constexpr absl::string_view kEffectiveStrideMetric = "effective_stride";
inline constexpr absl::string_view kEffectivePaddingMetric =
    "effective_padding";

struct NamedMetric {
  std::string name;
  report::MetricResult result;
};

struct ModuleMetrics {
  // module_flops, macs, dmas, then receptive_field, effective_stride,
  // effective_padding; only the first three (unavailable) when the call had
  // no input tensor or no output tensor.
  std::vector<NamedMetric> metrics;
  // In the crawler's order: module_flops, macs, dmas, receptive_field.
  std::vector<report::Diagnostic> diagnostics;
};

// Evaluates the four formulas on one call. module_flops sees the ordered
// inputs and (for MultiheadAttention) the whole output; macs, dmas and the
// receptive field the first input and output tensors. A non-OK status means
// the description is malformed or a count left 128 bits.
absl::StatusOr<ModuleMetrics> EvaluateModuleMetrics(
    const CapturedModuleCall& call);
absl::StatusOr<ModuleMetrics> EvaluateModuleMetrics(
    absl::string_view path, const ModuleDescription& module,
    const ModuleCall& call);

// The crawler's wrapping of one counting formula (its per-call metric
// evaluation): an error gives an unavailable metric and module_metric_error; a
// "Module type not supported" warning a partial metric and
// unsupported_module_metric (that warning's text); other warnings a partial
// metric and module_metric_warning (all texts joined by "; "); else a complete
// metric. Exposed so that counts from other sources follow the same rules.
report::MetricResult RecordCountMetric(
    absl::string_view metric, absl::string_view unit, absl::string_view path,
    const FormulaOutcome<Count>& outcome,
    std::vector<report::Diagnostic>& diagnostics);

// {"metrics": {name: MetricResult, ...}, "diagnostics": [...]}.
report::Json ModuleMetricsToJson(const ModuleMetrics& metrics);

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_MODULE_METRICS_H_
