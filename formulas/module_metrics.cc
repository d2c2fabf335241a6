#include "formulas/module_metrics.h"

#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "report/field_table.h"

namespace torchscan::formulas {
namespace {

using report::Diagnostic;
using report::MetricKind;
using report::MetricResult;

MetricKind ModuleCallKind(absl::string_view unit) {
  return MetricKind{std::string(unit), std::string(report::kModuleCallScope),
                    std::string(report::kModuleFormulaMethod)};
}

void AddDiagnostic(std::vector<Diagnostic>& diagnostics, absl::string_view code,
                   absl::string_view metric, absl::string_view path,
                   std::string message) {
  diagnostics.push_back(
      Diagnostic::ForPath(std::string(code), std::string(metric),
                          std::string(path), std::move(message)));
}

// Receptive field (the last step of the per-call evaluation): any warning at
// all makes the three values unavailable, with one unsupported_module_metric
// diagnostic.
void RecordReceptiveField(absl::string_view path,
                          const FormulaOutcome<ReceptiveField>& outcome,
                          ModuleMetrics& metrics) {
  const MetricKind kind = ModuleCallKind("elements");
  const std::string names[] = {std::string(kReceptiveFieldMetric),
                               std::string(kEffectiveStrideMetric),
                               std::string(kEffectivePaddingMetric)};
  if (!outcome.ok()) {
    AddDiagnostic(metrics.diagnostics, report::kModuleMetricError,
                  kReceptiveFieldMetric, path, outcome.error->ToString());
  } else if (!outcome.warnings.empty()) {
    AddDiagnostic(metrics.diagnostics, report::kUnsupportedModuleMetric,
                  kReceptiveFieldMetric, path,
                  absl::StrJoin(outcome.warnings, "; "));
  }
  if (!outcome.ok() || !outcome.warnings.empty()) {
    for (const std::string& name : names) {
      metrics.metrics.push_back({name, MetricResult::Unavailable(kind)});
    }
    return;
  }
  const ReceptiveField& field = *outcome.value;
  metrics.metrics.push_back(
      {names[0], MetricResult::Complete(field.receptive_field, kind)});
  metrics.metrics.push_back(
      {names[1], MetricResult::Complete(field.effective_stride, kind)});
  metrics.metrics.push_back(
      {names[2], MetricResult::Complete(field.effective_padding, kind)});
}

}  // namespace

MetricResult RecordCountMetric(absl::string_view metric, absl::string_view unit,
                               absl::string_view path,
                               const FormulaOutcome<Count>& outcome,
                               std::vector<Diagnostic>& diagnostics) {
  const MetricKind kind = ModuleCallKind(unit);
  if (!outcome.ok()) {
    AddDiagnostic(diagnostics, report::kModuleMetricError, metric, path,
                  outcome.error->ToString());
    return MetricResult::Unavailable(kind);
  }
  // NOTE: a count of work is never negative, and a report that says so does
  // not read back (report/metric_map.cc). TorchScan 0.2's formulas are plain
  // arithmetic on the module's attributes, so attributes torch itself would
  // refuse (groups=-1 set after construction, say) give a negative "count";
  // that is no lower bound of anything, so the metric is unavailable.
  if (*outcome.value < 0) {
    AddDiagnostic(diagnostics, report::kModuleMetricError, metric, path,
                  absl::StrCat("the ", unit, " formula gave a negative count (",
                               report::CountToString(*outcome.value),
                               "): the module's attributes are outside what "
                               "torch accepts"));
    return MetricResult::Unavailable(kind);
  }
  if (outcome.warnings.empty())
    return MetricResult::Complete(*outcome.value, kind);
  // The first "not supported" warning names the problem; otherwise all
  // warnings together.
  const std::string* unsupported = nullptr;
  for (const std::string& warning : outcome.warnings) {
    if (absl::StrContains(warning, kModuleNotSupported)) {
      unsupported = &warning;
      break;
    }
  }
  if (unsupported != nullptr) {
    AddDiagnostic(diagnostics, report::kUnsupportedModuleMetric, metric, path,
                  *unsupported);
  } else {
    AddDiagnostic(diagnostics, report::kModuleMetricWarning, metric, path,
                  absl::StrJoin(outcome.warnings, "; "));
  }
  return MetricResult::Partial(*outcome.value, kind);
}

absl::StatusOr<ModuleMetrics> EvaluateModuleMetrics(
    absl::string_view path, const ModuleDescription& module,
    const ModuleCall& call) {
  ModuleMetrics metrics;
  constexpr std::pair<absl::string_view, absl::string_view> kCounts[] = {
      {kModuleFlopsMetric, "FLOPs"},
      {kMacsMetric, "MACs"},
      {kDmasMetric, "DMAs"}};
  if (FirstTensor(call.inputs) == nullptr ||
      FirstTensor(call.output) == nullptr) {
    for (const auto& [name, unit] : kCounts) {
      metrics.metrics.push_back(
          {std::string(name), MetricResult::Unavailable(ModuleCallKind(unit))});
      AddDiagnostic(metrics.diagnostics, report::kMissingMetricTensor, name,
                    path, std::string(kMissingMetricTensorMessage));
    }
    return metrics;
  }
  using Formula = absl::StatusOr<FormulaOutcome<Count>> (*)(
      const ModuleDescription&, const ModuleCall&);
  constexpr Formula kFormulas[] = {&ModuleFlops, &ModuleMacs, &ModuleDmas};
  for (std::size_t i = 0; i < 3; ++i) {
    TS_ASSIGN_OR_RETURN(FormulaOutcome<Count> outcome,
                        kFormulas[i](module, call));
    const auto& [name, unit] = kCounts[i];
    metrics.metrics.push_back(
        {std::string(name),
         RecordCountMetric(name, unit, path, outcome, metrics.diagnostics)});
  }
  TS_ASSIGN_OR_RETURN(FormulaOutcome<ReceptiveField> field,
                      ModuleReceptiveField(module, call));
  RecordReceptiveField(path, field, metrics);
  return metrics;
}

absl::StatusOr<ModuleMetrics> EvaluateModuleMetrics(
    const CapturedModuleCall& call) {
  return EvaluateModuleMetrics(call.path, call.module, call.call);
}

report::Json ModuleMetricsToJson(const ModuleMetrics& metrics) {
  report::Json node = report::Json::object();
  node["metrics"] = report::Json::object();
  for (const NamedMetric& metric : metrics.metrics) {
    node["metrics"][metric.name] = report::ToJson(metric.result);
  }
  node["diagnostics"] = report::ToJson(metrics.diagnostics);
  return node;
}

}  // namespace torchscan::formulas
