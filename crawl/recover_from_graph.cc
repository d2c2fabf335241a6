#include "crawl/recover_from_graph.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "formulas/module_families.h"

namespace torchscan::crawl {
namespace {

using formulas::ModuleFamily;
// A handful of operator names: a std::set, so that the fuzzer's build
// (crawl/fuzz/) needs no hashing library.
using Names = std::set<std::string, std::less<>>;

// --- Reading values, with the rules every family's reader shares.

bool IsNone(const GraphValue& value) {
  return std::holds_alternative<std::monostate>(value);
}

bool IsTensor(const GraphValue& value) {
  return std::holds_alternative<TensorValue>(value);
}

// The sizes of a tensor whose sizes the graph knows.
std::optional<std::vector<std::int64_t>> ShapeOf(const GraphValue& value) {
  if (const auto* tensor = std::get_if<TensorValue>(&value)) {
    return tensor->sizes;
  }
  return std::nullopt;
}

std::optional<std::int64_t> IntOf(const GraphValue& value) {
  if (const auto* integer = std::get_if<std::int64_t>(&value)) return *integer;
  return std::nullopt;
}

std::optional<double> NumberOf(const GraphValue& value) {
  if (const auto* number = std::get_if<double>(&value)) return *number;
  if (const auto* integer = std::get_if<std::int64_t>(&value)) {
    return static_cast<double>(*integer);
  }
  return std::nullopt;
}

// A list argument as ints: an int repeated to `length` (padding=0 means
// zero on every side), a non-empty list as it is; nullopt for anything
// else (an empty pool stride, a value computed at run time).
std::optional<std::vector<std::int64_t>> IntsOf(const GraphValue& value,
                                                std::size_t length) {
  if (std::optional<std::int64_t> integer = IntOf(value);
      integer && length > 0) {
    return std::vector<std::int64_t>(length, *integer);
  }
  if (const auto* ints = std::get_if<std::vector<std::int64_t>>(&value);
      ints != nullptr && !ints->empty()) {
    return *ints;
  }
  return std::nullopt;
}

std::int64_t Product(const std::vector<std::int64_t>& sizes) {
  std::int64_t count = 1;
  for (std::int64_t size : sizes) count *= size;
  return count;
}

// An attribute's value, or nullopt when the graph does not show it (None
// is a value: NOTE [None is a value]).
using Shown = std::optional<GraphValue>;
using Attributes = std::vector<std::pair<std::string, Shown>>;

template <typename T>
Shown Value(std::optional<T> value) {
  if (!value) return std::nullopt;
  return GraphValue(*std::move(value));
}
constexpr std::nullopt_t kUnrecovered = std::nullopt;

// One module's graph, read by name.
class Graph {
 public:
  explicit Graph(const ModuleGraph& graph) : graph_(graph) {}

  // The first operator named in `names`, in the order they ran.
  const GraphOperator* First(const Names& names) const {
    for (const GraphOperator& op : graph_.operators) {
      if (names.contains(op.name)) return &op;
    }
    return nullptr;
  }

  // A parameter's or buffer's sizes; nullopt when the module has none.
  std::optional<std::vector<std::int64_t>> Tensor(
      absl::string_view name) const {
    auto it = graph_.tensors.find(std::string(name));
    if (it == graph_.tensors.end()) return std::nullopt;
    return it->second;
  }
  bool Has(absl::string_view name) const {
    return graph_.tensors.contains(std::string(name));
  }

