#include "formulas/attention_formulas.h"

#include <algorithm>
#include <array>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace torchscan::formulas {
namespace {

using Shape4 = std::array<std::int64_t, 4>;

absl::StatusOr<Shape4> AsBhsd(ShapeRef shape, absl::string_view role) {
  TS_RETURN_IF_ERROR(ExpectRank(shape, 4, role));
  return Shape4{shape[0], shape[1], shape[2], shape[3]};
}

// The raw kernels take [batch, seq, heads, dim]; the formulas want
// [batch, heads, seq, dim].
absl::StatusOr<Shape4> BshdAsBhsd(ShapeRef shape, absl::string_view role) {
  TS_RETURN_IF_ERROR(ExpectRank(shape, 4, role));
  return Shape4{shape[0], shape[2], shape[1], shape[3]};
}

absl::Status CheckGroupedHeads(std::int64_t query_heads,
                               std::int64_t kv_heads) {
  if (kv_heads <= 0 || query_heads < kv_heads || query_heads % kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attention: query heads (", query_heads,
        ") must be a multiple of key/value heads (", kv_heads, ")"));
  }
  return absl::OkStatus();
}

// Per-sequence (query length, key length) of a packed variable-length batch.
// With the offsets unreadable (meta or fake tensors), every sequence is
// taken at its maximum length, as FlopCounterMode does.
absl::StatusOr<std::vector<std::pair<std::int64_t, std::int64_t>>>
SequenceLengths(const OperatorValue& query_offsets,
                const OperatorValue& key_offsets,
                const OperatorValue& max_query, const OperatorValue& max_key) {
  if (query_offsets.shape_unknown || key_offsets.shape_unknown ||
      query_offsets.shape.size() != 1 ||
      query_offsets.shape != key_offsets.shape) {
    return absl::InvalidArgumentError(
        "attention: sequence offsets must be 1-D tensors of the same shape");
  }
  const std::int64_t sequences = query_offsets.shape[0] - 1;
  std::vector<std::pair<std::int64_t, std::int64_t>> lengths;
  if (query_offsets.values && key_offsets.values) {
    const std::vector<std::int64_t>& q = *query_offsets.values;
    const std::vector<std::int64_t>& k = *key_offsets.values;
    for (std::int64_t i = 0; i < sequences; ++i) {
      lengths.emplace_back(q[i + 1] - q[i], k[i + 1] - k[i]);
    }
    return lengths;
  }
  if (max_query.kind != OperatorValue::Kind::kInt ||
      max_key.kind != OperatorValue::Kind::kInt) {
    return absl::InvalidArgumentError(
        "attention: the offsets are unreadable and the maximum sequence "
        "lengths "
        "are not concrete");
  }
  lengths.assign(static_cast<std::size_t>(std::max<std::int64_t>(sequences, 0)),
                 {max_query.integer, max_key.integer});
  return lengths;
}

struct RawAttentionLayout {
  std::size_t grad_out = 0;  // backward only
  std::size_t query = 0;
  std::size_t offsets_q = 0;
  std::size_t offsets_k = 0;
  std::size_t max_q = 0;
  std::size_t max_k = 0;
  // Packed sequences: flash tensors are [total, heads, dim]; efficient
  // tensors keep a leading 1: [1, total, heads, dim].
  bool packed_has_leading_one = false;
  bool backward = false;
};

