#include "formulas/fused_layer_formulas.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace torchscan::formulas {
namespace {

// Rows of a [..., features] tensor: every element but the last dimension.
absl::StatusOr<Count> Rows(ShapeRef shape, absl::string_view role) {
  if (shape.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(role, " must not be 0-D"));
  }
  return ProductOf(shape.first(shape.size() - 1));
}

absl::StatusOr<Count> RnnLayerFlops(const OperatorCall& call, std::size_t w_ih,
                                    Count passes) {
  TS_ASSIGN_OR_RETURN(ShapeRef input, ArgumentShape(call, 0, "input"));
  TS_ASSIGN_OR_RETURN(ShapeRef input_weights,
                      ArgumentShape(call, w_ih, "weight_ih"));
  TS_ASSIGN_OR_RETURN(ShapeRef hidden_weights,
                      ArgumentShape(call, w_ih + 1, "weight_hh"));
  TS_ASSIGN_OR_RETURN(Count rows, Rows(input, "input"));
  TS_ASSIGN_OR_RETURN(Count ih, ProductOf(input_weights));
  TS_ASSIGN_OR_RETURN(Count hh, ProductOf(hidden_weights));
  TS_ASSIGN_OR_RETURN(Count weights, Sum({ih, hh}));
  return Product({2, passes, rows, weights});
}

// Self- or cross-attention of the fused kernels: q [B,L,E], k/v [B,S,E],
// in-projection weight [3E, E], output projection [E, E].
absl::StatusOr<Count> FusedAttentionFlops(ShapeRef query, ShapeRef key,
                                          ShapeRef value, ShapeRef qkv_weight,
                                          ShapeRef proj_weight) {
  for (auto [shape, role] : {std::pair{query, "query"}, std::pair{key, "key"},
                             std::pair{value, "value"}}) {
    TS_RETURN_IF_ERROR(ExpectRank(shape, 3, role));
  }
  TS_RETURN_IF_ERROR(ExpectRank(qkv_weight, 2, "qkv_weight"));
  const std::int64_t embed = query[2];
  if (qkv_weight[0] != 3 * embed || qkv_weight[1] != embed) {
    return absl::InvalidArgumentError(
        absl::StrCat("fused attention: qkv_weight must be [3*", embed, ", ",
                     embed, "], got ", ShapeText(qkv_weight)));
  }
  const std::int64_t batch = query[0], target = query[1], source = key[1];
  // One [E, E] projection per row of q, k and v.
  TS_ASSIGN_OR_RETURN(Count q_projection,
                      Product({2, batch, target, embed, embed}));
  TS_ASSIGN_OR_RETURN(Count k_projection,
                      Product({2, key[0], source, embed, embed}));
  TS_ASSIGN_OR_RETURN(Count v_projection,
                      Product({2, value[0], value[1], embed, embed}));
  // Scores and weighted values over all heads: 2 * 2 * B * L * S * E.
  TS_ASSIGN_OR_RETURN(Count attention,
                      Product({4, batch, target, source, embed}));
  TS_ASSIGN_OR_RETURN(Count output_rows, Rows(query, "query"));
  TS_ASSIGN_OR_RETURN(Count out_weights, ProductOf(proj_weight));
  TS_ASSIGN_OR_RETURN(Count out_projection,
                      Product({2, output_rows, out_weights}));
  return Sum(
      {q_projection, k_projection, v_projection, attention, out_projection});
}

}  // namespace

// mkldnn_rnn_layer(input, weight0 = w_ih, weight1 = w_hh, ...)
absl::StatusOr<Count> MkldnnRnnLayerFlops(const OperatorCall& call) {
  return RnnLayerFlops(call, /*w_ih=*/1, /*passes=*/1);
}

// mkldnn_rnn_layer_backward(input, weight1 = w_ih, weight2 = w_hh, ...)
absl::StatusOr<Count> MkldnnRnnLayerBackwardFlops(const OperatorCall& call) {
  return RnnLayerFlops(call, /*w_ih=*/1, /*passes=*/2);
}

// _native_multi_head_attention(query, key, value, embed_dim, num_head,
//                              qkv_weight, qkv_bias, proj_weight, ...)
absl::StatusOr<Count> NativeMultiHeadAttentionFlops(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(ShapeRef query, ArgumentShape(call, 0, "query"));
  TS_ASSIGN_OR_RETURN(ShapeRef key, ArgumentShape(call, 1, "key"));
  TS_ASSIGN_OR_RETURN(ShapeRef value, ArgumentShape(call, 2, "value"));
  TS_ASSIGN_OR_RETURN(ShapeRef qkv_weight,
                      ArgumentShape(call, 5, "qkv_weight"));
  TS_ASSIGN_OR_RETURN(ShapeRef proj_weight,
                      ArgumentShape(call, 7, "proj_weight"));
  return FusedAttentionFlops(query, key, value, qkv_weight, proj_weight);
}

// _transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight,
//     qkv_bias, proj_weight, proj_bias, use_gelu, norm_first, eps,
//     norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2,
//     ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2, ...)
absl::StatusOr<Count> TransformerEncoderLayerFlops(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(ShapeRef source, ArgumentShape(call, 0, "src"));
  TS_ASSIGN_OR_RETURN(ShapeRef qkv_weight,
                      ArgumentShape(call, 3, "qkv_weight"));
  TS_ASSIGN_OR_RETURN(ShapeRef proj_weight,
                      ArgumentShape(call, 5, "proj_weight"));
  TS_ASSIGN_OR_RETURN(ShapeRef ffn_1, ArgumentShape(call, 14, "ffn_weight_1"));
  TS_ASSIGN_OR_RETURN(ShapeRef ffn_2, ArgumentShape(call, 16, "ffn_weight_2"));
  TS_ASSIGN_OR_RETURN(
      Count attention,
      FusedAttentionFlops(source, source, source, qkv_weight, proj_weight));
  TS_ASSIGN_OR_RETURN(Count rows, Rows(source, "src"));
  TS_ASSIGN_OR_RETURN(Count first, ProductOf(ffn_1));
  TS_ASSIGN_OR_RETURN(Count second, ProductOf(ffn_2));
  TS_ASSIGN_OR_RETURN(Count feed_forward_weights, Sum({first, second}));
  TS_ASSIGN_OR_RETURN(Count feed_forward,
                      Product({2, rows, feed_forward_weights}));
  return Sum({attention, feed_forward});
}

}  // namespace torchscan::formulas