 private:
  const ModuleGraph& graph_;
};

// An operator's argument by name; None when the schema has none.
const GraphValue& Argument(const GraphOperator* op, absl::string_view name) {
  static const GraphValue* const kNone = new GraphValue();
  if (op == nullptr) return *kNone;
  for (const auto& [key, value] : op->arguments) {
    if (key == name) return value;
  }
  return *kNone;
}

// The sizes of a tensor argument, else those of the module's own tensor of
// that name (an operator not found, a graph that computes the tensor).
std::optional<std::vector<std::int64_t>> ArgumentOrOwnShape(
    const Graph& graph, const GraphOperator* op, absl::string_view name) {
  if (std::optional<std::vector<std::int64_t>> shape =
          ShapeOf(Argument(op, name))) {
    return shape;
  }
  return graph.Tensor(name);
}

// "<stem>1d", "<stem>2d", "<stem>3d" (and the suffix after each).
Names Spatial(std::initializer_list<const char*> stems,
              absl::string_view suffix = "") {
  Names names;
  for (const char* stem : stems) {
    for (int n : {1, 2, 3}) names.insert(absl::StrCat(stem, n, "d", suffix));
  }
  return names;
}

// --- One reader per family: what its graph shows, in its description's
// order.
//
// NOTE [None is a value]
// Some attributes are None in a module that has them: a BatchNorm without
// affine parameters has no weight (its weight numel is None), and one built
// with momentum=None averages cumulatively. A graph shows those as None
// arguments, and they are recovered as None. An attribute is unrecovered
// only when the graph does not show it at all (no operator that takes it,
// a value computed while running), and the front end then names it instead
// of evaluating formulas on a guess.

Attributes Convolution(const Graph& graph, bool transposed) {
  Names names = Spatial({"aten::conv", "aten::conv_transpose"});
  // A string padding ("same", "valid") runs _convolution_mode.
  names.insert(
      {"aten::convolution", "aten::_convolution", "aten::_convolution_mode"});
  const GraphOperator* op = graph.First(names);
  const std::optional<std::vector<std::int64_t>> weight =
      ArgumentOrOwnShape(graph, op, "weight");
  const bool spatial = weight && weight->size() >= 2;
  const std::size_t kernel = spatial ? weight->size() - 2 : 0;
  const std::optional<std::int64_t> groups = IntOf(Argument(op, "groups"));
  std::optional<std::int64_t> in_channels;
  if (spatial && groups) {
    in_channels = transposed ? (*weight)[0] : (*weight)[1] * *groups;
  }
  std::optional<std::vector<std::int64_t>> kernel_size;
  if (spatial) kernel_size.emplace(weight->begin() + 2, weight->end());
  const GraphValue& padding = Argument(op, "padding");
  return {
      {"in_channels", Value(in_channels)},
      {"kernel_size", Value(kernel_size)},
      {"stride", Value(IntsOf(Argument(op, "stride"), kernel))},
      {"padding", std::holds_alternative<std::string>(padding)
                      ? Shown(padding)
                      : Value(IntsOf(padding, kernel))},
      {"dilation", Value(IntsOf(Argument(op, "dilation"), kernel))},
      {"groups", Value(groups)},
      {"bias",
       op != nullptr ? !IsNone(Argument(op, "bias")) : graph.Has("bias")},
  };
}

Attributes Linear(const Graph& graph) {
  const GraphOperator* op = graph.First({"aten::linear"});
  const std::optional<std::vector<std::int64_t>> weight =
      ArgumentOrOwnShape(graph, op, "weight");
  const bool matrix = weight && weight->size() == 2;
  return {
      {"in_features", matrix ? Shown((*weight)[1]) : kUnrecovered},
      {"out_features", matrix ? Shown((*weight)[0]) : kUnrecovered},
      {"bias",
       op != nullptr ? !IsNone(Argument(op, "bias")) : graph.Has("bias")},
  };
}

Attributes Pool(const Graph& graph, bool max) {
  Names names = max ? Spatial({"aten::max_pool"}) : Spatial({"aten::avg_pool"});
  if (max) names.merge(Spatial({"aten::max_pool"}, "_with_indices"));
  const GraphOperator* op = graph.First(names);
  const std::optional<std::vector<std::int64_t>> kernel =
      IntsOf(Argument(op, "kernel_size"), 1);
  const std::size_t length = kernel ? kernel->size() : 0;
  // An empty stride means the kernel size.
  std::optional<std::vector<std::int64_t>> stride =
      IntsOf(Argument(op, "stride"), length);
  if (op != nullptr && !stride) stride = kernel;
  Attributes recovered = {
      {"kernel_size", Value(kernel)},
      {"stride", Value(stride)},
      {"padding", Value(IntsOf(Argument(op, "padding"), length))},
  };
  if (max) {
    recovered.emplace_back("dilation",
                           Value(IntsOf(Argument(op, "dilation"), length)));
  }
  return recovered;
}

// A tensor argument's numel: None for a None argument (NOTE [None is a
// value]), unrecovered for a tensor of unknown sizes.
Shown NumelOf(const GraphValue& value) {
  if (IsNone(value)) return GraphValue();
  if (std::optional<std::vector<std::int64_t>> shape = ShapeOf(value)) {
    return GraphValue(Product(*shape));
  }
  return kUnrecovered;
}

// NOTE [A zero averaging factor]
// A batch norm operator's `momentum` is the module's averaging factor for
// this call, not the attribute: a module built with momentum=None passes
// 0.0 when evaluating and 1 / num_batches_tracked when training. So 0.0 may
// be either momentum=0.0 or None, which TorchScan 0.2's formulas tell
// apart; it is unrecovered, as a factor the graph computes is (an exported
// training step's). A trace in training mode bakes that factor in as a
// constant, which reads as a momentum: the one case this cannot tell.
Shown MomentumOf(const GraphValue& factor) {
  if (IsNone(factor)) return GraphValue();
  const std::optional<double> number = NumberOf(factor);
  if (!number || *number == 0.0) return kUnrecovered;
  return GraphValue(*number);
}

Attributes BatchNorm(const Graph& graph) {
  const GraphOperator* op = graph.First({
      "aten::batch_norm",
      "aten::native_batch_norm",
      "aten::_native_batch_norm_legit",
      "aten::_native_batch_norm_legit_no_training",
      "aten::_native_batch_norm_legit_functional",
      "aten::_batch_norm_with_update",
      "aten::_batch_norm_with_update_functional",
      "aten::_batch_norm_no_update",
      "aten::cudnn_batch_norm",
      "aten::miopen_batch_norm",
  });
  if (op == nullptr) {
    return {{"num_features", kUnrecovered},
            {"affine", kUnrecovered},
            {"track_running_stats", kUnrecovered},
            {"training", kUnrecovered},
            {"momentum", kUnrecovered},
            {"running_mean_numel", kUnrecovered},
            {"running_var_numel", kUnrecovered},
            {"weight_numel", kUnrecovered},
            {"bias_numel", kUnrecovered}};
  }
  std::optional<std::int64_t> features;
  for (const char* name : {"weight", "bias", "running_mean", "running_var"}) {
    if (auto shape = ShapeOf(Argument(op, name)); shape && !shape->empty()) {
      features = (*shape)[0];
      break;
    }
  }
  if (!features) {
    if (auto input = ShapeOf(Argument(op, "input"));
        input && input->size() > 1) {
      features = (*input)[1];
    }
  }
  // The overloads without a `training` argument are named after their mode.
  GraphValue training = Argument(op, "training");
  if (IsNone(training)) {
    training = op->name == "aten::_batch_norm_with_update" ||
               op->name == "aten::_batch_norm_with_update_functional";
  }
  return {
      {"num_features", Value(features)},
      {"affine", IsTensor(Argument(op, "weight"))},
      {"track_running_stats", IsTensor(Argument(op, "running_mean"))},
      {"training",
       std::holds_alternative<bool>(training) ? Shown(training) : kUnrecovered},
      {"momentum", MomentumOf(Argument(op, "momentum"))},
      {"running_mean_numel", NumelOf(Argument(op, "running_mean"))},
      {"running_var_numel", NumelOf(Argument(op, "running_var"))},
      {"weight_numel", NumelOf(Argument(op, "weight"))},
      {"bias_numel", NumelOf(Argument(op, "bias"))},
  };
}

Attributes LayerNorm(const Graph& graph) {
  const GraphOperator* op =
      graph.First({"aten::layer_norm", "aten::native_layer_norm"});
  if (op == nullptr) {
    return {{"normalized_shape", kUnrecovered},
            {"weight", graph.Has("weight")},
            {"bias", graph.Has("bias")}};
  }
  return {
      {"normalized_shape", Value(IntsOf(Argument(op, "normalized_shape"), 1))},
      {"weight", !IsNone(Argument(op, "weight"))},
      {"bias", !IsNone(Argument(op, "bias"))},
  };
}

Attributes Dropout(const Graph& graph) {
  const GraphOperator* op =
      graph.First({"aten::dropout", "aten::dropout_", "aten::native_dropout"});
  if (op == nullptr) {
    return {{"p", kUnrecovered},
            {"inplace", kUnrecovered},
            {"training", kUnrecovered}};
  }
  // native_dropout's `train` is optional, and None drops as in training
  // (its kernel zeroes elements unless `train` is false).
  const GraphValue& train = Argument(op, "train");
  Shown training = kUnrecovered;
  if (IsNone(train)) training = GraphValue(true);
  if (std::holds_alternative<bool>(train)) training = train;
  return {
      {"p", Value(NumberOf(Argument(op, "p")))},
      {"inplace", absl::EndsWith(op->name, "_")},
      {"training", training},
  };
}

// An activation's `inplace`: whether its call ran the `_` variant of one of
// its row's operators.
Attributes Activation(const Graph& graph,
                      const formulas::ModuleFamilyRow& row) {
  Names names;
  for (const char* name : formulas::Listed(row.activation_operators)) {
    names.insert(name);
    names.insert(absl::StrCat(name, "_"));
  }
  const GraphOperator* op = graph.First(names);
  return {{"inplace", op != nullptr ? Shown(absl::EndsWith(op->name, "_"))
                                    : kUnrecovered}};
}

Attributes MultiheadAttention(const Graph& graph) {
  std::optional<std::int64_t> embed_dim;
  if (auto in_proj = graph.Tensor("in_proj_weight");
      in_proj && in_proj->size() == 2) {
    embed_dim = (*in_proj)[1];
  } else if (auto query = graph.Tensor("q_proj_weight");
             query && !query->empty()) {
    embed_dim = (*query)[0];
  }
  // A traced forward is matrix products: no operator takes the head count.
  std::optional<std::int64_t> heads;
  const GraphOperator* attention =
      graph.First({"aten::scaled_dot_product_attention"});
  if (const GraphOperator* fused =
          graph.First({"aten::_native_multi_head_attention"})) {
    heads = IntOf(Argument(fused, "num_head"));
  } else if (attention != nullptr) {
    if (auto query = ShapeOf(Argument(attention, "query"));
        query && query->size() == 4) {
      heads = (*query)[1];
    }
  }
  std::optional<std::int64_t> head_dim;
  if (embed_dim && heads && *embed_dim != 0 && *heads != 0) {
    head_dim = *embed_dim / *heads;
  }
  const auto out_proj = graph.Tensor("out_proj.weight");
  const bool matrix = out_proj && out_proj->size() == 2;
  return {
      {"embed_dim", Value(embed_dim)},
      {"num_heads", Value(heads)},
      {"head_dim", Value(head_dim)},
      // The graph keeps neither the layout of the module's inputs nor the
      // option: nothing here tells them apart.
      {"batch_first", kUnrecovered},
      {"in_proj_bias", graph.Has("in_proj_bias")},
      {"bias_k", graph.Has("bias_k")},
      {"bias_v", graph.Has("bias_v")},
      {"add_zero_attn", kUnrecovered},
      {"dropout", attention != nullptr
                      ? Value(NumberOf(Argument(attention, "dropout_p")))
                      : kUnrecovered},
      {"training", kUnrecovered},
      {"out_proj.in_features", matrix ? Shown((*out_proj)[1]) : kUnrecovered},
      {"out_proj.out_features", matrix ? Shown((*out_proj)[0]) : kUnrecovered},
      {"out_proj.bias", graph.Has("out_proj.bias")},
  };
}

Attributes FamilyAttributes(const ModuleGraph& module) {
  const Graph graph(module);
  const formulas::ModuleFamilyRow& row =
      formulas::ModuleFamilyRowFor(module.family);
  if (!formulas::Listed(row.activation_operators).empty()) {
    return Activation(graph, row);
  }
  switch (module.family) {
    case ModuleFamily::kLinear:
      return Linear(graph);
    case ModuleFamily::kConv:
      return Convolution(graph, /*transposed=*/false);
    case ModuleFamily::kConvTranspose:
      return Convolution(graph, /*transposed=*/true);
    case ModuleFamily::kBatchNorm:
      return BatchNorm(graph);
    case ModuleFamily::kMaxPool:
      return Pool(graph, /*max=*/true);
    case ModuleFamily::kAvgPool:
      return Pool(graph, /*max=*/false);
    case ModuleFamily::kDropout:
      return Dropout(graph);
    case ModuleFamily::kLayerNorm:
      return LayerNorm(graph);
    case ModuleFamily::kMultiheadAttention:
      return MultiheadAttention(graph);
    default:
      return {};
  }
}

}  // namespace

report::Json FamilyNameCodec::Write(ModuleFamily family) {
  return std::string(formulas::ModuleFamilyName(family));
}

absl::StatusOr<ModuleFamily> FamilyNameCodec::Read(
    const report::JsonValue& node) {
  TS_ASSIGN_OR_RETURN(std::string name, node.String());
  if (std::optional<ModuleFamily> family = formulas::ParseModuleFamily(name)) {
    return *family;
  }
  return node.Error(absl::StrCat("is not a module family: '", name, "'"));
}

RecoveredAttributes RecoverAttributes(const ModuleGraph& module) {
  RecoveredAttributes recovered;
  for (auto& [key, value] : FamilyAttributes(module)) {
    if (!value) recovered.unrecovered.push_back(key);
    recovered.values.emplace_back(std::move(key),
                                  value ? *std::move(value) : GraphValue());
  }
  return recovered;
}

}  // namespace torchscan::crawl

