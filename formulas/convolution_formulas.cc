#include "formulas/convolution_formulas.h"

#include <array>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace torchscan::formulas {
namespace {

// Whether grad_input, grad_weight and grad_bias were computed.
using Gradients = std::array<bool, 3>;

absl::StatusOr<Count> ForwardOfArguments(const OperatorCall& call,
                                         bool transposed) {
  TS_ASSIGN_OR_RETURN(ShapeRef input, ArgumentShape(call, 0, "input"));
  TS_ASSIGN_OR_RETURN(ShapeRef weight, ArgumentShape(call, 1, "weight"));
  TS_ASSIGN_OR_RETURN(ShapeRef output, ResultShape(call, 0, "output"));
  return ConvolutionFlopCount(input, weight, output, transposed);
}

// Which gradients a backward call computed: its output mask when it has one,
// else whichever results are defined.
absl::StatusOr<Gradients> RequestedGradients(
    const OperatorCall& call, std::optional<std::size_t> mask_index) {
  Gradients requested{};
  if (mask_index) {
    if (*mask_index >= call.arguments.size() ||
        call.arguments[*mask_index].kind != OperatorValue::Kind::kBoolList ||
        call.arguments[*mask_index].booleans.size() != 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          "output_mask (argument ", *mask_index, ") is not a bool[3]"));
    }
    for (int i = 0; i < 3; ++i)
      requested[i] = call.arguments[*mask_index].booleans[i];
    return requested;
  }
  for (std::size_t i = 0; i < 3 && i < call.results.size(); ++i) {
    requested[i] = call.results[i].is_tensor();
  }
  return requested;
}

// grad_input and grad_weight each cost one forward convolution of the same
// shapes; the bias gradient is a reduction, not counted.
absl::StatusOr<Count> BackwardFlops(const OperatorCall& call, bool transposed,
                                    std::optional<std::size_t> mask_index) {
  TS_ASSIGN_OR_RETURN(ShapeRef grad_output,
                      ArgumentShape(call, 0, "grad_output"));
  TS_ASSIGN_OR_RETURN(ShapeRef input, ArgumentShape(call, 1, "input"));
  TS_ASSIGN_OR_RETURN(ShapeRef weight, ArgumentShape(call, 2, "weight"));
  TS_ASSIGN_OR_RETURN(Gradients requested,
                      RequestedGradients(call, mask_index));
  TS_ASSIGN_OR_RETURN(
      Count forward,
      ConvolutionFlopCount(input, weight, grad_output, transposed));
  const int gradients = (requested[0] ? 1 : 0) + (requested[1] ? 1 : 0);
  return Product({gradients, forward});
}

}  // namespace

absl::StatusOr<Count> ConvolutionFlopCount(ShapeRef input, ShapeRef weight,
                                           ShapeRef output, bool transposed) {
  if (input.empty())
    return absl::InvalidArgumentError(
        "convolution: input has no batch dimension");
  if (weight.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "convolution: weight must have at least 2 dimensions, got shape ",
        ShapeText(weight)));
  }
  ShapeRef spatial_source = transposed ? input : output;
  if (spatial_source.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "convolution: expected [batch, channels, spatial...], got shape ",
        ShapeText(spatial_source)));
  }
  TS_ASSIGN_OR_RETURN(Count spatial, ProductOf(spatial_source.subspan(2)));
  TS_ASSIGN_OR_RETURN(Count kernel, ProductOf(weight.subspan(2)));
  return Product({2, spatial, kernel, input[0], weight[0], weight[1]});
}

absl::StatusOr<Count> ConvolutionFlops(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(bool transposed, BoolArgument(call, 6, "transposed"));
  return ForwardOfArguments(call, transposed);
}

absl::StatusOr<Count> NonTransposedConvolutionFlops(const OperatorCall& call) {
  return ForwardOfArguments(call, /*transposed=*/false);
}

absl::StatusOr<Count> ConvolutionBackwardFlops(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(bool transposed, BoolArgument(call, 7, "transposed"));
  return BackwardFlops(call, transposed, /*mask_index=*/10);
}

absl::StatusOr<Count> ConvolutionBackwardOverrideableFlops(
    const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(bool transposed, BoolArgument(call, 6, "transposed"));
  return BackwardFlops(call, transposed, /*mask_index=*/9);
}

absl::StatusOr<Count> SlowConv2dBackwardFlops(const OperatorCall& call) {
  // The output_mask overloads carry the mask at argument 6; the grad_input
  // (out=) overload computes whichever outputs it was given.
  const bool has_mask =
      call.arguments.size() > 6 &&
      call.arguments[6].kind == OperatorValue::Kind::kBoolList;
  return BackwardFlops(call, /*transposed=*/false,
                       has_mask ? std::optional<std::size_t>(6) : std::nullopt);
}

}  // namespace torchscan::formulas