absl::StatusOr<Count> RawAttentionFlops(const OperatorCall& call,
                                        const RawAttentionLayout& layout) {
  TS_ASSIGN_OR_RETURN(ShapeRef query,
                      ArgumentShape(call, layout.query, "query"));
  TS_ASSIGN_OR_RETURN(ShapeRef key,
                      ArgumentShape(call, layout.query + 1, "key"));
  TS_ASSIGN_OR_RETURN(ShapeRef value,
                      ArgumentShape(call, layout.query + 2, "value"));
  TS_ASSIGN_OR_RETURN(
      const OperatorValue* query_offsets,
      OptionalTensorArgument(call, layout.offsets_q, "cum_seq_q"));

  auto evaluate = [&](const Shape4& q, const Shape4& k,
                      const Shape4& v) -> absl::StatusOr<Count> {
    if (!layout.backward) return SdpaForwardFlopCount(q, k, v);
    // grad_out has the query's shape.
    return SdpaBackwardFlopCount(q, q, k, v);
  };

  if (query_offsets == nullptr) {
    TS_ASSIGN_OR_RETURN(Shape4 q, BshdAsBhsd(query, "query"));
    TS_ASSIGN_OR_RETURN(Shape4 k, BshdAsBhsd(key, "key"));
    TS_ASSIGN_OR_RETURN(Shape4 v, BshdAsBhsd(value, "value"));
    if (layout.backward) {
      TS_ASSIGN_OR_RETURN(ShapeRef grad,
                          ArgumentShape(call, layout.grad_out, "grad_out"));
      TS_ASSIGN_OR_RETURN(Shape4 g, BshdAsBhsd(grad, "grad_out"));
      return SdpaBackwardFlopCount(g, q, k, v);
    }
    return evaluate(q, k, v);
  }

  TS_ASSIGN_OR_RETURN(
      const OperatorValue* key_offsets,
      OptionalTensorArgument(call, layout.offsets_k, "cum_seq_k"));
  if (key_offsets == nullptr) {
    return absl::InvalidArgumentError("attention: cum_seq_k is missing");
  }
  const std::size_t rank = layout.packed_has_leading_one ? 4 : 3;
  for (auto [shape, role] : {std::pair{query, "query"}, std::pair{key, "key"},
                             std::pair{value, "value"}}) {
    TS_RETURN_IF_ERROR(ExpectRank(shape, rank, role));
  }
  const std::size_t h = rank - 2;  // heads, then dim
  if (layout.max_q >= call.arguments.size() ||
      layout.max_k >= call.arguments.size()) {
    return absl::InvalidArgumentError("attention: max_q/max_k are missing");
  }
  TS_ASSIGN_OR_RETURN(auto lengths,
                      SequenceLengths(*query_offsets, *key_offsets,
                                      call.arguments[layout.max_q],
                                      call.arguments[layout.max_k]));
  Count total = 0;
  for (const auto& [query_length, key_length] : lengths) {
    TS_ASSIGN_OR_RETURN(
        Count flops, evaluate(Shape4{1, query[h], query_length, query[h + 1]},
                              Shape4{1, key[h], key_length, key[h + 1]},
                              Shape4{1, value[h], key_length, value[h + 1]}));
    TS_ASSIGN_OR_RETURN(total, Sum({total, flops}));
  }
  return total;
}

}  // namespace

absl::StatusOr<Count> SdpaForwardFlopCount(ShapeRef query, ShapeRef key,
                                           ShapeRef value) {
  TS_ASSIGN_OR_RETURN(Shape4 q, AsBhsd(query, "attention: query"));
  TS_ASSIGN_OR_RETURN(Shape4 k, AsBhsd(key, "attention: key"));
  TS_ASSIGN_OR_RETURN(Shape4 v, AsBhsd(value, "attention: value"));
  const auto [b, hq, sq, dq] = q;
  const std::int64_t hkv = k[1], sk = k[2], dv = v[3];
  if (!(b == k[0] && b == v[0] && hkv == v[1] && dq == k[3] && sk == v[2])) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attention: query/key/value shapes are incompatible: q=",
        ShapeText(query), ", k=", ShapeText(key), ", v=", ShapeText(value)));
  }
  TS_RETURN_IF_ERROR(CheckGroupedHeads(hq, hkv));
  // scores = q @ k^T: [b*hq, sq, dq] @ [b*hq, dq, sk]; out = scores @ v.
  TS_ASSIGN_OR_RETURN(Count scores, Product({2, b, hq, sq, sk, dq}));
  TS_ASSIGN_OR_RETURN(Count output, Product({2, b, hq, sq, dv, sk}));
  return Sum({scores, output});
}

absl::StatusOr<Count> SdpaBackwardFlopCount(ShapeRef grad_out, ShapeRef query,
                                            ShapeRef key, ShapeRef value) {
  TS_ASSIGN_OR_RETURN(Shape4 g, AsBhsd(grad_out, "attention: grad_out"));
  TS_ASSIGN_OR_RETURN(Shape4 q, AsBhsd(query, "attention: query"));
  TS_ASSIGN_OR_RETURN(Shape4 k, AsBhsd(key, "attention: key"));
  TS_ASSIGN_OR_RETURN(Shape4 v, AsBhsd(value, "attention: value"));
  const auto [b, hq, sq, dq] = q;
  const std::int64_t hkv = k[1], sk = k[2], dv = v[3];
  if (!(b == k[0] && b == v[0] && b == g[0] && hkv == v[1] && hq == g[1])) {
    return absl::InvalidArgumentError(
        "attention backward: batch/heads mismatch among tensors");
  }
  TS_RETURN_IF_ERROR(CheckGroupedHeads(hq, hkv));
  if (!(dq == k[3] && dv == g[3] && sk == v[2] && sq == g[2])) {
    return absl::InvalidArgumentError(
        "attention backward: grad_out/value/key/query shapes are incompatible");
  }
  // Recomputed scores, grad scores (grad_out @ v^T), grad v (scores^T @
  // grad_out), grad q (grad scores @ k), grad k (q^T @ grad scores).
  TS_ASSIGN_OR_RETURN(Count recompute, Product({2, b, hq, sq, sk, dq}));
  TS_ASSIGN_OR_RETURN(Count grad_scores, Product({2, b, hq, sq, sk, dv}));
  TS_ASSIGN_OR_RETURN(Count grad_v, Product({2, b, hq, sk, dv, sq}));
  TS_ASSIGN_OR_RETURN(Count grad_q, Product({2, b, hq, sq, dq, sk}));
  TS_ASSIGN_OR_RETURN(Count grad_k, Product({2, b, hq, dq, sk, sq}));
  return Sum({recompute, grad_scores, grad_v, grad_q, grad_k});
}

