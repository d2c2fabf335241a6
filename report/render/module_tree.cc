#include "report/render/module_tree.h"

#include <map>
#include <utility>
#include <variant>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "report/aggregate.h"
#include "report/metric_map.h"
#include "report/render/count_sum.h"

namespace torchscan::report::render {
namespace {

// One known-or-not number that feeds a node.
struct Part {
  MetricStatus status = MetricStatus::kUnavailable;
  Count value = 0;
};

absl::StatusOr<Part> PartOf(const MetricResult& result,
                            absl::string_view field) {
  Part part{result.status(), 0};
  if (!result.known_value()) return part;
  const Count* count = std::get_if<Count>(&*result.known_value());
  if (count == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": expected an integer count, got ",
                     DescribeMetricValue(*result.known_value())));
  }
  part.value = *count;
  return part;
}

// AggregateMetrics' rules (aggregate.h) on exact counts.
absl::StatusOr<Part> Aggregate(const std::vector<Part>& parts,
                               absl::string_view what) {
  if (parts.empty()) return Part{};
  bool all_complete = true;
  bool any_known = false;
  Count sum = 0;
  for (const Part& part : parts) {
    all_complete = all_complete && part.status == MetricStatus::kComplete;
    if (part.status == MetricStatus::kUnavailable) continue;
    any_known = true;
    TS_RETURN_IF_ERROR(AddCount(sum, part.value, what));
  }
  if (!any_known) return Part{};
  return Part{all_complete ? MetricStatus::kComplete : MetricStatus::kPartial,
              sum};
}

// How a path's own parts relate to its children's values.
enum class OwnParts {
  // Each call's number already holds the calls nested in it (operator FLOPs
  // by module scope): children refine the parent, they do not add to it.
  kInclusive,
  // Each call's number is its own only (module formulas of leaf modules,
  // parameters attributed to the module that owns them): parent = own +
  // children.
  kExclusive,
};

// A trie of module paths, built in call order.
class TreeBuilder {
 public:
  TreeBuilder(std::string root_name, OwnParts own) : own_(own) {
    slots_.push_back(Slot{std::move(root_name), "", "", {}, {}});
    index_[""] = 0;
  }

  // Records `type` as the class of `path` if none is known yet.
  void NoteType(absl::string_view path, absl::string_view type) {
    Slot& slot = slots_[At(path)];
    if (slot.type.empty()) slot.type = std::string(type);
  }

  void AddPart(absl::string_view path, Part part) {
    slots_[At(path)].parts.push_back(part);
  }

  absl::StatusOr<ModuleNode> Build(absl::string_view what) const {
    return Build(0, 0, what);
  }

 private:
  struct Slot {
    std::string name;
    std::string path;
    std::string type;
    std::vector<Part> parts;
    std::vector<std::size_t> children;
  };

  // The slot of `path`, created with its missing ancestors; iterative, so
  // that no path is too deep to record (Build rejects it).
  std::size_t At(absl::string_view path) {
    if (auto it = index_.find(std::string(path)); it != index_.end()) {
      return it->second;
    }
    std::size_t parent = 0;
    for (std::size_t start = 0;;) {
      const std::size_t dot = path.find('.', start);
      const std::string prefix(path.substr(0, dot));
      auto it = index_.find(prefix);
      if (it == index_.end()) {
        const absl::string_view name = path.substr(
            start, dot == absl::string_view::npos ? dot : dot - start);
        slots_.push_back(Slot{std::string(name), prefix, "", {}, {}});
        slots_[parent].children.push_back(slots_.size() - 1);
        it = index_.emplace(prefix, slots_.size() - 1).first;
      }
      parent = it->second;
      if (dot == absl::string_view::npos) return parent;
      start = dot + 1;
    }
  }

