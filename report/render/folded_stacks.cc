#include "report/render/folded_stacks.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "report/render/count_sum.h"

namespace torchscan::report::render {
namespace {

// stack -> self value.
using Stacks = std::map<std::string, Count>;

std::string Frame(absl::string_view name) {
  std::string frame(name);
  for (char& c : frame) {
    if (c == ';' || c == '\n' || c == '\r') c = '_';
  }
  return frame;
}

absl::Status AddTo(Stacks& stacks, const std::string& stack, Count value) {
  return AddCount(stacks[stack], value, stack);
}

// Adds the stacks of `node` and its subtree, and returns the FLOPs its
// subtree counted that `node` did not (NOTE in folded_stacks.h), for the
// enclosing modules to take from their own.
absl::StatusOr<Count> Fold(const ModuleNode& node,
                           const std::string& parent_stack, Stacks& stacks,
                           std::vector<std::string>& notes) {
  const std::string stack =
      parent_stack.empty() ? Frame(node.name)
                           : absl::StrCat(parent_stack, ";", Frame(node.name));
  Count children = 0;
  Count owed = 0;
  for (const ModuleNode& child : node.children) {
    TS_RETURN_IF_ERROR(AddCount(children, child.value, stack));
    TS_ASSIGN_OR_RETURN(Count child_owed, Fold(child, stack, stacks, notes));
    TS_RETURN_IF_ERROR(AddCount(owed, child_owed, stack));
  }
  Count own = node.value - children;
  if (own < 0) {
    notes.push_back(absl::StrCat(
        "'", node.path.empty() ? node.name : node.path,
        "': its submodules hold ", CountToString(-own),
        " more than it (a submodule called from outside it); the difference "
        "is taken from the enclosing modules' own values"));
    TS_RETURN_IF_ERROR(AddCount(owed, -own, stack));
    own = 0;
  }
  const Count paid = std::min(own, owed);
  TS_RETURN_IF_ERROR(AddTo(stacks, stack, own - paid));
  return owed - paid;
}

absl::StatusOr<Stacks> StacksOf(const ModuleTree& tree,
                                std::vector<std::string>& notes) {
  Stacks stacks;
  Count roots = 0;
  for (const ModuleNode& root : tree.roots) {
    TS_RETURN_IF_ERROR(AddCount(roots, root.value, "the roots"));
    TS_ASSIGN_OR_RETURN(Count owed, Fold(root, "", stacks, notes));
    if (owed > 0) {
      notes.push_back(absl::StrCat(
          "'", root.name, "': ", CountToString(owed),
          " counted in its submodules could not be taken from any enclosing "
          "module, so the lines add up to that much more than the total"));
    }
  }
  if (tree.total > roots) {
    TS_RETURN_IF_ERROR(AddTo(stacks, kNoModuleFrame, tree.total - roots));
  }
  return stacks;
}

}  // namespace

absl::StatusOr<FoldedStacks> FoldModuleTree(const ModuleTree& tree) {
  FoldedStacks folded;
  TS_ASSIGN_OR_RETURN(Stacks stacks, StacksOf(tree, folded.notes));
  folded.partial = tree.status != MetricStatus::kComplete;
  for (const auto& [stack, value] : stacks) {
    if (value == 0) continue;
    absl::StrAppend(&folded.text, stack, " ", CountToString(value), "\n");
  }
  return folded;
}

absl::StatusOr<FoldedStacks> FoldedOperatorFlops(const AnalysisReport& report) {
  if (!HasOperatorFlops(report)) {
    return absl::FailedPreconditionError(
        "the report has no operator FLOPs (it was made with "
        "mode='structure')");
  }
  TS_ASSIGN_OR_RETURN(ModuleTree tree, OperatorFlopsTree(report));
  return FoldModuleTree(tree);
}

absl::StatusOr<FoldedStacks> FoldedOperatorFlops(const FlopReport& report) {
  TS_ASSIGN_OR_RETURN(ModuleTree tree, OperatorFlopsTree(report));
  return FoldModuleTree(tree);
}

absl::StatusOr<FoldedStacks> FoldedOperatorFlopsDiff(
    const AnalysisReport& before, const AnalysisReport& after) {
  FoldedStacks folded;
  std::vector<Stacks> sides;
  for (const auto& [side, report] :
       {std::pair{"before", &before}, std::pair{"after", &after}}) {
    if (!HasOperatorFlops(*report)) {
      return absl::FailedPreconditionError(
          absl::StrCat("the ", side,
                       " report has no operator FLOPs (it was made with "
                       "mode='structure')"));
    }
    TS_ASSIGN_OR_RETURN(ModuleTree tree, OperatorFlopsTree(*report));
    std::vector<std::string> notes;
    TS_ASSIGN_OR_RETURN(Stacks stacks, StacksOf(tree, notes));
    folded.partial = folded.partial || tree.status != MetricStatus::kComplete;
    for (const std::string& note : notes) {
      folded.notes.push_back(absl::StrCat(side, ": ", note));
    }
    sides.push_back(std::move(stacks));
  }
  std::set<std::string> names;
  for (const Stacks& side : sides) {
    for (const auto& [stack, unused] : side) names.insert(stack);
  }
  for (const std::string& stack : names) {
    auto value = [&stack](const Stacks& side) {
      auto it = side.find(stack);
      return it == side.end() ? Count(0) : it->second;
    };
    const Count old_value = value(sides[0]);
    const Count new_value = value(sides[1]);
    if (old_value == 0 && new_value == 0) continue;
    absl::StrAppend(&folded.text, stack, " ", CountToString(old_value), " ",
                    CountToString(new_value), "\n");
  }
  return folded;
}

}  // namespace torchscan::report::render
