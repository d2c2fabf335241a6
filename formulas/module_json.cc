#include "formulas/module_json.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "report/json_reader.h"

namespace torchscan::formulas {
namespace {

using report::Json;
using report::JsonArray;
using report::JsonObject;
using report::JsonValue;

// Descriptions come from our own front ends, so their errors name only the
// kind of a wrong value ("got string") and say "must not be negative"
// without repeating the number.
absl::StatusOr<std::vector<std::int64_t>> IntArrayValue(const JsonValue& node,
                                                        bool non_negative) {
  if (!node.node().is_array()) return node.Expected("an array of integers");
  TS_ASSIGN_OR_RETURN(JsonArray items, node.Array());
  std::vector<std::int64_t> values;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const JsonValue item = items.Item(i);
    TS_ASSIGN_OR_RETURN(std::int64_t value, item.Int64());
    if (non_negative && value < 0) return item.Error("must not be negative");
    values.push_back(value);
  }
  return values;
}

// An int, a tuple (array of ints) or, when allowed, a string.
absl::StatusOr<HyperParameter> HyperValue(const JsonValue& node,
                                          bool allow_string) {
  if (node.node().is_string() && allow_string) {
    return HyperParameter::String(node.node().get<std::string>());
  }
  if (node.node().is_array()) {
    TS_ASSIGN_OR_RETURN(std::vector<std::int64_t> values,
                        IntArrayValue(node, /*non_negative=*/false));
    return HyperParameter::Tuple(std::move(values));
  }
  if (report::IsJsonInteger(node.node())) {
    TS_ASSIGN_OR_RETURN(std::int64_t value, node.Int64());
    return HyperParameter::Int(value);
  }
  return node.Expected(allow_string
                           ? "an integer, an array of integers or a string"
                           : "an integer or an array of integers");
}

absl::StatusOr<HyperParameter> Hyper(const JsonObject& object,
                                     absl::string_view key,
                                     bool allow_string = false) {
  TS_ASSIGN_OR_RETURN(JsonValue member, object.Member(key));
  return HyperValue(member, allow_string);
}

// Absent or null: the module has no such attribute.
absl::StatusOr<std::optional<HyperParameter>> OptionalHyper(
    const JsonObject& object, absl::string_view key) {
  std::optional<JsonValue> member = object.OptionalMember(key);
  if (!member || member->is_null()) return std::optional<HyperParameter>();
  TS_ASSIGN_OR_RETURN(HyperParameter value,
                      HyperValue(*member, /*allow_string=*/false));
  return std::optional<HyperParameter>(std::move(value));
}

// An integer or null (a tensor attribute that is None).
absl::StatusOr<std::optional<std::int64_t>> IntOrNull(const JsonObject& object,
                                                      absl::string_view key) {
  TS_ASSIGN_OR_RETURN(JsonValue member, object.Member(key));
  if (member.is_null()) return std::optional<std::int64_t>();
  TS_ASSIGN_OR_RETURN(std::int64_t value, member.Int64());
  return std::optional<std::int64_t>(value);
}

absl::StatusOr<std::optional<double>> NumberOrNull(const JsonObject& object,
                                                   absl::string_view key) {
  TS_ASSIGN_OR_RETURN(JsonValue member, object.Member(key));
  if (member.is_null()) return std::optional<double>();
  if (!member.node().is_number()) return member.Expected("a number or null");
  return std::optional<double>(member.node().get<double>());
}

// Each Read* fills a hyper-parameter struct from an object; the caller
// rejects the members nothing read.

absl::StatusOr<LinearParams> ReadLinear(const JsonObject& object) {
  LinearParams linear;
  TS_ASSIGN_OR_RETURN(linear.in_features, object.Int64("in_features"));
  TS_ASSIGN_OR_RETURN(linear.out_features, object.Int64("out_features"));
  TS_ASSIGN_OR_RETURN(linear.bias, object.Bool("bias"));
  return linear;
}

absl::StatusOr<ActivationParams> ReadActivation(const JsonObject& object) {
  ActivationParams activation;
  TS_ASSIGN_OR_RETURN(activation.inplace, object.Bool("inplace"));
  return activation;
}

absl::StatusOr<ConvParams> ReadConv(const JsonObject& object) {
  ConvParams conv;
  TS_ASSIGN_OR_RETURN(conv.in_channels, object.Int64("in_channels"));
  TS_ASSIGN_OR_RETURN(conv.kernel_size, Hyper(object, "kernel_size"));
  TS_ASSIGN_OR_RETURN(conv.stride, Hyper(object, "stride"));
  TS_ASSIGN_OR_RETURN(conv.padding,
                      Hyper(object, "padding", /*allow_string=*/true));
  TS_ASSIGN_OR_RETURN(conv.dilation, Hyper(object, "dilation"));
  TS_ASSIGN_OR_RETURN(conv.groups, object.Int64("groups"));
  TS_ASSIGN_OR_RETURN(conv.bias, object.Bool("bias"));
  return conv;
}

absl::StatusOr<BatchNormParams> ReadBatchNorm(const JsonObject& object) {
  BatchNormParams bn;
  TS_ASSIGN_OR_RETURN(bn.num_features, object.Int64("num_features"));
  TS_ASSIGN_OR_RETURN(bn.affine, object.Bool("affine"));
  TS_ASSIGN_OR_RETURN(bn.track_running_stats,
                      object.Bool("track_running_stats"));
  TS_ASSIGN_OR_RETURN(bn.training, object.Bool("training"));
  TS_ASSIGN_OR_RETURN(bn.momentum, NumberOrNull(object, "momentum"));
  TS_ASSIGN_OR_RETURN(bn.running_mean_numel,
                      IntOrNull(object, "running_mean_numel"));
  TS_ASSIGN_OR_RETURN(bn.running_var_numel,
                      IntOrNull(object, "running_var_numel"));
  TS_ASSIGN_OR_RETURN(bn.weight_numel, IntOrNull(object, "weight_numel"));
  TS_ASSIGN_OR_RETURN(bn.bias_numel, IntOrNull(object, "bias_numel"));
  return bn;
}

absl::StatusOr<PoolParams> ReadPool(const JsonObject& object) {
  PoolParams pool;
  TS_ASSIGN_OR_RETURN(pool.kernel_size, Hyper(object, "kernel_size"));
  TS_ASSIGN_OR_RETURN(pool.stride, Hyper(object, "stride"));
  TS_ASSIGN_OR_RETURN(pool.padding, Hyper(object, "padding"));
  TS_ASSIGN_OR_RETURN(pool.dilation, OptionalHyper(object, "dilation"));
  return pool;
}

absl::StatusOr<DropoutParams> ReadDropout(const JsonObject& object) {
  DropoutParams dropout;
  TS_ASSIGN_OR_RETURN(dropout.p, object.Number("p"));
  TS_ASSIGN_OR_RETURN(dropout.inplace, object.Bool("inplace"));
  TS_ASSIGN_OR_RETURN(dropout.training, object.Bool("training"));
  return dropout;
}

absl::StatusOr<LayerNormParams> ReadLayerNorm(const JsonObject& object) {
  LayerNormParams norm;
  TS_ASSIGN_OR_RETURN(JsonValue shape, object.Member("normalized_shape"));
  TS_ASSIGN_OR_RETURN(norm.normalized_shape,
                      IntArrayValue(shape, /*non_negative=*/false));
  TS_ASSIGN_OR_RETURN(norm.weight, object.Bool("weight"));
  TS_ASSIGN_OR_RETURN(norm.bias, object.Bool("bias"));
  return norm;
}

// The object `value` read with `read`, its unread members rejected.
template <typename Params>
absl::StatusOr<Params> ReadObject(
    const JsonValue& value, absl::StatusOr<Params> (*read)(const JsonObject&)) {
  TS_ASSIGN_OR_RETURN(JsonObject object, value.Object());
  TS_ASSIGN_OR_RETURN(Params params, read(object));
  TS_RETURN_IF_ERROR(object.RejectUnreadKeys());
  return params;
}

// The member `key` read with `read`, its unread members rejected.
template <typename Params>
absl::StatusOr<Params> ReadNested(
    const JsonObject& parent, absl::string_view key,
    absl::StatusOr<Params> (*read)(const JsonObject&)) {
  TS_ASSIGN_OR_RETURN(JsonValue member, parent.Member(key));
  return ReadObject(member, read);
}

// A LayerNorm object, or null.
absl::StatusOr<std::optional<LayerNormParams>> ReadOptionalLayerNorm(
    const JsonObject& parent, absl::string_view key) {
  TS_ASSIGN_OR_RETURN(JsonValue member, parent.Member(key));
  if (member.is_null()) return std::optional<LayerNormParams>();
  TS_ASSIGN_OR_RETURN(LayerNormParams norm, ReadObject(member, &ReadLayerNorm));
  return std::optional<LayerNormParams>(std::move(norm));
}

absl::StatusOr<MultiheadAttentionParams> ReadMultiheadAttention(
    const JsonObject& object) {
  MultiheadAttentionParams mha;
  TS_ASSIGN_OR_RETURN(mha.embed_dim, object.Int64("embed_dim"));
  TS_ASSIGN_OR_RETURN(mha.num_heads, object.Int64("num_heads"));
  TS_ASSIGN_OR_RETURN(mha.head_dim, object.Int64("head_dim"));
  TS_ASSIGN_OR_RETURN(mha.batch_first, object.Bool("batch_first"));
  TS_ASSIGN_OR_RETURN(mha.in_proj_bias, object.Bool("in_proj_bias"));
  TS_ASSIGN_OR_RETURN(mha.bias_k, object.Bool("bias_k"));
  TS_ASSIGN_OR_RETURN(mha.bias_v, object.Bool("bias_v"));
  TS_ASSIGN_OR_RETURN(mha.add_zero_attn, object.Bool("add_zero_attn"));
  TS_ASSIGN_OR_RETURN(mha.dropout, object.Number("dropout"));
  TS_ASSIGN_OR_RETURN(mha.training, object.Bool("training"));
  TS_ASSIGN_OR_RETURN(mha.out_proj,
                      ReadNested(object, "out_proj", &ReadLinear));
  return mha;
}

absl::StatusOr<TransformerEncoderLayerParams> ReadEncoderLayer(
    const JsonObject& object) {
  TransformerEncoderLayerParams layer;
  TS_ASSIGN_OR_RETURN(layer.self_attn,
                      ReadNested(object, "self_attn", &ReadMultiheadAttention));
  TS_ASSIGN_OR_RETURN(layer.linear1,
                      ReadNested(object, "linear1", &ReadLinear));
  TS_ASSIGN_OR_RETURN(layer.dropout,
                      ReadNested(object, "dropout", &ReadDropout));
  TS_ASSIGN_OR_RETURN(layer.linear2,
                      ReadNested(object, "linear2", &ReadLinear));
  TS_ASSIGN_OR_RETURN(layer.norm1, ReadNested(object, "norm1", &ReadLayerNorm));
  TS_ASSIGN_OR_RETURN(layer.norm2, ReadNested(object, "norm2", &ReadLayerNorm));
  TS_ASSIGN_OR_RETURN(layer.dropout1,
                      ReadNested(object, "dropout1", &ReadDropout));
  TS_ASSIGN_OR_RETURN(layer.dropout2,
                      ReadNested(object, "dropout2", &ReadDropout));
  TS_ASSIGN_OR_RETURN(layer.activation_is_relu,
                      object.Bool("activation_is_relu"));
  return layer;
}

absl::StatusOr<TransformerDecoderLayerParams> ReadDecoderLayer(
    const JsonObject& object) {
  TransformerDecoderLayerParams layer;
  TS_ASSIGN_OR_RETURN(layer.self_attn,
                      ReadNested(object, "self_attn", &ReadMultiheadAttention));
  TS_ASSIGN_OR_RETURN(
      layer.multihead_attn,
      ReadNested(object, "multihead_attn", &ReadMultiheadAttention));
  TS_ASSIGN_OR_RETURN(layer.linear1,
                      ReadNested(object, "linear1", &ReadLinear));
  TS_ASSIGN_OR_RETURN(layer.dropout,
                      ReadNested(object, "dropout", &ReadDropout));
  TS_ASSIGN_OR_RETURN(layer.linear2,
                      ReadNested(object, "linear2", &ReadLinear));
  TS_ASSIGN_OR_RETURN(layer.norm1, ReadNested(object, "norm1", &ReadLayerNorm));
  TS_ASSIGN_OR_RETURN(layer.norm2, ReadNested(object, "norm2", &ReadLayerNorm));
  TS_ASSIGN_OR_RETURN(layer.norm3, ReadNested(object, "norm3", &ReadLayerNorm));
  TS_ASSIGN_OR_RETURN(layer.dropout1,
                      ReadNested(object, "dropout1", &ReadDropout));
  TS_ASSIGN_OR_RETURN(layer.dropout2,
                      ReadNested(object, "dropout2", &ReadDropout));
  TS_ASSIGN_OR_RETURN(layer.dropout3,
                      ReadNested(object, "dropout3", &ReadDropout));
  TS_ASSIGN_OR_RETURN(layer.activation_is_relu,
                      object.Bool("activation_is_relu"));
  return layer;
}

// {"layers": [layer, ...], "norm": LayerNorm or null}
template <typename Layer>
absl::Status ReadStack(const JsonObject& parent, absl::string_view key,
                       absl::StatusOr<Layer> (*read_layer)(const JsonObject&),
                       std::vector<Layer>& layers,
                       std::optional<LayerNormParams>& norm) {
  TS_ASSIGN_OR_RETURN(JsonObject stack, parent.Object(key));
  TS_ASSIGN_OR_RETURN(JsonArray items, stack.Array("layers"));
  for (std::size_t i = 0; i < items.size(); ++i) {
    TS_ASSIGN_OR_RETURN(Layer layer, ReadObject(items.Item(i), read_layer));
    layers.push_back(std::move(layer));
  }
  TS_ASSIGN_OR_RETURN(norm, ReadOptionalLayerNorm(stack, "norm"));
  return stack.RejectUnreadKeys();
}

absl::StatusOr<TransformerParams> ReadTransformer(const JsonObject& object) {
  TransformerParams transformer;
  TS_ASSIGN_OR_RETURN(transformer.native_stacks, object.Bool("native_stacks"));
  // Non-native stacks are rejected by the formula before anything is read,
  // so their description may stop here.
  if (transformer.native_stacks || object.Contains("encoder")) {
    TS_RETURN_IF_ERROR(ReadStack(object, "encoder", &ReadEncoderLayer,
                                 transformer.encoder_layers,
                                 transformer.encoder_norm));
  }
  if (transformer.native_stacks || object.Contains("decoder")) {
    TS_RETURN_IF_ERROR(ReadStack(object, "decoder", &ReadDecoderLayer,
                                 transformer.decoder_layers,
                                 transformer.decoder_norm));
  }
  return transformer;
}

// `read` as a reader of the ModuleParams variant.
template <typename Params>
absl::StatusOr<ModuleParams> AsModuleParams(
    const JsonObject& object,
    absl::StatusOr<Params> (*read)(const JsonObject&)) {
  TS_ASSIGN_OR_RETURN(Params params, read(object));
  return ModuleParams(std::move(params));
}

absl::StatusOr<ModuleParams> ReadParams(ModuleFamily family,
                                        const JsonObject& object) {
  switch (family) {
    case ModuleFamily::kLinear:
      return AsModuleParams(object, &ReadLinear);
    case ModuleFamily::kReLU:
    case ModuleFamily::kELU:
    case ModuleFamily::kLeakyReLU:
    case ModuleFamily::kReLU6:
      return AsModuleParams(object, &ReadActivation);
    case ModuleFamily::kConvTranspose:
    case ModuleFamily::kConv:
      return AsModuleParams(object, &ReadConv);
    case ModuleFamily::kBatchNorm:
      return AsModuleParams(object, &ReadBatchNorm);
    case ModuleFamily::kMaxPool:
    case ModuleFamily::kAvgPool:
      return AsModuleParams(object, &ReadPool);
    case ModuleFamily::kDropout:
      return AsModuleParams(object, &ReadDropout);
    case ModuleFamily::kLayerNorm:
      return AsModuleParams(object, &ReadLayerNorm);
    case ModuleFamily::kMultiheadAttention:
      return AsModuleParams(object, &ReadMultiheadAttention);
    case ModuleFamily::kTransformer:
      return AsModuleParams(object, &ReadTransformer);
    case ModuleFamily::kUnsupported:
    case ModuleFamily::kIdentity:
    case ModuleFamily::kFlatten:
    case ModuleFamily::kTanh:
    case ModuleFamily::kSigmoid:
    case ModuleFamily::kAdaptiveMaxPool:
    case ModuleFamily::kAdaptiveAvgPool:
      break;
  }
  return ModuleParams(std::monostate());
}

constexpr absl::string_view kValueKinds =
    "tensor, none, tuple, list, mapping, scalar or object";

absl::StatusOr<CallValue> ReadValue(const JsonValue& node);

absl::StatusOr<std::vector<CallValue>> ReadValueArray(const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(JsonArray items, node.Array());
  std::vector<CallValue> values;
  for (std::size_t i = 0; i < items.size(); ++i) {
    TS_ASSIGN_OR_RETURN(CallValue value, ReadValue(items.Item(i)));
    values.push_back(std::move(value));
  }
  return values;
}

absl::StatusOr<CallValue> ReadValue(const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(JsonObject object, node.Object());
  TS_ASSIGN_OR_RETURN(std::string kind, object.String("kind"));
  CallValue value;
  if (kind == "tensor") {
    TS_ASSIGN_OR_RETURN(JsonValue shape, object.Member("shape"));
    TS_ASSIGN_OR_RETURN(Dims dims, IntArrayValue(shape, /*non_negative=*/true));
    value = CallValue::Tensor(std::move(dims));
    // Metadata the formulas do not read.
    if (object.Contains("dtype"))
      TS_RETURN_IF_ERROR(object.String("dtype").status());
    if (object.Contains("device"))
      TS_RETURN_IF_ERROR(object.String("device").status());
    if (object.Contains("requires_grad")) {
      TS_RETURN_IF_ERROR(object.Bool("requires_grad").status());
    }
  } else if (kind == "none") {
    value = CallValue::None();
  } else if (kind == "tuple" || kind == "list") {
    TS_ASSIGN_OR_RETURN(JsonValue items_node, object.Member("items"));
    TS_ASSIGN_OR_RETURN(std::vector<CallValue> items,
                        ReadValueArray(items_node));
    value = kind == "tuple" ? CallValue::Tuple(std::move(items))
                            : CallValue::List(std::move(items));
    if (object.Contains("type")) {
      TS_ASSIGN_OR_RETURN(value.type, object.String("type"));
    }
  } else if (kind == "mapping") {
    TS_ASSIGN_OR_RETURN(std::string type, object.String("type"));
    TS_ASSIGN_OR_RETURN(JsonArray items, object.Array("items"));
    std::vector<CallValue> values;
    for (std::size_t i = 0; i < items.size(); ++i) {
      TS_ASSIGN_OR_RETURN(JsonObject item, items.Item(i).Object());
      item.OptionalMember("key");  // absent for keys that are not identifiers
      TS_RETURN_IF_ERROR(item.String("key_type").status());
      TS_ASSIGN_OR_RETURN(JsonValue entry, item.Member("value"));
      TS_ASSIGN_OR_RETURN(CallValue entry_value, ReadValue(entry));
      values.push_back(std::move(entry_value));
      TS_RETURN_IF_ERROR(item.RejectUnreadKeys());
    }
    value = CallValue::Mapping(std::move(type), std::move(values));
  } else if (kind == "scalar") {
    TS_ASSIGN_OR_RETURN(std::string type, object.String("type"));
    value = CallValue::Scalar(std::move(type));
  } else if (kind == "object") {
    TS_ASSIGN_OR_RETURN(std::string type, object.String("type"));
    value = CallValue::Object(std::move(type));
  } else {
    return report::FieldError(object.PathOf("kind"),
                              absl::StrCat("unknown value kind '", kind,
                                           "' (expected ", kValueKinds, ")"));
  }
  TS_RETURN_IF_ERROR(object.RejectUnreadKeys());
  return value;
}

std::string FamilyNames() {
  std::vector<absl::string_view> names;
  for (int i = 0; i <= static_cast<int>(ModuleFamily::kTransformer); ++i) {
    names.push_back(ModuleFamilyName(static_cast<ModuleFamily>(i)));
  }
  return absl::StrJoin(names, ", ");
}

}  // namespace

