// Fused kernels that run a whole layer in one operator. FlopCounterMode sees
// them as one call with no formula and counts 0; their formulas here count
// exactly what the same layer's decomposed path counts under
// FlopCounterMode's conventions (its matrix products).

#ifndef TORCHSCAN_FORMULAS_FUSED_LAYER_FORMULAS_H_
#define TORCHSCAN_FORMULAS_FUSED_LAYER_FORMULAS_H_

#include "absl/status/statusor.h"
#include "formulas/formula_support.h"
#include "formulas/operator_call.h"

namespace torchscan::formulas {

// One LSTM layer on oneDNN (the CPU path of nn.LSTM): per time step and batch
// row, the input and hidden projections: 2 * rows * (numel(w_ih) +
// numel(w_hh)).
absl::StatusOr<Count> MkldnnRnnLayerFlops(const OperatorCall& call);
// Its backward computes the input, hidden and weight gradients of both
// projections: twice the forward.
absl::StatusOr<Count> MkldnnRnnLayerBackwardFlops(const OperatorCall& call);

// nn.MultiheadAttention's inference fast path: in-projections, the attention
// products, and the output projection.
absl::StatusOr<Count> NativeMultiHeadAttentionFlops(const OperatorCall& call);
// nn.TransformerEncoderLayer's inference fast path: self-attention as above
// plus the two feed-forward projections.
absl::StatusOr<Count> TransformerEncoderLayerFlops(const OperatorCall& call);

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_FUSED_LAYER_FORMULAS_H_
