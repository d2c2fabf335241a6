#include "report/aggregate.h"

#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "report/python_text.h"

namespace torchscan::report {
namespace {

MetricKind ModelKind(absl::string_view unit) {
  return MetricKind{std::string(unit), "model", "pytorch"};
}

MetricKind ForwardKind(absl::string_view unit, absl::string_view method) {
  return MetricKind{std::string(unit), "forward", std::string(method)};
}

absl::Status BuildTotals(AnalysisReport& report,
                         const ModelTensorTotals& model) {
  // A negative size would make a report our own parser rejects.
  for (Count size :
       {model.trainable_parameters, model.frozen_parameters,
        model.parameter_bytes, model.buffer_elements, model.buffer_bytes}) {
    if (size < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("model tensor totals must not be negative, got ",
                       CountToString(size)));
    }
  }
  Count parameters = model.trainable_parameters;
  TS_RETURN_IF_ERROR(
      AddCount(parameters, model.frozen_parameters, "parameters"));
  report.totals.Set("parameters",
                    MetricResult::Complete(parameters, ModelKind("elements")));
  report.totals.Set("trainable_parameters",
                    MetricResult::Complete(model.trainable_parameters,
                                           ModelKind("elements")));
  report.totals.Set(
      "frozen_parameters",
      MetricResult::Complete(model.frozen_parameters, ModelKind("elements")));
  report.totals.Set(
      "parameter_bytes",
      MetricResult::Complete(model.parameter_bytes, ModelKind("bytes")));
  report.totals.Set(
      "buffer_elements",
      MetricResult::Complete(model.buffer_elements, ModelKind("elements")));
  report.totals.Set("buffer_bytes", MetricResult::Complete(model.buffer_bytes,
                                                           ModelKind("bytes")));
  TS_ASSIGN_OR_RETURN(
      MetricResult module_flops,
      AggregateLayerMetric(report.layers, "module_flops", "FLOPs"));
  TS_ASSIGN_OR_RETURN(MetricResult macs,
                      AggregateLayerMetric(report.layers, "macs", "MACs"));
  TS_ASSIGN_OR_RETURN(MetricResult dmas,
                      AggregateLayerMetric(report.layers, "dmas", "DMAs"));
  report.totals.Set("module_flops", std::move(module_flops));
  report.totals.Set("operator_flops", report.operator_flops.total);
  report.totals.Set("macs", std::move(macs));
  report.totals.Set("dmas", std::move(dmas));
  return absl::OkStatus();
}

AnalysisReport StartReport(AnalysisParts& parts, FlopReport operator_flops) {
  AnalysisReport report;
  report.context = std::move(parts.context);
  report.inputs = std::move(parts.inputs);
  report.layers = std::move(parts.layers);
  report.operator_flops = std::move(operator_flops);
  // An analysis's operator_flops keeps TorchScan 0.2's members: the
  // mask-aware count, the splits by precision and the bytes moved belong to
  // measure_flops reports.
  report.operator_flops.mask_aware.reset();
  report.operator_flops.by_precision.clear();
  report.operator_flops.by_operator_precision.clear();
  report.operator_flops.bytes.reset();
  report.diagnostics = std::move(parts.module_diagnostics);
  return report;
}

}  // namespace

absl::StatusOr<MetricResult> AggregateMetrics(
    absl::Span<const MetricResult* const> parts, MetricKind kind,
    absl::string_view what) {
  if (parts.empty()) return MetricResult::Unavailable(std::move(kind));
  bool all_complete = true;
  bool any_known = false;
  // Python's sum() keeps an exact int until the first float.
  Count integer_sum = 0;
  std::optional<double> float_sum;
  for (const MetricResult* part : parts) {
    all_complete = all_complete && part->is_complete();
    if (!part->known_value().has_value()) continue;
    any_known = true;
    const MetricValue& value = *part->known_value();
    if (std::holds_alternative<std::string>(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": cannot add the non-numeric value ",
                       DescribeMetricValue(value)));
    }
    if (const Count* count = std::get_if<Count>(&value); count && !float_sum) {
      TS_RETURN_IF_ERROR(AddCount(integer_sum, *count, what));
      continue;
    }
    if (!float_sum) float_sum = CountToDouble(integer_sum);
    const Count* count = std::get_if<Count>(&value);
    *float_sum += count ? CountToDouble(*count) : std::get<double>(value);
  }
  if (!any_known) return MetricResult::Unavailable(std::move(kind));
  MetricValue total(integer_sum);
  if (float_sum) total.emplace<double>(*float_sum);
  return all_complete
             ? MetricResult::Complete(std::move(total), std::move(kind))
             : MetricResult::Partial(std::move(total), std::move(kind));
}

absl::StatusOr<MetricResult> AggregateLayerMetric(
    absl::Span<const LayerReport> layers, absl::string_view name,
    absl::string_view unit) {
  std::vector<const MetricResult*> parts;
  for (const LayerReport& layer : layers) {
    if (const MetricResult* result = layer.metrics.Find(name)) {
      parts.push_back(result);
    }
  }
  return AggregateMetrics(parts, ForwardKind(unit, kModuleFormulaMethod),
                          absl::StrCat("totals.", name));
}

absl::StatusOr<AnalysisReport> AssembleAnalysisReport(
    AnalysisParts parts, FlopReport operator_flops) {
  AnalysisReport report = StartReport(parts, std::move(operator_flops));
  TS_RETURN_IF_ERROR(BuildTotals(report, parts.model));
  for (const Diagnostic& diagnostic : report.operator_flops.diagnostics) {
    report.diagnostics.push_back(diagnostic);
  }
  return report;
}

absl::StatusOr<AnalysisReport> AssembleStructureReport(AnalysisParts parts) {
  std::string torch_version = parts.context.torch_version;
  AnalysisReport report =
      StartReport(parts, NotRequestedFlopReport(std::move(torch_version)));
  TS_RETURN_IF_ERROR(BuildTotals(report, parts.model));
  report.context.analysis_mode = std::string(kStructureMode);
  // Replaced in place: the keys keep TorchScan's order.
  for (auto [name, unit] :
       {std::pair{"module_flops", "FLOPs"}, std::pair{"macs", "MACs"},
        std::pair{"dmas", "DMAs"}}) {
    report.totals.Set(name, MetricResult::Unavailable(
                                ForwardKind(unit, kNotRequestedMethod)));
  }
  return report;
}

FlopReport NotRequestedFlopReport(std::string torch_version) {
  FlopReport report;
  report.torch_version = std::move(torch_version);
  report.method = std::string(kNotRequestedMethod);
  report.total = MetricResult::Unavailable(
      MetricKind{"FLOPs", "workload", std::string(kNotRequestedMethod)});
  return report;
}

}  // namespace torchscan::report
