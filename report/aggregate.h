// Totals from parts, with status propagation (reference 4.8), and the
// assembly of a whole AnalysisReport (reference 2.3, 4.1 step 5).

#ifndef TORCHSCAN_REPORT_AGGREGATE_H_
#define TORCHSCAN_REPORT_AGGREGATE_H_

#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "report/analysis_report.h"
#include "report/count.h"
#include "report/diagnostic.h"
#include "report/field_table.h"
#include "report/flop_report.h"
#include "report/metric_result.h"

namespace torchscan::report {

// The method of a metric structure mode did not compute.
inline constexpr absl::string_view kNotRequestedMethod = "not_requested";

// Sums `parts` into one result of `kind`:
//   no parts                      -> unavailable
//   all complete                  -> complete, the sum
//   some known (complete/partial) -> partial, the sum of the known values
//   none known                    -> unavailable
// Sums as Python's sum() does, left to right: integers exactly (an overflow
// of 128 bits is an OutOfRange error naming `what`, never a wrapped value),
// and in double arithmetic from the first float on. A string value is an
// InvalidArgument error.
absl::StatusOr<MetricResult> AggregateMetrics(
    absl::Span<const MetricResult* const> parts, MetricKind kind,
    absl::string_view what);

// The forward total of a module-formula metric ("module_flops", "macs",
// "dmas") over every layer record that has it: unit `unit`, scope "forward",
// method "torchscan_module_formula".
absl::StatusOr<MetricResult> AggregateLayerMetric(
    absl::Span<const LayerReport> layers, absl::string_view name,
    absl::string_view unit);

// De-duplicated parameter and buffer sizes of the whole model, including
// modules that were never called.
struct ModelTensorTotals {
  Count trainable_parameters = 0;
  Count frozen_parameters = 0;
  Count parameter_bytes = 0;
  Count buffer_elements = 0;
  Count buffer_bytes = 0;

  bool operator==(const ModelTensorTotals&) const = default;
  static constexpr auto kFields = std::make_tuple(
      FieldAs<NonNegativeCountCodec>("trainable_parameters",
                                     &ModelTensorTotals::trainable_parameters),
      FieldAs<NonNegativeCountCodec>("frozen_parameters",
                                     &ModelTensorTotals::frozen_parameters),
      FieldAs<NonNegativeCountCodec>("parameter_bytes",
                                     &ModelTensorTotals::parameter_bytes),
      FieldAs<NonNegativeCountCodec>("buffer_elements",
                                     &ModelTensorTotals::buffer_elements),
      FieldAs<NonNegativeCountCodec>("buffer_bytes",
                                     &ModelTensorTotals::buffer_bytes));
  // A crawl record's "model" (crawl/crawl_document.h) has always accepted keys
  // of a newer front end.
  static constexpr bool kAcceptsUnknownKeys = true;
};

// What an analysis collected before its totals exist.
struct AnalysisParts {
  ReportContext context;
  InputsMetadata inputs;
  std::vector<LayerReport> layers;
  ModelTensorTotals model;
  // Module-formula diagnostics, in metric-population order.
  std::vector<Diagnostic> module_diagnostics;
};

// A full analysis: totals in TorchScan's order (kTotalNames) with
// module_flops / macs / dmas aggregated over the layers and operator_flops a
// copy of `operator_flops.total`; diagnostics are the module diagnostics
// followed by the operator ones.
absl::StatusOr<AnalysisReport> AssembleAnalysisReport(
    AnalysisParts parts, FlopReport operator_flops);

// A structure-mode analysis, as TorchScan 0.2.0 emits it: context gains
// analysis_mode "structure", operator_flops is NotRequestedFlopReport, and
// module_flops / operator_flops / macs / dmas totals are unavailable with
// method "not_requested".
absl::StatusOr<AnalysisReport> AssembleStructureReport(AnalysisParts parts);

// The operator report of an analysis that did not count operators.
FlopReport NotRequestedFlopReport(std::string torch_version);

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_AGGREGATE_H_
