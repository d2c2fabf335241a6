// Low-precision products whose weights are stored packed or quantized:
// weight-only quantized matrix products (aten::_weight_int8pack_mm, the
// _weight_int4pack_mm family, aten::_dyn_quant_matmul_4bit) and the
// quantized convolutions of torch.ao.quantization (quantized::conv*), whose
// weights are packed parameter objects. The quantized linear operators
// (quantized::linear*, fbgemm_linear_*) use PackedLinearFlops
// (cpu_fused_formulas.h): their weights are packed too, and the count reads
// X and Y.
//
// Counts are those of the product in the precision it runs in: a
// multiply-add is 2 FLOPs whether its operands are int4, int8, fp8 or fp32.
// Quantizing activations, dequantizing weights, scales, zero points and bias
// are not counted (NOTE [Packed low-precision weights] in the .cc).

#ifndef TORCHSCAN_FORMULAS_QUANTIZED_FORMULAS_H_
#define TORCHSCAN_FORMULAS_QUANTIZED_FORMULAS_H_

#include "absl/status/statusor.h"
#include "formulas/formula_support.h"
#include "formulas/operator_call.h"

namespace torchscan::formulas {

// self [m,k] @ W^T for a logical weight W [n,k] stored packed, whatever its
// stored layout: 2*m*k*n, with k from self and n from the result [m,n].
absl::StatusOr<Count> WeightPackedMatmulFlops(const OperatorCall& call);

// quantized::conv1d/2d/3d, their relu/add/dynamic forms and
// quantized::conv_transpose*: always an error that names why (the kernel
// size, stride, padding, dilation and groups are inside the packed weight
// object, which formulas do not see), so the report is partial.
absl::StatusOr<Count> PackedParamsConvolutionFlops(const OperatorCall& call);

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_QUANTIZED_FORMULAS_H_
