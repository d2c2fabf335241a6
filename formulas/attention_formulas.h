// Scaled-dot-product attention formulas: the two batched products
// (Q @ K^T and scores @ V) forward, the five of the backward pass; softmax,
// masks, dropout and causal skipping are not counted, as in FlopCounterMode.
// Query heads may be a multiple of key/value heads (grouped-query attention).

#ifndef TORCHSCAN_FORMULAS_ATTENTION_FORMULAS_H_
#define TORCHSCAN_FORMULAS_ATTENTION_FORMULAS_H_

#include "absl/status/statusor.h"
#include "formulas/formula_support.h"
#include "formulas/operator_call.h"

namespace torchscan::formulas {

// q [b,hq,sq,d], k [b,hkv,sk,d], v [b,hkv,sk,dv] (BHSD layout).
absl::StatusOr<Count> SdpaForwardFlopCount(ShapeRef query, ShapeRef key,
                                           ShapeRef value);
absl::StatusOr<Count> SdpaBackwardFlopCount(ShapeRef grad_out, ShapeRef query,
                                            ShapeRef key, ShapeRef value);

// Fused SDPA kernels whose q, k, v are arguments 0-2 (grad_out, q, k, v for
// the backwards) in BHSD layout: flash, efficient, cudnn, the CPU flash
// kernel and the overrideable one.
absl::StatusOr<Count> SdpaForwardFlops(const OperatorCall& call);
absl::StatusOr<Count> SdpaBackwardFlops(const OperatorCall& call);

// A compiled graph's flex_attention_backward(query, key, value, out,
// logsumexp, grad_out, ...): SDPA's backward count, with grad_out's shape
// (out's when there is none).
absl::StatusOr<Count> FlexAttentionBackwardFlops(const OperatorCall& call);

// The raw kernels behind them, which take BSHD tensors and, for
// variable-length batches (nested tensors), packed sequences with offsets.
absl::StatusOr<Count> FlashAttentionForwardFlops(const OperatorCall& call);
absl::StatusOr<Count> FlashAttentionBackwardFlops(const OperatorCall& call);
absl::StatusOr<Count> EfficientAttentionForwardFlops(const OperatorCall& call);
absl::StatusOr<Count> EfficientAttentionBackwardFlops(const OperatorCall& call);

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_ATTENTION_FORMULAS_H_