absl::StatusOr<Count> SdpaForwardFlops(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(ShapeRef query, ArgumentShape(call, 0, "query"));
  TS_ASSIGN_OR_RETURN(ShapeRef key, ArgumentShape(call, 1, "key"));
  TS_ASSIGN_OR_RETURN(ShapeRef value, ArgumentShape(call, 2, "value"));
  return SdpaForwardFlopCount(query, key, value);
}

absl::StatusOr<Count> SdpaBackwardFlops(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(ShapeRef grad_out, ArgumentShape(call, 0, "grad_out"));
  TS_ASSIGN_OR_RETURN(ShapeRef query, ArgumentShape(call, 1, "query"));
  TS_ASSIGN_OR_RETURN(ShapeRef key, ArgumentShape(call, 2, "key"));
  TS_ASSIGN_OR_RETURN(ShapeRef value, ArgumentShape(call, 3, "value"));
  return SdpaBackwardFlopCount(grad_out, query, key, value);
}

absl::StatusOr<Count> FlexAttentionBackwardFlops(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(ShapeRef query, ArgumentShape(call, 0, "query"));
  TS_ASSIGN_OR_RETURN(ShapeRef key, ArgumentShape(call, 1, "key"));
  TS_ASSIGN_OR_RETURN(ShapeRef value, ArgumentShape(call, 2, "value"));
  const bool has_grad_out =
      call.arguments.size() > 5 && call.arguments[5].is_tensor();
  TS_ASSIGN_OR_RETURN(ShapeRef grad_out,
                      ArgumentShape(call, has_grad_out ? 5 : 3, "grad_out"));
  return SdpaBackwardFlopCount(grad_out, query, key, value);
}

// _flash_attention_forward(query, key, value, cum_seq_q, cum_seq_k, max_q,
// max_k, ...)
absl::StatusOr<Count> FlashAttentionForwardFlops(const OperatorCall& call) {
  return RawAttentionFlops(
      call,
      {.query = 0, .offsets_q = 3, .offsets_k = 4, .max_q = 5, .max_k = 6});
}

// _flash_attention_backward(grad_out, query, key, value, out, logsumexp,
//                           cum_seq_q, cum_seq_k, max_q, max_k, ...)
absl::StatusOr<Count> FlashAttentionBackwardFlops(const OperatorCall& call) {
  return RawAttentionFlops(call, {.grad_out = 0,
                                  .query = 1,
                                  .offsets_q = 6,
                                  .offsets_k = 7,
                                  .max_q = 8,
                                  .max_k = 9,
                                  .backward = true});
}

// _efficient_attention_forward(query, key, value, bias, cu_seqlens_q,
//                              cu_seqlens_k, max_seqlen_q, max_seqlen_k, ...)
absl::StatusOr<Count> EfficientAttentionForwardFlops(const OperatorCall& call) {
  return RawAttentionFlops(call, {.query = 0,
                                  .offsets_q = 4,
                                  .offsets_k = 5,
                                  .max_q = 6,
                                  .max_k = 7,
                                  .packed_has_leading_one = true});
}

// _efficient_attention_backward(grad_out, query, key, value, bias, out,
//                               cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
//                               max_seqlen_k, ...)
absl::StatusOr<Count> EfficientAttentionBackwardFlops(
    const OperatorCall& call) {
  return RawAttentionFlops(call, {.grad_out = 0,
                                  .query = 1,
                                  .offsets_q = 6,
                                  .offsets_k = 7,
                                  .max_q = 8,
                                  .max_k = 9,
                                  .packed_has_leading_one = true,
                                  .backward = true});
}

}  // namespace torchscan::formulas
