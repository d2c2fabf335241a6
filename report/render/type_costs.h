// Operator FLOPs by module type across the whole module tree, the page's
// sandwich view (html_report.h): where a model's FLOPs go by class rather
// than by path, and which classes run each operator.
//
// From a report's layer_operator_flops (each call's inclusive operator
// FLOPs, by operator), summed per module path first; a path's type is its
// first call's. For each type:
//   - flops: the inclusive FLOPs of its modules, counting a module inside
//     another of the same type once, in the outer one (nested Sequentials
//     are not counted twice);
//   - self_flops: the FLOPs its modules' own forwards ran, outside their
//     submodules: a path's FLOPs minus those of its nearest recorded
//     descendants, operator by operator;
//   - by_operator: the operators of `flops`.
// The self FLOPs of all types add up to the workload's operator FLOPs (its
// root's), each operator's self FLOPs by type to the operator's total.
//
// NOTE: as in module_tree.h, a module called by a module that does not own
// it counts under its own path, so a parent can hold less of an operator
// than its children; its self FLOPs of that operator are then 0, not
// negative.

#ifndef TORCHSCAN_REPORT_RENDER_TYPE_COSTS_H_
#define TORCHSCAN_REPORT_RENDER_TYPE_COSTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "report/analysis_report.h"
#include "report/count.h"
#include "report/metric_result.h"

namespace torchscan::report::render {

struct TypeCost {
  std::string type;
  // Module paths of this type, and their calls.
  std::int64_t modules = 0;
  std::int64_t calls = 0;
  Count flops = 0;
  Count self_flops = 0;
  // Partial when any call counted is: the values are lower bounds.
  MetricStatus status = MetricStatus::kComplete;
  std::map<std::string, Count> by_operator;

  bool operator==(const TypeCost&) const = default;
};

struct TypeCosts {
  // Largest `flops` first, then by type.
  std::vector<TypeCost> types;
  // Operator -> type -> self FLOPs of that operator in modules of the type.
  std::map<std::string, std::map<std::string, Count>> operator_types;
};

// Errors: a report without layer_operator_flops (TorchScan 0.2's, or
// structure mode: InvalidArgument), overflows.
absl::StatusOr<TypeCosts> CostsByModuleType(const AnalysisReport& report);

}  // namespace torchscan::report::render

#endif  // TORCHSCAN_REPORT_RENDER_TYPE_COSTS_H_
