#include "torchscan/recover_from_graph.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include <optional>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace torchscan {
namespace {

using report::Json;

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

Json ConstantToJson(const c10::IValue& value) {
  if (value.isBool()) return value.toBool();
  if (value.isInt()) return value.toInt();
  if (value.isDouble()) return value.toDouble();
  if (value.isString()) return value.toStringRef();
  if (value.isIntList()) {
    Json items = Json::array();
    for (std::int64_t item : value.toIntVector()) items.push_back(item);
    return items;
  }
  return nullptr;
}

// A traced argument: a constant, or a list built from constants; null when
// it is computed (or absent from the schema).
Json Argument(const Operator& op, const std::string& name) {
  const std::optional<int> index = op.schema->argumentIndexWithName(name);
  if (!index || *index >= static_cast<int>(op.node->inputs().size())) {
    return nullptr;
  }
  const torch::jit::Value* value = op.node->inputs()[*index];
  if (std::optional<c10::IValue> constant = torch::jit::toIValue(value)) {
    return ConstantToJson(*constant);
  }
  if (value->node()->kind() == c10::prim::ListConstruct) {
    Json items = Json::array();
    for (const torch::jit::Value* item : value->node()->inputs()) {
      std::optional<c10::IValue> element = torch::jit::toIValue(item);
      if (!element || !element->isInt()) return nullptr;
      items.push_back(element->toInt());
    }
    return items;
  }
  return nullptr;
}

std::optional<std::vector<std::int64_t>> TensorShape(
    const torch::jit::Module& module, const std::string& name) {
  if (!module.hasattr(name)) return std::nullopt;
  const c10::IValue value = module.attr(name);
  if (!value.isTensor() || !value.toTensor().defined()) return std::nullopt;
  return value.toTensor().sizes().vec();
}

void SetIfNull(Json& description, const std::string& key, Json value) {
  if (description.contains(key) && description[key].is_null()) {
    description[key] = std::move(value);
  }
}

// An int argument repeated to `length` (padding=0 means every side), a
// non-empty list as it is; null for anything else.
Json IntList(const Json& value, std::size_t length) {
  if (value.is_number_integer() && length > 0) {
    return Json(std::vector<std::int64_t>(length, value.get<std::int64_t>()));
  }
  if (value.is_array() && !value.empty()) return value;
  return nullptr;
}

std::set<std::string> Named(std::initializer_list<const char*> stems,
                            std::initializer_list<int> dimensions,
                            const char* suffix = "") {
  std::set<std::string> names;
  for (const char* stem : stems) {
    for (int n : dimensions) names.insert(absl::StrCat(stem, n, "d", suffix));
  }
  return names;
}

void RecoverConv(const torch::jit::Module& module,
                 const std::vector<Operator>& operators, bool transposed,
                 Json& description) {
  std::set<std::string> names = {"aten::_convolution", "aten::convolution"};
  for (const std::string& name :
       Named({"aten::conv", "aten::conv_transpose"}, {1, 2, 3})) {
    names.insert(name);
  }
  const std::optional<Operator> op = FirstOf(operators, names);
  const std::optional<std::vector<std::int64_t>> weight =
      TensorShape(module, "weight");
  Json groups = op ? Argument(*op, "groups") : Json();
  SetIfNull(description, "groups", groups);
  if (weight && weight->size() >= 3) {
    SetIfNull(
        description, "kernel_size",
        Json(std::vector<std::int64_t>(weight->begin() + 2, weight->end())));
    if (transposed) {
      SetIfNull(description, "in_channels", (*weight)[0]);
    } else if (groups.is_number_integer()) {
      SetIfNull(description, "in_channels",
                (*weight)[1] * groups.get<std::int64_t>());
    }
  }
  if (!op) return;
  const std::size_t spatial = weight ? weight->size() - 2 : 0;
  for (const char* key : {"stride", "dilation"}) {
    SetIfNull(description, key, IntList(Argument(*op, key), spatial));
  }
  const Json padding = Argument(*op, "padding");
  SetIfNull(description, "padding",
            padding.is_string() ? padding : IntList(padding, spatial));
}

void RecoverLinear(const torch::jit::Module& module, Json& description) {
  const std::optional<std::vector<std::int64_t>> weight =
      TensorShape(module, "weight");
  if (!weight || weight->size() != 2) return;
  SetIfNull(description, "in_features", (*weight)[1]);
  SetIfNull(description, "out_features", (*weight)[0]);
}

void RecoverPool(const std::vector<Operator>& operators,
                 const std::string& family, Json& description) {
  const std::set<std::string> names =
      family == "max_pool" ? Named({"aten::max_pool"}, {1, 2, 3})
                           : Named({"aten::avg_pool"}, {1, 2, 3});
  std::optional<Operator> op = FirstOf(operators, names);
  if (!op && family == "max_pool") {
    op = FirstOf(operators, Named({"aten::max_pool"}, {2, 3}, "_with_indices"));
  }
  if (!op) return;
  const Json kernel = IntList(Argument(*op, "kernel_size"), 1);
  const std::size_t length = kernel.is_array() ? kernel.size() : 0;
  SetIfNull(description, "kernel_size", kernel);
  // An empty stride means the kernel size.
  const Json stride = IntList(Argument(*op, "stride"), length);
  SetIfNull(description, "stride", stride.is_null() ? kernel : stride);
  SetIfNull(description, "padding", IntList(Argument(*op, "padding"), length));
  SetIfNull(description, "dilation",
            IntList(Argument(*op, "dilation"), length));
}

void RecoverBatchNorm(const torch::jit::Module& module,
                      const std::vector<Operator>& operators,
                      Json& description) {
  for (const char* name : {"running_mean", "weight"}) {
    if (std::optional<std::vector<std::int64_t>> shape =
            TensorShape(module, name);
        shape && shape->size() == 1) {
      SetIfNull(description, "num_features", (*shape)[0]);
    }
  }
  SetIfNull(description, "affine", TensorShape(module, "weight").has_value());
  SetIfNull(description, "track_running_stats",
            TensorShape(module, "running_mean").has_value());
  SetIfNull(description, "training", module.is_training());
  if (std::optional<Operator> op = FirstOf(operators, {"aten::batch_norm"})) {
    const Json momentum = Argument(*op, "momentum");
    if (momentum.is_number()) {
      SetIfNull(description, "momentum", momentum.get<double>());
    }
  }
}

void RecoverDropout(const std::vector<Operator>& operators, Json& description) {
  const std::optional<Operator> op = FirstOf(
      operators, {"aten::dropout", "aten::dropout_", "aten::native_dropout"});
  if (!op) return;
  const Json p = Argument(*op, "p");
  if (p.is_number()) SetIfNull(description, "p", p.get<double>());
  SetIfNull(description, "training", Argument(*op, "train"));
  SetIfNull(description, "inplace", absl::EndsWith(op->name, "_"));
}

void RecoverLayerNorm(const torch::jit::Module& module,
                      const std::vector<Operator>& operators,
                      Json& description) {
  if (std::optional<Operator> op = FirstOf(operators, {"aten::layer_norm"})) {
    SetIfNull(description, "normalized_shape",
              IntList(Argument(*op, "normalized_shape"), 1));
  }
  if (std::optional<std::vector<std::int64_t>> weight =
          TensorShape(module, "weight")) {
    SetIfNull(description, "normalized_shape", Json(*weight));
  }
}

// The in-place form of an activation is its operator's `_` variant.
void RecoverInplace(const std::vector<Operator>& operators,
                    const std::set<std::string>& names, Json& description) {
  std::set<std::string> both = names;
  for (const std::string& name : names) both.insert(absl::StrCat(name, "_"));
  if (std::optional<Operator> op = FirstOf(operators, both)) {
    SetIfNull(description, "inplace", absl::EndsWith(op->name, "_"));
  }
}

bool HasNull(const Json& description) {
  for (const auto& [key, value] : description.items()) {
    if (value.is_null() || (value.is_object() && HasNull(value))) return true;
  }
  return false;
}

void CollectMissing(const Json& description, const std::string& prefix,
                    std::vector<std::string>& out) {
  for (const auto& [key, value] : description.items()) {
    if (value.is_null()) {
      out.push_back(absl::StrCat(prefix, key));
    } else if (value.is_object()) {
      CollectMissing(value, absl::StrCat(prefix, key, "."), out);
    }
  }
}

}  // namespace

