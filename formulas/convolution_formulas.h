// Convolution formulas, FlopCounterMode's convention: for every output point
// (every input point when transposed) each filter tap multiplies every
// (input channel, output channel) pair of its group: 2 FLOPs per
// multiply-add, bias not counted.

#ifndef TORCHSCAN_FORMULAS_CONVOLUTION_FORMULAS_H_
#define TORCHSCAN_FORMULAS_CONVOLUTION_FORMULAS_H_

#include "absl/status/statusor.h"
#include "formulas/formula_support.h"
#include "formulas/operator_call.h"

namespace torchscan::formulas {

// 2 * prod(spatial) * prod(kernel) * batch * w[0] * w[1], where spatial is
// the output's spatial dims, or the input's when transposed.
absl::StatusOr<Count> ConvolutionFlopCount(ShapeRef input, ShapeRef weight,
                                           ShapeRef output, bool transposed);

// convolution, _convolution, convolution_overrideable: `transposed` is
// argument 6.
absl::StatusOr<Count> ConvolutionFlops(const OperatorCall& call);
// cudnn_convolution, _slow_conv2d_forward, mkldnn_convolution: never
// transposed. (FlopCounterMode binds its `transposed` to argument 6, which
// is `benchmark` for cudnn_convolution and missing for _slow_conv2d_forward.)
absl::StatusOr<Count> NonTransposedConvolutionFlops(const OperatorCall& call);

// convolution_backward: each requested gradient costs as much as the forward
// convolution. (FlopCounterMode counts the weight gradient `groups` times too
// high; see docs/operators.md.)
absl::StatusOr<Count> ConvolutionBackwardFlops(const OperatorCall& call);
// convolution_backward_overrideable: the same, without `bias_sizes`.
absl::StatusOr<Count> ConvolutionBackwardOverrideableFlops(
    const OperatorCall& call);
// _slow_conv2d_backward: the same for the CPU fallback 2-D convolution.
absl::StatusOr<Count> SlowConv2dBackwardFlops(const OperatorCall& call);

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_CONVOLUTION_FORMULAS_H_
