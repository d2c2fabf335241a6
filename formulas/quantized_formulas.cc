#include "formulas/quantized_formulas.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace torchscan::formulas {

// NOTE [Packed low-precision weights]
// A packed weight's stored shape is not its logical [n,k] shape, and the
// storage differs by kernel: _weight_int4pack_mm_for_cpu takes [n, k/2]
// uint8 (two 4-bit values per byte), _weight_int4pack_mm on CUDA
// [n/8, k/(16*innerKTiles), 32, innerKTiles/2] int32, the XPU form and
// _weight_int4pack_mm_with_scales_and_zeros [n, k/8] int32 (eight values per
// int32), _dyn_quant_matmul_4bit one flat buffer of packed values, scales and
// bias. Reading n and k from those would tie the count to one backend's
// packing. The activations and the result are never packed: self is [m,k]
// and the result [m,n], so 2*m*k*n is read from them. The same holds for
// the quantized linear operators, whose weight is a
// torch.classes.quantized.LinearPackedParamsBase object (PackedLinearFlops).
//
// A quantized convolution's weight is a Conv{2,3}dPackedParamsBase object:
// its kernel size, stride, padding, dilation and groups live there, and the
// input and output shapes do not determine them (a strided output size
// admits several kernel sizes). Formulas see only shapes and plain values,
// so these calls fail with a named reason: the report is partial, never a
// guess.

absl::StatusOr<Count> WeightPackedMatmulFlops(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(ShapeRef input, ArgumentShape(call, 0, "self"));
  TS_ASSIGN_OR_RETURN(ShapeRef output, ResultShape(call, 0, "result"));
  TS_RETURN_IF_ERROR(ExpectRank(input, 2, "weight-packed matmul: self"));
  TS_RETURN_IF_ERROR(ExpectRank(output, 2, "weight-packed matmul: result"));
  if (input[0] != output[0]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "weight-packed matmul: self ", ShapeText(input), " and result ",
        ShapeText(output), " must have the same rows"));
  }
  return Product({2, input[0], input[1], output[1]});
}

absl::StatusOr<Count> PackedParamsConvolutionFlops(const OperatorCall&) {
  return absl::UnimplementedError(
      "quantized convolution: the kernel size, stride, padding and groups "
      "are inside the packed weight (torch.classes.quantized "
      "ConvPackedParamsBase), which operator formulas cannot read; the call "
      "is not counted");
}

}  // namespace torchscan::formulas