absl::StatusOr<ModuleDescription> ModuleDescriptionFromJson(
    const Json& node, absl::string_view field) {
  TS_ASSIGN_OR_RETURN(JsonObject object,
                      JsonValue(node, std::string(field)).Object());
  ModuleDescription module;
  TS_ASSIGN_OR_RETURN(module.type, object.String("type"));
  TS_ASSIGN_OR_RETURN(std::string family_name, object.String("family"));
  std::optional<ModuleFamily> family = ParseModuleFamily(family_name);
  if (!family) {
    return report::FieldError(
        object.PathOf("family"),
        absl::StrCat("unknown family '", family_name, "' (expected one of ",
                     FamilyNames(), ")"));
  }
  module.family = *family;
  TS_ASSIGN_OR_RETURN(JsonValue count, object.Member("parameter_count"));
  if (!report::IsJsonInteger(count.node())) return count.Expected("an integer");
  TS_ASSIGN_OR_RETURN(module.parameter_count, count.Integer());
  if (module.parameter_count < 0) return count.Error("must not be negative");
  TS_ASSIGN_OR_RETURN(module.params, ReadParams(module.family, object));
  TS_RETURN_IF_ERROR(object.RejectUnreadKeys());
  if (absl::Status status = ValidateModuleDescription(module); !status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", status.message()));
  }
  return module;
}

