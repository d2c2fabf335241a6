// The oneDNN and MKL kernels that torch.compile's CPU freezing and
// quantization substitute for linear and convolution layers
// (mkl::_mkl_linear, mkldnn::_linear_pointwise, mkldnn::_convolution_pointwise
// and their quantized onednn:: forms). FlopCounterMode has no formula for
// them; these count what the layer they replace counts under its
// conventions: the matrix product or convolution, with the fused bias,
// activation or binary post-op not counted.
//
// Their weights are prepacked: a packed linear weight's shape says nothing
// about the layer (mkl::_mkl_reorder_linear_weight gives [n, 1]), so the
// linear formulas read the reduction size from the input and the output
// size from the result. Packed convolution weights keep their logical
// [out, in / groups, kernel...] shape.

#ifndef TORCHSCAN_FORMULAS_CPU_FUSED_FORMULAS_H_
#define TORCHSCAN_FORMULAS_CPU_FUSED_FORMULAS_H_

#include "absl/status/statusor.h"
#include "formulas/formula_support.h"
#include "formulas/operator_call.h"

namespace torchscan::formulas {

// mkl::_mkl_linear, mkldnn::_linear_pointwise (every overload),
// onednn::qlinear_pointwise (every overload), and the quantized linear
// operators (quantized::linear*, fbgemm_linear_*, quantized_formulas.h):
// X [..., k] -> Y [..., n]: 2 * numel(Y) * k.
absl::StatusOr<Count> PackedLinearFlops(const OperatorCall& call);

// mkldnn::_convolution_pointwise: the convolution of X (argument 0) with W,
// which is argument 1, or argument 2 in the binary overload (after `other`).
absl::StatusOr<Count> PointwiseConvolutionFlops(const OperatorCall& call);
// mkldnn::_convolution_pointwise_ (binary, in place on argument 0): X and W
// are arguments 1 and 2; the result has the output's shape.
absl::StatusOr<Count> InPlacePointwiseConvolutionFlops(
    const OperatorCall& call);
// mkldnn::_convolution_transpose_pointwise: transposed convolution of X with
// W (arguments 0 and 1).
absl::StatusOr<Count> PointwiseTransposedConvolutionFlops(
    const OperatorCall& call);
// onednn::qconv_pointwise, onednn::qconv1d/2d/3d_pointwise: quantized
// convolution of qx (argument 0) with qw (argument 3); a 1-D convolution's
// prepacked weight is [out, in / groups, 1, k].
absl::StatusOr<Count> QuantizedConvolutionFlops(const OperatorCall& call);

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_CPU_FUSED_FORMULAS_H_
