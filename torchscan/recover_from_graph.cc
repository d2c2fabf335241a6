#include "torchscan/recover_from_graph.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include <cstdint>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "formulas/module_families.h"

namespace torchscan {
namespace {

// One operator node of the forward graph, with its schema for reading
// arguments by name.
struct Operator {
  std::string name;  // "aten::_convolution"
  const torch::jit::Node* node;
  const c10::FunctionSchema* schema;
};

// The operator nodes of a graph, nested blocks included, in order.
void CollectOperators(torch::jit::Block* block, std::vector<Operator>& out) {
  for (torch::jit::Node* node : block->nodes()) {
    if (const c10::FunctionSchema* schema = node->maybeSchema()) {
      out.push_back({node->kind().toQualString(), node, schema});
    }
    for (torch::jit::Block* inner : node->blocks()) {
      CollectOperators(inner, out);
    }
  }
}

std::optional<Operator> FirstOf(const std::vector<Operator>& operators,
                                const std::set<std::string>& names) {
  for (const Operator& op : operators) {
    if (names.count(op.name) != 0) return op;
  }
  return std::nullopt;
}

std::set<std::string> Named(std::initializer_list<const char*> stems,
                            const char* suffix = "") {
  std::set<std::string> names;
  for (const char* stem : stems) {
    for (int n : {1, 2, 3}) names.insert(absl::StrCat(stem, n, "d", suffix));
  }
  return names;
}

// A traced argument: a constant, or a list built from int constants; None
// when it is computed (or absent from the schema).
c10::IValue Argument(const Operator& op, const std::string& name) {
  const std::optional<int> index = op.schema->argumentIndexWithName(name);
  if (!index || *index >= static_cast<int>(op.node->inputs().size())) {
    return c10::IValue();
  }
  const torch::jit::Value* value = op.node->inputs()[*index];
  if (std::optional<c10::IValue> constant = torch::jit::toIValue(value)) {
    return *constant;
  }
  if (value->node()->kind() == c10::prim::ListConstruct) {
    c10::List<std::int64_t> items;
    for (const torch::jit::Value* item : value->node()->inputs()) {
      std::optional<c10::IValue> element = torch::jit::toIValue(item);
      if (!element || !element->isInt()) return c10::IValue();
      items.push_back(element->toInt());
    }
    return items;
  }
  return c10::IValue();
}

// An int repeated to `length` (padding=0 means every side), a non-empty
// int list as it is; None for anything else (an empty pool stride).
c10::IValue IntList(const c10::IValue& value, std::size_t length) {
  if (value.isInt() && length > 0) {
    return c10::List<std::int64_t>(
        std::vector<std::int64_t>(length, value.toInt()));
  }
  if (value.isIntList() && !value.toIntVector().empty()) return value;
  return c10::IValue();
}

c10::IValue Ints(std::vector<std::int64_t> values) {
  return c10::List<std::int64_t>(std::move(values));
}

std::optional<std::vector<std::int64_t>> TensorShape(
    const torch::jit::Module& module, const std::string& name) {
  if (!module.hasattr(name)) return std::nullopt;
  const c10::IValue value = module.attr(name);
  if (!value.isTensor() || !value.toTensor().defined()) return std::nullopt;
  return value.toTensor().sizes().vec();
}

// Collects recovered values; the first value found for a name is kept.
class Recovered {
 public:
  void Set(const std::string& name, c10::IValue value) {
    if (!value.isNone()) values_.emplace(name, std::move(value));
  }
  std::map<std::string, c10::IValue> Take() { return std::move(values_); }

