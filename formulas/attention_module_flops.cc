// MultiheadAttention and Transformer FLOPs (flops_mha, flops_transformer*
// of torchscan 0.2.0; its MultiheadAttention and Transformer FLOPs).

#include "formulas/attention_module_flops.h"

#include <array>
#include <initializer_list>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "formulas/module_formula_support.h"
#include "formulas/module_formulas.h"

namespace torchscan::formulas {
namespace module_internal {
namespace {

using python::Py;
using python::PyTuple;

constexpr absl::string_view kBatched3d =
    "MultiheadAttention FLOPs only support batched 3D inputs.";
constexpr absl::string_view kBiasKvOrZeroAttn =
    "MultiheadAttention FLOPs do not support add_bias_kv or add_zero_attn.";
constexpr absl::string_view kNativeStacks =
    "Transformer FLOPs only support the native encoder and decoder stacks.";
constexpr absl::string_view kReluOnly =
    "Transformer FLOPs only support the default ReLU activation.";

// TorchScan looks for an averaged attention-weights tensor in the output:
// isinstance(out, (tuple, list)) and len(out) > 1 and out[1] is a 3-D tensor.
bool ReturnsHeadAveragedWeights(const CallValue* out) {
  if (out == nullptr) return false;
  if (out->kind != CallValue::Kind::kTuple &&
      out->kind != CallValue::Kind::kList) {
    return false;
  }
  return out->items.size() > 1 && out->items[1].is_tensor() &&
         out->items[1].shape.size() == 3;
}

bool IsNotNone(const CallValue* value) { return !value->is_none(); }

// The position-wise feed-forward block: linear1, ReLU, dropout, linear2.
// Upstream evaluates linear2 with x's leading dimensions (quirk 14).
template <typename Layer>
Py<ExactCount> FeedForwardFlops(const Layer& layer, const PyTuple& inputs) {
  if (!layer.activation_is_relu)
    return python::Raise("NotImplementedError", kReluOnly);
  TS_PY_ASSIGN_OR_RAISE(const CallValue* x, python::ItemAt(inputs, 0));
  TS_PY_ASSIGN_OR_RAISE(const Dims* shape, python::ShapeOf(*x));
  const ExactCount hidden =
      ExactProduct(python::AllButLast(*shape)) * layer.linear1.out_features;
  const ExactCount dropout =
      layer.dropout.training && layer.dropout.p > 0 ? hidden : ExactCount(0);
  TS_PY_ASSIGN_OR_RAISE(ExactCount first, LinearFlops(layer.linear1, inputs));
  TS_PY_ASSIGN_OR_RAISE(ExactCount second, LinearFlops(layer.linear2, inputs));
  return first + hidden + dropout + second;
}

// `(flops_dropout(d, inputs) if d.training else 0) + input_flops`: the
// residual addition, with the sub-layer's dropout when it is training.
Py<ExactCount> ResidualFlops(const DropoutParams& dropout,
                             const PyTuple& inputs, ExactCount input_flops) {
  ExactCount flops = 0;
  if (dropout.training) {
    TS_PY_ASSIGN_OR_RAISE(ExactCount dropped, DropoutFlops(dropout, inputs));
    flops = dropped;
  }
  return flops + input_flops;
}

// Sums steps in order, as Python's `+=` chain would, stopping at the first
// exception. Steps are callables so that later ones are not evaluated.
using Step = absl::FunctionRef<Py<ExactCount>()>;
Py<ExactCount> SumInOrder(std::initializer_list<Step> steps) {
  ExactCount total = 0;
  for (const Step& step : steps) {
    TS_PY_ASSIGN_OR_RAISE(ExactCount flops, step());
    total += flops;
  }
  return total;
}

}  // namespace

Py<ExactCount> MultiheadAttentionFlops(const MultiheadAttentionParams& mha,
                                       const PyTuple& inputs,
                                       const CallValue* out) {
  // `q, k, v = inputs[:3]`
  if (inputs.size() < 3) {
    return python::Raise(
        "ValueError",
        absl::StrCat("not enough values to unpack (expected 3, got ",
                     inputs.size(), ")"));
  }
  const std::array<const CallValue*, 3> qkv = {inputs[0], inputs[1], inputs[2]};
  for (const CallValue* tensor : qkv) {
    TS_PY_ASSIGN_OR_RAISE(std::int64_t ndim, python::NdimOf(*tensor));
    if (ndim != 3) return python::Raise("NotImplementedError", kBatched3d);
  }
  if (mha.bias_k || mha.bias_v || mha.add_zero_attn) {
    return python::Raise("NotImplementedError", kBiasKvOrZeroAttn);
  }
  const Dims& q = qkv[0]->shape;
  const Dims& k = qkv[1]->shape;
  const std::size_t batch_axis = mha.batch_first ? 0 : 1;
  const std::size_t sequence_axis = mha.batch_first ? 1 : 0;
  const ExactCount batch = q[batch_axis];
  const ExactCount target = q[sequence_axis];
  const ExactCount source = k[sequence_axis];
  const ExactCount heads = mha.num_heads;
  const ExactCount head_dim = mha.head_dim;
  const ExactCount rows = batch * heads * target;  // one per query and head

  ExactCount flops = 0;
  // Input projections, with their bias when present.
  for (const CallValue* tensor : qkv) {
    flops +=
        ExactProduct(python::AllButLast(tensor->shape)) * mha.embed_dim *
        (ExactCount(2) * tensor->shape.back() - 1 + (mha.in_proj_bias ? 1 : 0));
  }
  // One reciprocal square root, then one scaling multiplication per element.
  flops += ExactCount(1) + rows * head_dim;
  flops += rows * source * (ExactCount(2) * head_dim - 1);  // Q @ K^T
  // Positions 3 and 5 of the ordered inputs: key_padding_mask, attn_mask.
  const int masks = (inputs.size() > 3 && IsNotNone(inputs[3]) ? 1 : 0) +
                    (inputs.size() > 5 && IsNotNone(inputs[5]) ? 1 : 0);
  flops += ExactCount(masks) * rows * source;
  flops += rows * (ExactCount(3) * source - 1);  // softmax
  if (mha.training && mha.dropout > 0) flops += rows * source;
  flops += rows * head_dim * (ExactCount(2) * source - 1);  // weights @ V
  TS_PY_ASSIGN_OR_RAISE(ExactCount projection,
                        LinearFlops(mha.out_proj, {qkv[0]}));
  flops += projection;
  if (ReturnsHeadAveragedWeights(out)) flops += rows * source;
  return flops;
}

Py<ExactCount> TransformerEncoderLayerFlops(
    const TransformerEncoderLayerParams& layer, const PyTuple& inputs) {
  TS_PY_ASSIGN_OR_RAISE(const CallValue* x, python::ItemAt(inputs, 0));
  TS_PY_ASSIGN_OR_RAISE(ExactCount input_flops, python::NumelOf(*x));
  const CallValue* src_mask = python::ItemOrNone(inputs, 1);
  const CallValue* key_padding_mask = python::ItemOrNone(inputs, 2);
  const PyTuple attention_inputs = {
      x, x, x, key_padding_mask, &python::FalseValue(), src_mask};
  const ExactCount residual = input_flops;
  return SumInOrder({
      [&] {
        return MultiheadAttentionFlops(layer.self_attn, attention_inputs,
                                       nullptr);
      },
      [&] { return ResidualFlops(layer.dropout1, inputs, residual); },
      [&] { return LayerNormFlops(layer.norm1, inputs); },
      [&] { return FeedForwardFlops(layer, inputs); },
      [&] { return ResidualFlops(layer.dropout2, inputs, residual); },
      [&] { return LayerNormFlops(layer.norm2, inputs); },
  });
}

Py<ExactCount> TransformerDecoderLayerFlops(
    const TransformerDecoderLayerParams& layer, const PyTuple& inputs) {
  TS_PY_ASSIGN_OR_RAISE(const CallValue* x, python::ItemAt(inputs, 0));
  TS_PY_ASSIGN_OR_RAISE(ExactCount input_flops, python::NumelOf(*x));
  const CallValue* tgt_mask = python::ItemOrNone(inputs, 2);
  const CallValue* memory_mask = python::ItemOrNone(inputs, 3);
  const CallValue* tgt_key_padding_mask = python::ItemOrNone(inputs, 4);
  const CallValue* memory_key_padding_mask = python::ItemOrNone(inputs, 5);
  const PyTuple self_attention = {
      x, x, x, tgt_key_padding_mask, &python::FalseValue(), tgt_mask};
  const ExactCount residual = input_flops;
  // Cross-attention reads inputs[1], the memory, only when it gets there.
  auto cross_attention = [&]() -> Py<ExactCount> {
    TS_PY_ASSIGN_OR_RAISE(const CallValue* memory, python::ItemAt(inputs, 1));
    const PyTuple attention_inputs = {x,
                                      memory,
                                      memory,
                                      memory_key_padding_mask,
                                      &python::FalseValue(),
                                      memory_mask};
    return MultiheadAttentionFlops(layer.multihead_attn, attention_inputs,
                                   nullptr);
  };
  return SumInOrder({
      [&] {
        return MultiheadAttentionFlops(layer.self_attn, self_attention,
                                       nullptr);
      },
      [&] { return ResidualFlops(layer.dropout1, inputs, residual); },
      [&] { return LayerNormFlops(layer.norm1, inputs); },
      cross_attention,
      [&] { return ResidualFlops(layer.dropout2, inputs, residual); },
      [&] { return LayerNormFlops(layer.norm2, inputs); },
      [&] { return FeedForwardFlops(layer, inputs); },
      [&] { return ResidualFlops(layer.dropout3, inputs, residual); },
      [&] { return LayerNormFlops(layer.norm3, inputs); },
  });
}

Py<ExactCount> TransformerFlops(const TransformerParams& transformer,
                                const PyTuple& inputs) {
  if (!transformer.native_stacks) {
    return python::Raise("NotImplementedError", kNativeStacks);
  }
  // Ordered inputs: src, tgt, then the six masks.
  const CallValue* src_mask = python::ItemOrNone(inputs, 2);
  const CallValue* tgt_mask = python::ItemOrNone(inputs, 3);
  const CallValue* memory_mask = python::ItemOrNone(inputs, 4);
  const CallValue* src_key_padding_mask = python::ItemOrNone(inputs, 5);
  const CallValue* tgt_key_padding_mask = python::ItemOrNone(inputs, 6);
  const CallValue* memory_key_padding_mask = python::ItemOrNone(inputs, 7);
  TS_PY_ASSIGN_OR_RAISE(const CallValue* src, python::ItemAt(inputs, 0));
  TS_PY_ASSIGN_OR_RAISE(const CallValue* tgt, python::ItemAt(inputs, 1));
  const PyTuple encoder_inputs = {src, src_mask, src_key_padding_mask};
  // The decoder's memory is the raw src, not the encoder output (quirk 14).
  const PyTuple decoder_inputs = {tgt,
                                  src,
                                  tgt_mask,
                                  memory_mask,
                                  tgt_key_padding_mask,
                                  memory_key_padding_mask};
  ExactCount total = 0;
  auto add = [&total](const Py<ExactCount>& flops) {
    if (flops.ok()) total += *flops;
    return flops.ok();
  };
  for (const TransformerEncoderLayerParams& layer :
       transformer.encoder.layers) {
    Py<ExactCount> flops = TransformerEncoderLayerFlops(layer, encoder_inputs);
    if (!add(flops)) return flops;
  }
  if (transformer.encoder.norm) {
    Py<ExactCount> flops = LayerNormFlops(*transformer.encoder.norm, {src});
    if (!add(flops)) return flops;
  }
  for (const TransformerDecoderLayerParams& layer :
       transformer.decoder.layers) {
    Py<ExactCount> flops = TransformerDecoderLayerFlops(layer, decoder_inputs);
    if (!add(flops)) return flops;
  }
  if (transformer.decoder.norm) {
    Py<ExactCount> flops = LayerNormFlops(*transformer.decoder.norm, {tgt});
    if (!add(flops)) return flops;
  }
  return total;
}

}  // namespace module_internal

absl::StatusOr<FormulaOutcome<Count>> TransformerEncoderLayerFlops(
    const TransformerEncoderLayerParams& layer,
    absl::Span<const CallValue> inputs) {
  return module_internal::Finish(module_internal::TransformerEncoderLayerFlops(
                                     layer, python::TupleOf(inputs)),
                                 "TransformerEncoderLayer FLOPs");
}

absl::StatusOr<FormulaOutcome<Count>> TransformerDecoderLayerFlops(
    const TransformerDecoderLayerParams& layer,
    absl::Span<const CallValue> inputs) {
  return module_internal::Finish(module_internal::TransformerDecoderLayerFlops(
                                     layer, python::TupleOf(inputs)),
                                 "TransformerDecoderLayer FLOPs");
}

}  // namespace torchscan::formulas
