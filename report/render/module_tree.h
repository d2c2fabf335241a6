// ModuleTree: one metric of a report summed over the module hierarchy, by
// module path, for the pictures of a report (html_report.h) and its folded
// stacks (folded_stacks.h).
//
// A node is one module path ("layer1.0.conv1"), whatever the number of its
// calls: its value is the sum over those calls, and it is inclusive (a parent
// holds its children). Statuses follow AggregateMetrics (aggregate.h): a node
// is complete when every part is, partial (its value a lower bound) when some
// part is known, unavailable when none is. Children keep the order of their
// first call.
//
// NOTE: the hierarchy is the module paths', not the calls'. A module that
// another module's forward calls without owning it (a shared activation, a
// weight-tied head) counts under its own path, so a parent can hold less than
// its children; FoldedStacks says so where it matters (folded_stacks.h).

#ifndef TORCHSCAN_REPORT_RENDER_MODULE_TREE_H_
#define TORCHSCAN_REPORT_RENDER_MODULE_TREE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/analysis_report.h"
#include "report/count.h"
#include "report/flop_report.h"
#include "report/metric_result.h"

namespace torchscan::report::render {

// Trees are built, drawn and folded recursively: deeper module paths are an
// InvalidArgument error (Python's own recursion limit is 1000 frames).
inline constexpr int kMaxModuleDepth = 1000;

struct ModuleNode {
  // The last path component; a root's is its class name ("ResNet").
  std::string name;
  // The dotted module path; "" for a model's root.
  std::string path;
  // The class name of the module's first call; "" for a path no layer call
  // was recorded for (only its descendants were called).
  std::string type;
  MetricStatus status = MetricStatus::kUnavailable;
  // The known value: exact when complete, a lower bound when partial, 0 when
  // unavailable.
  Count value = 0;
  std::vector<ModuleNode> children;
};

struct ModuleTree {
  // What the tree measures: "FLOPs", "MACs", "parameters", "B" (bytes).
  std::string unit;
  // Usually one, the model. A FlopReport may hold several (a workload that
  // calls two top-level modules) or none (measure_flops with
  // track_modules=False).
  std::vector<ModuleNode> roots;
  // The whole workload: at least the sum of the roots; the difference was
  // counted outside every module (a loss, an optimizer step).
  MetricStatus status = MetricStatus::kUnavailable;
  Count total = 0;
};

// Operator FLOPs per module path: from the report's layer_operator_flops
// (each call's own FLOPs and status), or, for a report without them
// (TorchScan 0.2's), from operator_flops.by_module as for a FlopReport. The
// total is totals.operator_flops. Errors: an empty analysis (no layers),
// overflows.
absl::StatusOr<ModuleTree> OperatorFlopsTree(const AnalysisReport& report);

// A FlopReport's by_module ("ResNet", "ResNet.layer1", ...). Its counts carry
// no status of their own: when the report's total is partial, an uncounted
// operator may have run in any module, so every node is partial too.
absl::StatusOr<ModuleTree> OperatorFlopsTree(const FlopReport& report);

// The same of a FlopReport's bytes moved (bytes.by_module, unit "B"), every
// node partial when the bytes are. InvalidArgument for a report without
// bytes (written before they existed).
absl::StatusOr<ModuleTree> BytesMovedTree(const FlopReport& report);

// A module-formula metric ("module_flops", "macs" or "dmas") of the layers
// that carry it (TorchScan computes them for leaf modules), summed up the
// tree. Errors: a value that is not an integer count, overflows.
absl::StatusOr<ModuleTree> ModuleFormulaTree(const AnalysisReport& report,
                                             absl::string_view metric);

// Parameters (trainable + frozen; unit "parameters") attributed to each layer
// call, summed up the tree; shared parameters count once, where first seen, as
// in the report.
absl::StatusOr<ModuleTree> ParameterTree(const AnalysisReport& report);

// Parameter bytes + buffer bytes (unit "B"), likewise.
absl::StatusOr<ModuleTree> TensorBytesTree(const AnalysisReport& report);

// Whether the report computed operator FLOPs / module formulas at all: false
// in structure mode (method "not_requested").
bool HasOperatorFlops(const AnalysisReport& report);
bool HasModuleFormulas(const AnalysisReport& report);

}  // namespace torchscan::report::render

#endif  // TORCHSCAN_REPORT_RENDER_MODULE_TREE_H_
