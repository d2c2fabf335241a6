#include "formulas/module_params_json.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "base/status_macros.h"

namespace torchscan::formulas::params_json {
namespace {

using report::JsonArray;
using report::JsonObject;
using report::JsonValue;

// An int, a tuple (array of ints) or, when allowed, a string.
absl::StatusOr<HyperParameter> HyperValue(const JsonValue& node,
                                          bool allow_string) {
  if (node.node().is_string() && allow_string) {
    return HyperParameter::String(node.node().get<std::string>());
  }
  if (node.node().is_array()) {
    TS_ASSIGN_OR_RETURN(std::vector<std::int64_t> values,
                        IntArray(node, /*non_negative=*/false));
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

}  // namespace

// Descriptions come from our own front ends, so their errors name only the
// kind of a wrong value ("got string") and say "must not be negative"
// without repeating the number.
absl::StatusOr<std::vector<std::int64_t>> IntArray(
    const report::JsonValue& node, bool non_negative) {
  if (!node.node().is_array()) return node.Expected("an array of integers");
  TS_ASSIGN_OR_RETURN(report::JsonArray items, node.Array());
  std::vector<std::int64_t> values;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const report::JsonValue item = items.Item(i);
    TS_ASSIGN_OR_RETURN(std::int64_t value, item.Int64());
    if (non_negative && value < 0) return item.Error("must not be negative");
    values.push_back(value);
  }
  return values;
}

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
                      IntArray(shape, /*non_negative=*/false));
  TS_ASSIGN_OR_RETURN(norm.weight, object.Bool("weight"));
  TS_ASSIGN_OR_RETURN(norm.bias, object.Bool("bias"));
  return norm;
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

namespace {

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

}  // namespace

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

}  // namespace torchscan::formulas::params_json
