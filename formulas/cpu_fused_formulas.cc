#include "formulas/cpu_fused_formulas.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "formulas/convolution_formulas.h"

namespace torchscan::formulas {
namespace {

// A convolution weight that is a convolution weight: as many dimensions as
// the input, and in/groups channels that divide the input's.
absl::Status ExpectConvolutionWeight(ShapeRef input, ShapeRef weight) {
  if (input.size() < 3 || weight.size() != input.size() || weight[1] <= 0 ||
      input[1] % weight[1] != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a convolution of ", ShapeText(input),
                     " needs a weight of the same rank with in/groups "
                     "channels, got ",
                     ShapeText(weight)));
  }
  return absl::OkStatus();
}

absl::StatusOr<Count> Convolution(const OperatorCall& call,
                                  std::size_t input_index,
                                  std::size_t weight_index, bool transposed) {
  TS_ASSIGN_OR_RETURN(ShapeRef input, ArgumentShape(call, input_index, "X"));
  TS_ASSIGN_OR_RETURN(ShapeRef weight, ArgumentShape(call, weight_index, "W"));
  TS_ASSIGN_OR_RETURN(ShapeRef output, ResultShape(call, 0, "Y"));
  TS_RETURN_IF_ERROR(ExpectConvolutionWeight(input, weight));
  return ConvolutionFlopCount(input, weight, output, transposed);
}

}  // namespace

absl::StatusOr<Count> PackedLinearFlops(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(ShapeRef input, ArgumentShape(call, 0, "X"));
  TS_ASSIGN_OR_RETURN(ShapeRef output, ResultShape(call, 0, "Y"));
  if (input.empty()) {
    return absl::InvalidArgumentError("X must not be 0-D");
  }
  TS_ASSIGN_OR_RETURN(Count outputs, ProductOf(output));
  return Product({2, outputs, input.back()});
}

absl::StatusOr<Count> PointwiseConvolutionFlops(const OperatorCall& call) {
  // The binary overload has `other` (shaped like the output) before W; the
  // unary one has the bias (1-D or None) after it.
  const bool binary = call.arguments.size() > 2 &&
                      call.arguments[2].is_tensor() &&
                      call.arguments[0].is_tensor() &&
                      call.arguments[2].shape.size() ==
                          call.arguments[0].shape.size();
  return Convolution(call, 0, binary ? 2 : 1, /*transposed=*/false);
}

absl::StatusOr<Count> InPlacePointwiseConvolutionFlops(
    const OperatorCall& call) {
  return Convolution(call, 1, 2, /*transposed=*/false);
}

absl::StatusOr<Count> PointwiseTransposedConvolutionFlops(
    const OperatorCall& call) {
  return Convolution(call, 0, 1, /*transposed=*/true);
}

// NOTE [oneDNN 1-D quantized convolution weights]
// onednn::qconv_prepack runs a 1-D convolution as a 2-D one: the prepacked
// weight of a [N, C, L] input is [out, in / groups, 1, k] (measured, torch
// 2.13). That unit dimension is dropped, so the count is the 1-D
// convolution's.
absl::StatusOr<Count> QuantizedConvolutionFlops(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(ShapeRef input, ArgumentShape(call, 0, "qx"));
  TS_ASSIGN_OR_RETURN(ShapeRef weight, ArgumentShape(call, 3, "qw"));
  if (input.size() == 3 && weight.size() == 4 && weight[2] == 1) {
    const std::int64_t squeezed[] = {weight[0], weight[1], weight[3]};
    TS_ASSIGN_OR_RETURN(ShapeRef output, ResultShape(call, 0, "Y"));
    TS_RETURN_IF_ERROR(ExpectConvolutionWeight(input, squeezed));
    return ConvolutionFlopCount(input, squeezed, output, /*transposed=*/false);
  }
  return Convolution(call, 0, 3, /*transposed=*/false);
}

}  // namespace torchscan::formulas