absl::StatusOr<CallValue> CallValueFromJson(const Json& node,
                                            absl::string_view field) {
  return ReadValue(JsonValue(node, std::string(field)));
}

absl::StatusOr<ModuleCall> ModuleCallFromJson(const Json& node,
                                              absl::string_view field) {
  TS_ASSIGN_OR_RETURN(JsonObject object,
                      JsonValue(node, std::string(field)).Object());
  ModuleCall call;
  TS_ASSIGN_OR_RETURN(JsonValue inputs, object.Member("inputs"));
  TS_ASSIGN_OR_RETURN(call.inputs, ReadValueArray(inputs));
  TS_ASSIGN_OR_RETURN(JsonValue output, object.Member("output"));
  TS_ASSIGN_OR_RETURN(call.output, ReadValue(output));
  TS_RETURN_IF_ERROR(object.RejectUnreadKeys());
  return call;
}

absl::StatusOr<CapturedModuleCall> CapturedModuleCallFromJson(
    const Json& node, absl::string_view field) {
  TS_ASSIGN_OR_RETURN(JsonObject object,
                      JsonValue(node, std::string(field)).Object());
  CapturedModuleCall captured;
  TS_ASSIGN_OR_RETURN(captured.path, object.String("path"));
  TS_ASSIGN_OR_RETURN(JsonValue module, object.Member("module"));
  TS_ASSIGN_OR_RETURN(JsonValue call, object.Member("call"));
  TS_RETURN_IF_ERROR(object.RejectUnreadKeys());
  TS_ASSIGN_OR_RETURN(captured.module,
                      ModuleDescriptionFromJson(module.node(), module.path()));
  TS_ASSIGN_OR_RETURN(captured.call,
                      ModuleCallFromJson(call.node(), call.path()));
  return captured;
}

}  // namespace torchscan::formulas