namespace torchscan::report {

using crawl::GraphValue;
using crawl::TensorValue;
using crawl::UnknownValue;

Json JsonCodec<GraphValue>::Write(const GraphValue& value) {
  struct Writer {
    Json operator()(std::monostate) const { return Json(); }
    Json operator()(bool truth) const { return truth; }
    Json operator()(std::int64_t integer) const { return integer; }
    Json operator()(double number) const {
      return JsonCodec<double>::Write(number);
    }
    Json operator()(const std::string& text) const { return text; }
    Json operator()(const std::vector<std::int64_t>& ints) const {
      return ints;
    }
    Json operator()(const TensorValue& tensor) const {
      Json object = Json::object();
      object["tensor"] = tensor.sizes ? Json(*tensor.sizes) : Json();
      return object;
    }
    Json operator()(const UnknownValue&) const {
      Json object = Json::object();
      object["unknown"] = true;
      return object;
    }
  };
  return std::visit(Writer{}, value);
}

absl::StatusOr<GraphValue> JsonCodec<GraphValue>::Read(const JsonValue& node) {
  const Json& json = node.node();
  if (json.is_null()) return GraphValue();
  if (json.is_boolean()) return GraphValue(json.get<bool>());
  if (json.is_number_integer()) {
    TS_ASSIGN_OR_RETURN(std::int64_t integer, node.Int64());
    return GraphValue(integer);
  }
  if (json.is_number_float()) {
    TS_ASSIGN_OR_RETURN(double number, JsonCodec<double>::Read(node));
    return GraphValue(number);
  }
  if (json.is_string()) {
    // "inf", "-inf" and "nan" are floats (JsonCodec<double>'s rule).
    if (json == "inf" || json == "-inf" || json == "nan") {
      TS_ASSIGN_OR_RETURN(double number, JsonCodec<double>::Read(node));
      return GraphValue(number);
    }
    return GraphValue(json.get<std::string>());
  }
  if (json.is_array()) {
    TS_ASSIGN_OR_RETURN(std::vector<std::int64_t> ints,
                        JsonCodec<std::vector<std::int64_t>>::Read(node));
    return GraphValue(std::move(ints));
  }
  TS_ASSIGN_OR_RETURN(JsonObject object, node.Object());
  if (object.Contains("unknown") && json.size() == 1) {
    return GraphValue(UnknownValue{});
  }
  if (object.Contains("tensor") && json.size() == 1) {
    TS_ASSIGN_OR_RETURN(JsonValue sizes, object.Member("tensor"));
    if (sizes.node().is_null()) return GraphValue(TensorValue{});
    TS_ASSIGN_OR_RETURN(std::vector<std::int64_t> ints,
                        JsonCodec<std::vector<std::int64_t>>::Read(sizes));
    return GraphValue(TensorValue{std::move(ints)});
  }
  return node.Error(
      "expected null, a bool, a number, a string, a list of ints, "
      "{\"tensor\": sizes} or {\"unknown\": true}");
}

}  // namespace torchscan::report