  absl::StatusOr<ModuleNode> Build(std::size_t index, int depth,
                                   absl::string_view what) const {
    const Slot& slot = slots_[index];
    if (depth > kMaxModuleDepth) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": module path '", slot.path,
                       "' is nested deeper than ", kMaxModuleDepth, " levels"));
    }
    ModuleNode node{slot.name, slot.path, slot.type};
    std::vector<Part> parts = slot.parts;
    const bool own_is_whole = own_ == OwnParts::kInclusive && !parts.empty();
    for (std::size_t child : slot.children) {
      TS_ASSIGN_OR_RETURN(ModuleNode built, Build(child, depth + 1, what));
      if (!own_is_whole) parts.push_back(Part{built.status, built.value});
      node.children.push_back(std::move(built));
    }
    TS_ASSIGN_OR_RETURN(Part total, Aggregate(parts, what));
    node.status = total.status;
    node.value = total.value;
    return node;
  }

  OwnParts own_;
  std::vector<Slot> slots_;
  std::map<std::string, std::size_t> index_;
};

// The class name of the root layer, the name TorchScan's FLOP counter gives
// the model ("ResNet"); "model" if the report has no root layer.
std::string RootName(const AnalysisReport& report) {
  for (const LayerReport& layer : report.layers) {
    if (layer.path.empty()) return layer.type;
  }
  return "model";
}

TreeBuilder LayerTree(const AnalysisReport& report, OwnParts own) {
  TreeBuilder builder(RootName(report), own);
  for (const LayerReport& layer : report.layers) {
    builder.NoteType(layer.path, layer.type);
  }
  return builder;
}

absl::Status RequireLayers(const AnalysisReport& report) {
  if (report.layers.empty()) {
    return absl::InvalidArgumentError("the report has no layers");
  }
  return absl::OkStatus();
}

absl::StatusOr<ModuleTree> OneRootTree(const TreeBuilder& builder,
                                       std::string unit,
                                       absl::string_view what) {
  TS_ASSIGN_OR_RETURN(ModuleNode root, builder.Build(what));
  ModuleTree tree{std::move(unit)};
  tree.status = root.status;
  tree.total = root.value;
  tree.roots.push_back(std::move(root));
  return tree;
}

// A layer metric whose value is a plain count per call.
template <typename CountOf>
absl::StatusOr<ModuleTree> CountTree(const AnalysisReport& report,
                                     std::string unit, absl::string_view what,
                                     CountOf count_of) {
  TS_RETURN_IF_ERROR(RequireLayers(report));
  TreeBuilder builder = LayerTree(report, OwnParts::kExclusive);
  for (const LayerReport& layer : report.layers) {
    TS_ASSIGN_OR_RETURN(Count count, count_of(layer));
    builder.AddPart(layer.path, Part{MetricStatus::kComplete, count});
  }
  return OneRootTree(builder, std::move(unit), what);
}

// by_module labels are "<root class>[.<path>]"; `types` (path -> class)
// names the nodes when a report's layers are known.
absl::StatusOr<ModuleTree> LabelTree(
    const std::map<std::string, Count>& by_module, const MetricResult& sum,
    absl::string_view unit, absl::string_view field,
    const std::map<std::string, std::string, std::less<>>& types) {
  TS_ASSIGN_OR_RETURN(Part total, PartOf(sum, absl::StrCat(field, ".total")));
  const MetricStatus status = total.status == MetricStatus::kComplete
                                  ? MetricStatus::kComplete
                                  : MetricStatus::kPartial;
  // Root label -> its builder, in label order (by_module is sorted).
  std::vector<std::pair<std::string, TreeBuilder>> roots;
  for (const auto& [label, flops] : by_module) {
    std::pair<std::string, std::string> split =
        absl::StrSplit(label, absl::MaxSplits('.', 1));
    auto& [root_name, path] = split;
    auto root = roots.begin();
    while (root != roots.end() && root->first != root_name) ++root;
    if (root == roots.end()) {
      roots.emplace_back(root_name,
                         TreeBuilder(root_name, OwnParts::kInclusive));
      root = roots.end() - 1;
      root->second.NoteType("", root_name);
    }
    if (auto type = types.find(path); type != types.end()) {
      root->second.NoteType(path, type->second);
    }
    root->second.AddPart(path, Part{status, flops});
  }
  ModuleTree tree{std::string(unit)};
  tree.status = total.status;
  tree.total = total.value;
  for (const auto& [unused, builder] : roots) {
    TS_ASSIGN_OR_RETURN(ModuleNode root,
                        builder.Build(absl::StrCat(field, ".by_module")));
    tree.roots.push_back(std::move(root));
  }
  return tree;
}

}  // namespace