void RecoverFromForwardGraph(const torch::jit::Module& module,
                             Json& description) {
  if (!HasNull(description)) return;  // a scripted module: all kept
  std::vector<Operator> operators;
  if (std::optional<torch::jit::Method> forward =
          module.find_method("forward")) {
    CollectOperators(forward->graph()->block(), operators);
  }
  const std::string family = description.value("family", "");
  if (family == "conv" || family == "conv_transpose") {
    RecoverConv(module, operators, family == "conv_transpose", description);
  } else if (family == "linear") {
    RecoverLinear(module, description);
  } else if (family == "max_pool" || family == "avg_pool") {
    RecoverPool(operators, family, description);
  } else if (family == "batch_norm") {
    RecoverBatchNorm(module, operators, description);
  } else if (family == "dropout") {
    RecoverDropout(operators, description);
  } else if (family == "layer_norm") {
    RecoverLayerNorm(module, operators, description);
  } else if (family == "relu") {
    RecoverInplace(operators, {"aten::relu"}, description);
  } else if (family == "relu6") {
    RecoverInplace(operators, {"aten::relu6", "aten::hardtanh"}, description);
  } else if (family == "elu") {
    RecoverInplace(operators, {"aten::elu"}, description);
  } else if (family == "leaky_relu") {
    RecoverInplace(operators, {"aten::leaky_relu"}, description);
  } else if (family == "multihead_attention" &&
             description["out_proj"].is_object()) {
    // The traced attention is a sequence of matmuls: its head count is
    // not an argument anywhere. Only the projections' sizes are shapes.
    if (std::optional<std::vector<std::int64_t>> in_proj =
            TensorShape(module, "in_proj_weight");
        in_proj && in_proj->size() == 2) {
      SetIfNull(description, "embed_dim", (*in_proj)[1]);
    }
    RecoverLinear(module.attr("out_proj").toModule(), description["out_proj"]);
  }
}

std::vector<std::string> MissingAttributes(const Json& description) {
  std::vector<std::string> missing;
  CollectMissing(description, "", missing);
  return missing;
}

}  // namespace torchscan
