#include "report/render/folded_stacks.h"

#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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

absl::Status Accumulate(Count& sum, Count value, absl::string_view what) {
  std::optional<Count> next = CheckedAdd(sum, value);
  if (!next) {
    return absl::OutOfRangeError(
        absl::StrCat(what, " overflows a 128-bit integer"));
  }
  sum = *next;
  return absl::OkStatus();
}

absl::Status AddTo(Stacks& stacks, const std::string& stack, Count value) {
  return Accumulate(stacks[stack], value, stack);
}

absl::Status Fold(const ModuleNode& node, const std::string& parent_stack,
                  Stacks& stacks, std::vector<std::string>& notes) {
  const std::string stack =
      parent_stack.empty() ? Frame(node.name)
                           : absl::StrCat(parent_stack, ";", Frame(node.name));
  Count children = 0;
  for (const ModuleNode& child : node.children) {
    if (absl::Status status = Accumulate(children, child.value, stack);
        !status.ok()) {
      return status;
    }
    if (absl::Status status = Fold(child, stack, stacks, notes); !status.ok()) {
      return status;
    }
  }
  if (children > node.value) {
    notes.push_back(absl::StrCat(
        "'", node.path.empty() ? node.name : node.path, "': its submodules ",
        "hold ", CountToString(children - node.value),
        " more than it (a submodule also called from outside it); its own "
        "value is written as 0, so the lines add up to more than the total"));
    return absl::OkStatus();
  }
  return AddTo(stacks, stack, node.value - children);
}

absl::StatusOr<Stacks> StacksOf(const ModuleTree& tree,
                                std::vector<std::string>& notes) {
  Stacks stacks;
  Count roots = 0;
  for (const ModuleNode& root : tree.roots) {
    if (absl::Status status = Accumulate(roots, root.value, "the roots");
        !status.ok()) {
      return status;
    }
    if (absl::Status status = Fold(root, "", stacks, notes); !status.ok()) {
      return status;
    }
  }
  if (tree.total > roots) {
    if (absl::Status status = AddTo(stacks, kNoModuleFrame, tree.total - roots);
        !status.ok()) {
      return status;
    }
  }
  if (tree.status != MetricStatus::kComplete) {
    notes.insert(notes.begin(),
                 absl::StrCat("the ", tree.unit,
                              " are partial: each value is a lower bound (the "
                              "report's diagnostics name what is missing)"));
  }
  return stacks;
}

}  // namespace

absl::StatusOr<FoldedStacks> FoldModuleTree(const ModuleTree& tree) {
  FoldedStacks folded;
  absl::StatusOr<Stacks> stacks = StacksOf(tree, folded.notes);
  if (!stacks.ok()) return stacks.status();
  for (const auto& [stack, value] : *stacks) {
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
  absl::StatusOr<ModuleTree> tree = OperatorFlopsTree(report);
  if (!tree.ok()) return tree.status();
  return FoldModuleTree(*tree);
}

absl::StatusOr<FoldedStacks> FoldedOperatorFlops(const FlopReport& report) {
  absl::StatusOr<ModuleTree> tree = OperatorFlopsTree(report);
  if (!tree.ok()) return tree.status();
  return FoldModuleTree(*tree);
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
    absl::StatusOr<ModuleTree> tree = OperatorFlopsTree(*report);
    if (!tree.ok()) return tree.status();
    std::vector<std::string> notes;
    absl::StatusOr<Stacks> stacks = StacksOf(*tree, notes);
    if (!stacks.ok()) return stacks.status();
    for (const std::string& note : notes) {
      folded.notes.push_back(absl::StrCat(side, ": ", note));
    }
    sides.push_back(*std::move(stacks));
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