bool HasOperatorFlops(const AnalysisReport& report) {
  const MetricResult* total = report.totals.Find("operator_flops");
  return total != nullptr && total->method() != kNotRequestedMethod;
}

bool HasModuleFormulas(const AnalysisReport& report) {
  const MetricResult* total = report.totals.Find("module_flops");
  return total != nullptr && total->method() != kNotRequestedMethod;
}

absl::StatusOr<ModuleTree> OperatorFlopsTree(const AnalysisReport& report) {
  TS_RETURN_IF_ERROR(RequireLayers(report));
  if (!report.layer_operator_flops) {
    std::map<std::string, std::string, std::less<>> types;
    for (const LayerReport& layer : report.layers) {
      types.emplace(layer.path, layer.type);
    }
    return LabelTree(report.operator_flops.by_module,
                     report.operator_flops.total, "FLOPs", "operator_flops",
                     types);
  }
  TreeBuilder builder = LayerTree(report, OwnParts::kInclusive);
  for (const LayerOperatorFlops& entry : *report.layer_operator_flops) {
    TS_ASSIGN_OR_RETURN(
        Part part, PartOf(entry.total, absl::StrCat("layer_operator_flops['",
                                                    entry.path, "']")));
    builder.AddPart(entry.path, part);
  }
  TS_ASSIGN_OR_RETURN(ModuleTree tree,
                      OneRootTree(builder, "FLOPs", "layer_operator_flops"));
  TS_ASSIGN_OR_RETURN(
      Part total, PartOf(report.operator_flops.total, "operator_flops.total"));
  // The workload is the root's forward call; the report's total says
  // whether anything ran outside it.
  if (total.status != MetricStatus::kUnavailable && total.value >= tree.total) {
    tree.status = total.status;
    tree.total = total.value;
  }
  return tree;
}

absl::StatusOr<ModuleTree> OperatorFlopsTree(const FlopReport& report) {
  return LabelTree(report.by_module, report.total, "FLOPs", "operator_flops",
                   {});
}

absl::StatusOr<ModuleTree> BytesMovedTree(const FlopReport& report) {
  if (!report.bytes) {
    return absl::InvalidArgumentError("the report has no bytes moved");
  }
  return LabelTree(report.bytes->by_module, report.bytes->total, "B", "bytes",
                   {});
}

absl::StatusOr<ModuleTree> ModuleFormulaTree(const AnalysisReport& report,
                                             absl::string_view metric) {
  TS_RETURN_IF_ERROR(RequireLayers(report));
  TreeBuilder builder = LayerTree(report, OwnParts::kExclusive);
  std::string unit;
  for (std::size_t i = 0; i < report.layers.size(); ++i) {
    const LayerReport& layer = report.layers[i];
    const MetricResult* result = layer.metrics.Find(metric);
    if (result == nullptr) continue;
    if (unit.empty()) unit = result->unit();
    TS_ASSIGN_OR_RETURN(
        Part part,
        PartOf(*result, absl::StrCat("layers[", i, "].metrics.", metric)));
    builder.AddPart(layer.path, part);
  }
  if (unit.empty()) {
    if (const MetricResult* total = report.totals.Find(metric)) {
      unit = total->unit();
    }
  }
  return OneRootTree(builder, std::move(unit), absl::StrCat("totals.", metric));
}

absl::StatusOr<ModuleTree> ParameterTree(const AnalysisReport& report) {
  return CountTree(report, "parameters", "parameters",
                   [](const LayerReport& layer) {
                     return SumCounts(layer.parameters.trainable,
                                      layer.parameters.frozen, "parameters");
                   });
}

absl::StatusOr<ModuleTree> TensorBytesTree(const AnalysisReport& report) {
  return CountTree(
      report, "B", "parameter and buffer bytes", [](const LayerReport& layer) {
        return SumCounts(layer.parameters.bytes, layer.buffers.bytes,
                         "parameter and buffer bytes");
      });
}

}  // namespace torchscan::report::render
