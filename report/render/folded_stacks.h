// Folded stacks of operator FLOPs by module path: the text format of
// Brendan Gregg's flamegraph.pl (stackcollapse output), which speedscope,
// inferno and most flame-graph tools read. One line per stack,
//
//   ResNet;layer1;0;conv1 231211008
//
// the frames separated by ';', then a space and the stack's *self* value.
//
// The reports hold inclusive numbers (a module's FLOPs include its
// children's), so each line is derived: self(path) = inclusive(path) - the
// sum of inclusive(child) over its direct children by path. The self FLOPs of
// a container are the operators its own forward runs (a residual add, a
// flatten); FLOPs outside every module (measure_flops of a whole training
// step) form the stack "(no module)". The lines then add up to the report's
// total. Where a report says a value is partial, the line is its known part,
// a lower bound; FoldedStacks::partial says so.
//
// NOTE: paths are not calls (module_tree.h). When a forward calls a
// submodule of one of its submodules directly (`self.block.inner(x)` in the
// root's forward), inner's FLOPs are in the root and in block.inner but not
// in block, so block's children hold more than block. That difference is
// then taken from the nearest enclosing modules' own FLOPs, which is where
// the caller counted it when it is one of them, and the lines still add up
// to the total; a note names the module.

#ifndef TORCHSCAN_REPORT_RENDER_FOLDED_STACKS_H_
#define TORCHSCAN_REPORT_RENDER_FOLDED_STACKS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "report/analysis_report.h"
#include "report/flop_report.h"
#include "report/render/module_tree.h"

namespace torchscan::report::render {

// The frame of FLOPs outside every module.
inline constexpr char kNoModuleFrame[] = "(no module)";

struct FoldedStacks {
  // The lines, sorted by stack, each ending in '\n'; stacks whose value is 0
  // are left out. Frames are the path components, with ';' and line breaks
  // replaced by '_' so that every line parses.
  std::string text;
  // The report's FLOPs are partial: every value is a lower bound.
  bool partial = false;
  // Where a path's children hold more than the path (NOTE above); one
  // sentence each.
  std::vector<std::string> notes;
};

// The stacks of a ModuleTree (see above).
absl::StatusOr<FoldedStacks> FoldModuleTree(const ModuleTree& tree);

// Operator FLOPs of an analysis (OperatorFlopsTree). The root frame is the
// model's class name, as in a FlopReport's labels, so the stacks of
// crawl_module and of measure_flops of the same forward are the same lines.
// Error: a structure-mode report, which has no operator FLOPs.
absl::StatusOr<FoldedStacks> FoldedOperatorFlops(const AnalysisReport& report);
absl::StatusOr<FoldedStacks> FoldedOperatorFlops(const FlopReport& report);

// The differential form flamegraph.pl draws (difffolded.pl's output): each
// stack of either side as "stack BEFORE AFTER", 0 where a side lacks it.
absl::StatusOr<FoldedStacks> FoldedOperatorFlopsDiff(
    const AnalysisReport& before, const AnalysisReport& after);

}  // namespace torchscan::report::render

#endif  // TORCHSCAN_REPORT_RENDER_FOLDED_STACKS_H_