 private:
  std::map<std::string, c10::IValue> values_;
};

void FromConvolution(const torch::jit::Module& module,
                     const std::vector<Operator>& operators, Recovered& out) {
  std::set<std::string> names = Named({"aten::conv", "aten::conv_transpose"});
  names.insert({"aten::_convolution", "aten::convolution"});
  const std::optional<Operator> op = FirstOf(operators, names);
  const std::optional<std::vector<std::int64_t>> weight =
      TensorShape(module, "weight");
  if (!op || !weight || weight->size() < 3) return;
  const c10::IValue groups = Argument(*op, "groups");
  const c10::IValue transposed_argument = Argument(*op, "transposed");
  const bool transposed =
      absl::StrContains(op->name, "transpose") ||
      (transposed_argument.isBool() && transposed_argument.toBool());
  out.Set("groups", groups);
  out.Set("kernel_size",
          Ints(std::vector<std::int64_t>(weight->begin() + 2, weight->end())));
  if (transposed) {
    out.Set("in_channels", (*weight)[0]);
  } else if (groups.isInt()) {
    out.Set("in_channels", (*weight)[1] * groups.toInt());
  }
  const std::size_t spatial = weight->size() - 2;
  out.Set("stride", IntList(Argument(*op, "stride"), spatial));
  out.Set("dilation", IntList(Argument(*op, "dilation"), spatial));
  const c10::IValue padding = Argument(*op, "padding");
  out.Set("padding", padding.isString() ? padding : IntList(padding, spatial));
}

void FromLinearWeight(const torch::jit::Module& module, Recovered& out) {
  const std::optional<std::vector<std::int64_t>> weight =
      TensorShape(module, "weight");
  if (!weight || weight->size() != 2) return;
  out.Set("in_features", (*weight)[1]);
  out.Set("out_features", (*weight)[0]);
}

void FromPooling(const std::vector<Operator>& operators, Recovered& out) {
  std::set<std::string> names = Named({"aten::max_pool", "aten::avg_pool"});
  for (const std::string& name : Named({"aten::max_pool"}, "_with_indices")) {
    names.insert(name);
  }
  const std::optional<Operator> op = FirstOf(operators, names);
  if (!op) return;
  const c10::IValue kernel = IntList(Argument(*op, "kernel_size"), 1);
  if (kernel.isNone()) return;
  const std::size_t length = kernel.toIntVector().size();
  out.Set("kernel_size", kernel);
  // An empty stride means the kernel size.
  const c10::IValue stride = IntList(Argument(*op, "stride"), length);
  out.Set("stride", stride.isNone() ? kernel : stride);
  out.Set("padding", IntList(Argument(*op, "padding"), length));
  out.Set("dilation", IntList(Argument(*op, "dilation"), length));
}

void FromBatchNorm(const torch::jit::Module& module,
                   const std::vector<Operator>& operators, Recovered& out) {
  const std::optional<Operator> op = FirstOf(operators, {"aten::batch_norm"});
  if (!op) return;
  for (const char* name : {"running_mean", "weight"}) {
    if (std::optional<std::vector<std::int64_t>> shape =
            TensorShape(module, name);
        shape && shape->size() == 1) {
      out.Set("num_features", (*shape)[0]);
    }
  }
  out.Set("affine", TensorShape(module, "weight").has_value());
  out.Set("track_running_stats",
          TensorShape(module, "running_mean").has_value());
  out.Set("momentum", Argument(*op, "momentum"));
}

void FromDropout(const std::vector<Operator>& operators, Recovered& out) {
  const std::optional<Operator> op = FirstOf(
      operators, {"aten::dropout", "aten::dropout_", "aten::native_dropout"});
  if (!op) return;
  out.Set("p", Argument(*op, "p"));
  out.Set("inplace", absl::EndsWith(op->name, "_"));
}

void FromLayerNorm(const std::vector<Operator>& operators, Recovered& out) {
  if (std::optional<Operator> op = FirstOf(operators, {"aten::layer_norm"})) {
    out.Set("normalized_shape", IntList(Argument(*op, "normalized_shape"), 1));
  }
}

// An activation's in-place form is its operator's `_` variant; the family
// rows name the operators (module_families.h).
void FromActivation(const std::vector<Operator>& operators, Recovered& out) {
  std::set<std::string> names;
  for (const formulas::ModuleFamilyRow& row : formulas::ModuleFamilyRows()) {
    for (const char* name : formulas::Listed(row.activation_operators)) {
      names.insert(name);
      names.insert(absl::StrCat(name, "_"));
    }
  }
  if (std::optional<Operator> op = FirstOf(operators, names)) {
    out.Set("inplace", absl::EndsWith(op->name, "_"));
  }
}

}  // namespace

std::map<std::string, c10::IValue> RecoverAttributes(
    const torch::jit::Module& module) {
  std::vector<Operator> operators;
  if (std::optional<torch::jit::Method> forward =
          module.find_method("forward")) {
    CollectOperators(forward->graph()->block(), operators);
  }
  Recovered out;
  FromConvolution(module, operators, out);
  FromLinearWeight(module, out);
  FromPooling(operators, out);
  FromBatchNorm(module, operators, out);
  FromDropout(operators, out);
  FromLayerNorm(operators, out);
  FromActivation(operators, out);
  // A traced MultiheadAttention is a sequence of matrix products: its head
  // count is no operator's argument. Its width is the projection's shape.
  if (std::optional<std::vector<std::int64_t>> in_proj =
          TensorShape(module, "in_proj_weight");
      in_proj && in_proj->size() == 2) {
    out.Set("embed_dim", (*in_proj)[1]);
  }
  return out.Take();
}

}  // namespace torchscan
