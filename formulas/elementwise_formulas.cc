#include "formulas/elementwise_formulas.h"

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "formulas/formula_support.h"
#include "formulas/packet_table.h"

namespace torchscan::formulas {
namespace {

constexpr FormulaOrigin kBeyond = FormulaOrigin::kBeyondFlopCounterMode;

// NOTE [Elementwise FLOPs per element]
// The convention charges each operator a fixed number of FLOPs per element,
// counting the arithmetic a straightforward implementation does for each
// element (a comparison, an add, a multiply, an exp or a divide is one FLOP;
// work done once per row or per channel, such as a reciprocal square root,
// is left out as it is small beside the per-element work):
//  - pointwise: 1 per element of the result (the largest tensor result;
//    an operator returning none: its largest tensor argument). GELU, SiLU
//    or an erf are one FLOP each too: the convention counts operator
//    elements, not the instructions of a transcendental function.
//  - reduction: 1 per element of the input (the first argument): one add,
//    compare or multiply per element reduced.
//  - softmax, log-softmax (forward): 5 per element of the input: the row
//    maximum (compare), subtract it, exp, the row sum (add), then divide
//    (softmax) or subtract the log of the sum (log-softmax).
//  - their backward: 4 per element of the gradient: softmax's multiplies
//    the gradient by the output, sums it, subtracts and multiplies;
//    log-softmax's exps the output, sums the gradient, multiplies and
//    subtracts.
//  - layer, group and batch normalisation computing statistics (forward):
//    7 per element of the input: the mean (add), centre (subtract), the
//    variance (square, add), normalise (multiply by the reciprocal standard
//    deviation), and the affine weight and bias (multiply, add). Counted
//    with the affine step whether or not a weight is given, and a batch
//    normalisation whose `training` argument is false as if it computed
//    statistics: the number is fixed per operator, not per call.
//  - batch normalisation with running statistics only
//    (_native_batch_norm_legit_no_training, _batch_norm_no_update): 4 per
//    element: centre, normalise, weight, bias.
//  - normalisation backward: 13 per element of the gradient: recompute the
//    normalised input (2), the weight gradient (multiply, add: 2), the bias
//    gradient (add: 1), the gradient times the weight (1), its sum (1), its
//    product with the normalised input summed (2), and the input gradient
//    from both sums (subtract twice, multiply twice: 4).
//  - RMS normalisation forward: 4 per element: square, sum, normalise,
//    weight; backward: 9 per element: recompute the normalised input (1),
//    the weight gradient (2), the gradient times the weight (1), its product
//    with the normalised input summed (2), the input gradient (3).
// These are a convention to make elementwise work visible and comparable,
// not a measurement of any kernel; docs/methodology.md says so to users.
constexpr std::int64_t kSoftmaxForward = 5;
constexpr std::int64_t kSoftmaxBackward = 4;
constexpr std::int64_t kNormalizationForward = 7;
constexpr std::int64_t kRunningStatisticsNormalization = 4;
constexpr std::int64_t kNormalizationBackward = 13;
constexpr std::int64_t kRmsNormalizationForward = 4;
constexpr std::int64_t kRmsNormalizationBackward = 9;

// The number of elements of `value`, a tensor whose shape is known.
absl::StatusOr<Count> Elements(const OperatorValue& value,
                               absl::string_view role) {
  if (value.shape_unknown) {
    return absl::UnimplementedError(absl::StrCat(
        role, " has symbolic or nested sizes, which FLOP formulas cannot use"));
  }
  return ProductOf(value.shape);
}

// The elements of the largest tensor among `values` (tensor lists
// included), or nullopt when there is none.
absl::StatusOr<std::optional<Count>> LargestTensor(
    absl::Span<const OperatorValue> values, absl::string_view role) {
  std::optional<Count> largest;
  auto consider = [&](Count elements) {
    if (!largest || elements > *largest) largest = elements;
  };
  for (const OperatorValue& value : values) {
    if (value.is_tensor()) {
      TS_ASSIGN_OR_RETURN(Count elements, Elements(value, role));
      consider(elements);
    } else if (value.kind == OperatorValue::Kind::kTensorList) {
      for (const std::optional<Shape>& shape : value.shapes) {
        if (!shape) continue;
        TS_ASSIGN_OR_RETURN(Count elements, ProductOf(*shape));
        consider(elements);
      }
    }
  }
  return largest;
}

absl::StatusOr<Count> PointwiseFlops(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(std::optional<Count> result,
                      LargestTensor(call.results, "a pointwise result"));
  if (result) return *result;
  TS_ASSIGN_OR_RETURN(std::optional<Count> argument,
                      LargestTensor(call.arguments, "a pointwise argument"));
  if (argument) return *argument;
  return absl::InvalidArgumentError(
      "a pointwise operator call has no tensor argument or result");
}

// `per_element` FLOPs per element of the first argument.
template <std::int64_t per_element>
absl::StatusOr<Count> PerInputElement(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(ShapeRef shape, ArgumentShape(call, 0, "the input"));
  TS_ASSIGN_OR_RETURN(Count elements, ProductOf(shape));
  return Product({per_element, elements});
}

// `per_element` FLOPs per element of tensor argument `index`.
template <std::size_t index, std::int64_t per_element>
absl::StatusOr<Count> PerArgumentElement(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(ShapeRef shape,
                      ArgumentShape(call, index, "the counted tensor"));
  TS_ASSIGN_OR_RETURN(Count elements, ProductOf(shape));
  return Product({per_element, elements});
}

// NOTE [Batch normalisation in evaluation]
// A batch normalisation packet serves both modes: its first bool argument is
// `training` in every overload of the table's packets (native_batch_norm,
// _native_batch_norm_legit and its no_stats overload, cuDNN's, MIOpen's), so
// a call in evaluation mode, which only applies the running statistics, is
// counted as the running-statistics operators are (4), not as one computing
// statistics (7). A call whose flag cannot be read (a compiled graph's
// symbolic value) is counted as computing statistics.
absl::StatusOr<Count> BatchNormFlops(const OperatorCall& call) {
  for (const OperatorValue& value : call.arguments) {
    if (value.kind != OperatorValue::Kind::kBool) continue;
    if (!value.boolean) {
      return PerInputElement<kRunningStatisticsNormalization>(call);
    }
    break;
  }
  return PerInputElement<kNormalizationForward>(call);
}

// The elements of one pooling window: the kernel size (argument `index`),
// one number per spatial dimension, or one number for all of them.
absl::StatusOr<Count> WindowElements(const OperatorCall& call,
                                     std::size_t index, std::size_t spatial) {
  TS_ASSIGN_OR_RETURN(ShapeRef kernel,
                      IntListArgument(call, index, "the kernel size"));
  if (kernel.size() == 1) {
    const std::vector<std::int64_t> square(spatial, kernel[0]);
    return ProductOf(square);
  }
  if (kernel.size() != spatial) {
    return absl::InvalidArgumentError(
        absl::StrCat("the kernel size has ", kernel.size(), " numbers for ",
                     spatial, " spatial dimensions"));
  }
  return ProductOf(kernel);
}

// Max and average pooling: one compare or add per window element of each
// output element (the pooled result, result 0; kernel size argument 1).
template <std::size_t spatial>
absl::StatusOr<Count> PoolingFlops(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(ShapeRef output,
                      ResultShape(call, 0, "the pooled result"));
  TS_ASSIGN_OR_RETURN(Count outputs, ProductOf(output));
  TS_ASSIGN_OR_RETURN(Count window, WindowElements(call, 1, spatial));
  return Product({outputs, window});
}

// Average pooling's backward spreads each gradient element over its window:
// one add per window element (gradient argument 0; kernel size argument 2).
template <std::size_t spatial>
absl::StatusOr<Count> AveragePoolingBackwardFlops(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(ShapeRef gradient,
                      ArgumentShape(call, 0, "the output gradient"));
  TS_ASSIGN_OR_RETURN(Count elements, ProductOf(gradient));
  TS_ASSIGN_OR_RETURN(Count window, WindowElements(call, 2, spatial));
  return Product({elements, window});
}

// The summed lengths of the adaptive windows of `outputs` cells over `inputs`
// elements: cell i spans [floor(i * inputs / outputs), ceil((i + 1) * inputs
// / outputs)), so windows overlap when `outputs` does not divide `inputs`.
absl::StatusOr<Count> AdaptiveSpans(std::int64_t inputs, std::int64_t outputs) {
  if (inputs < 0 || outputs <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "adaptive pooling of ", inputs, " elements into ", outputs, " cells"));
  }
  Count total = 0;
  for (std::int64_t i = 0; i < outputs; ++i) {
    const __int128 start = static_cast<__int128>(i) * inputs / outputs;
    const __int128 end =
        (static_cast<__int128>(i + 1) * inputs + outputs - 1) / outputs;
    TS_ASSIGN_OR_RETURN(total, Sum({total, static_cast<Count>(end - start)}));
  }
  return total;
}

// Adaptive pooling of `input` into `output` over their last `spatial`
// dimensions: one compare or add per window element of each output cell.
template <std::size_t spatial>
absl::StatusOr<Count> AdaptiveWindows(ShapeRef input, ShapeRef output) {
  if (input.size() != output.size() || input.size() < spatial) {
    return absl::InvalidArgumentError(absl::StrCat(
        "adaptive pooling from ", ShapeText(input), " to ", ShapeText(output)));
  }
  const std::size_t leading = output.size() - spatial;
  TS_ASSIGN_OR_RETURN(Count total, ProductOf(output.subspan(0, leading)));
  for (std::size_t d = leading; d < output.size(); ++d) {
    TS_ASSIGN_OR_RETURN(Count spans, AdaptiveSpans(input[d], output[d]));
    TS_ASSIGN_OR_RETURN(total, Product({total, spans}));
  }
  return total;
}

template <std::size_t spatial>
absl::StatusOr<Count> AdaptivePoolingFlops(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(ShapeRef input, ArgumentShape(call, 0, "the input"));
  TS_ASSIGN_OR_RETURN(ShapeRef output,
                      ResultShape(call, 0, "the pooled result"));
  return AdaptiveWindows<spatial>(input, output);
}

// Adaptive average pooling's backward (grad_output, self) spreads each
// gradient element over its window, as the forward gathered it.
template <std::size_t spatial>
absl::StatusOr<Count> AdaptiveAverageBackwardFlops(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(ShapeRef gradient,
                      ArgumentShape(call, 0, "the output gradient"));
  TS_ASSIGN_OR_RETURN(ShapeRef input, ArgumentShape(call, 1, "the input"));
  return AdaptiveWindows<spatial>(input, gradient);
}

// index_put and its in-place and internal forms (self, indices, values,
// accumulate): an accumulating call adds each value (argument 2) once; one
// that only writes moves data.
// NOTE [Broadcast values of index_put]
// `values` broadcasts to the indexed positions, so `x.index_put_(i, v,
// accumulate=True)` with a scalar `v` adds at every position of `i` but
// counts 1. The positions are not knowable from shapes alone (a boolean
// mask index selects as many as it has true elements), so the rule counts
// the value tensor as given: never more than the adds done. Autograd's
// backward of indexing, the common accumulating call, passes a full-size
// gradient, for which the count is exact.
absl::StatusOr<Count> IndexPutFlops(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(bool accumulate, BoolArgument(call, 3, "accumulate"));
  if (!accumulate) return Count{0};
  return PerArgumentElement<2, 1>(call);
}

constexpr OperatorFormulaEntry kPointwiseRule{
    "pointwise", &PointwiseFlops, kBeyond,
    "1 per element of the (largest) result"};
constexpr OperatorFormulaEntry kReductionRule{
    "reduction", &PerInputElement<1>, kBeyond, "1 per element of the input"};

constexpr absl::string_view kSoftmax =
    "softmax: 5 per input element (max, subtract, exp, sum, divide)";
constexpr absl::string_view kLogSoftmax =
    "log-softmax: 5 per input element (max, subtract, exp, sum, subtract)";
constexpr absl::string_view kSoftmaxGradient =
    "softmax backward: 4 per gradient element";
constexpr absl::string_view kLogSoftmaxGradient =
    "log-softmax backward: 4 per gradient element";
constexpr absl::string_view kNormalization =
    "normalisation: 7 per input element (mean, centre, variance 2, "
    "normalise, weight, bias)";
constexpr absl::string_view kRunningStatistics =
    "batch normalisation with running statistics: 4 per input element "
    "(centre, normalise, weight, bias)";
constexpr absl::string_view kNormalizationGradient =
    "normalisation backward: 13 per gradient element";
constexpr absl::string_view kRmsNormalization =
    "RMS normalisation: 4 per input element (square, sum, normalise, weight)";
constexpr absl::string_view kRmsNormalizationGradient =
    "RMS normalisation backward: 9 per gradient element";

constexpr absl::string_view kBatchNormalization =
    "batch normalisation: 7 per input element when training (as other "
    "normalisations), 4 in evaluation (running statistics: centre, normalise, "
    "weight, bias)";
constexpr absl::string_view kPooling =
    "pooling: 1 per window element of each output element (compare or add)";
constexpr absl::string_view kAdaptivePooling =
    "adaptive pooling: 1 per element of each output cell's window (windows "
    "overlap when the sizes do not divide)";
constexpr absl::string_view kPoolingGradient =
    "average pooling backward: 1 per window element of each gradient element";
constexpr absl::string_view kMaxPoolingGradient =
    "max pooling backward: 1 per gradient element (added at its maximum)";
constexpr absl::string_view kAccumulate =
    "1 per element accumulated (the source, src or gradient argument)";
constexpr absl::string_view kIndexPut =
    "1 per element of values (as given, not broadcast) when accumulate=True, "
    "else 0 (data movement)";
constexpr absl::string_view kNllLoss =
    "negative log-likelihood: 1 per target element (pick and sum)";
constexpr absl::string_view kMseLoss =
    "mean squared error: 3 per input element (subtract, square, sum)";
constexpr absl::string_view kMseLossGradient =
    "mean squared error backward: 3 per input element (subtract, scale, "
    "times the gradient)";
constexpr absl::string_view kScan =
    "cumulative sum or product: 1 per input element";
constexpr absl::string_view kDropout =
    "dropout: 1 per input element (the scaled mask's multiply; drawing the "
    "mask is random generation)";

constexpr auto kForward = &PerInputElement<kNormalizationForward>;
constexpr auto kBackward = &PerInputElement<kNormalizationBackward>;
constexpr auto kRunning = &PerInputElement<kRunningStatisticsNormalization>;

// Softmax and normalisation packets, whose schemas carry no tag: every
// overload (out= included) of a packet takes its rule, as in kTable of
// operator_formulas.cc. The first argument is the input, or the gradient
// of the output (cudnn and miopen backward: the input, of the same size).
constexpr auto kTable = std::to_array<OperatorFormulaEntry>({
    {"aten::_adaptive_avg_pool2d", &AdaptivePoolingFlops<2>, kBeyond,
     kAdaptivePooling},
    {"aten::_adaptive_avg_pool2d_backward", &AdaptiveAverageBackwardFlops<2>,
     kBeyond, kPoolingGradient},
    {"aten::_adaptive_avg_pool3d", &AdaptivePoolingFlops<3>, kBeyond,
     kAdaptivePooling},
    {"aten::_adaptive_avg_pool3d_backward", &AdaptiveAverageBackwardFlops<3>,
     kBeyond, kPoolingGradient},
    {"aten::_batch_norm_no_update", kRunning, kBeyond, kRunningStatistics},
    {"aten::_batch_norm_with_update", kForward, kBeyond, kNormalization},
    {"aten::_batch_norm_with_update_functional", kForward, kBeyond,
     kNormalization},
    {"aten::_fused_rms_norm", &PerInputElement<kRmsNormalizationForward>,
     kBeyond, kRmsNormalization},
    {"aten::_fused_rms_norm_backward",
     &PerInputElement<kRmsNormalizationBackward>, kBeyond,
     kRmsNormalizationGradient},
    {"aten::_index_put_impl", &IndexPutFlops, kBeyond, kIndexPut},
    {"aten::_index_put_impl_", &IndexPutFlops, kBeyond, kIndexPut},
    {"aten::_log_softmax", &PerInputElement<kSoftmaxForward>, kBeyond,
     kLogSoftmax},
    {"aten::_log_softmax_backward_data", &PerInputElement<kSoftmaxBackward>,
     kBeyond, kLogSoftmaxGradient},
    {"aten::_masked_softmax", &PerInputElement<kSoftmaxForward>, kBeyond,
     kSoftmax},
    {"aten::_masked_softmax_backward", &PerInputElement<kSoftmaxBackward>,
     kBeyond, kSoftmaxGradient},
    {"aten::_native_batch_norm_legit", &BatchNormFlops, kBeyond,
     kBatchNormalization},
    {"aten::_native_batch_norm_legit_functional", &BatchNormFlops, kBeyond,
     kBatchNormalization},
    {"aten::_native_batch_norm_legit_no_training", kRunning, kBeyond,
     kRunningStatistics},
    {"aten::_safe_softmax", &PerInputElement<kSoftmaxForward>, kBeyond,
     kSoftmax},
    {"aten::_softmax", &PerInputElement<kSoftmaxForward>, kBeyond, kSoftmax},
    {"aten::_softmax_backward_data", &PerInputElement<kSoftmaxBackward>,
     kBeyond, kSoftmaxGradient},
    {"aten::_unsafe_index_put", &IndexPutFlops, kBeyond, kIndexPut},
    {"aten::adaptive_max_pool2d", &AdaptivePoolingFlops<2>, kBeyond,
     kAdaptivePooling},
    {"aten::adaptive_max_pool2d_backward", &PerArgumentElement<0, 1>, kBeyond,
     kMaxPoolingGradient},
    {"aten::adaptive_max_pool3d", &AdaptivePoolingFlops<3>, kBeyond,
     kAdaptivePooling},
    {"aten::adaptive_max_pool3d_backward", &PerArgumentElement<0, 1>, kBeyond,
     kMaxPoolingGradient},
    {"aten::avg_pool2d", &PoolingFlops<2>, kBeyond, kPooling},
    {"aten::avg_pool2d_backward", &AveragePoolingBackwardFlops<2>, kBeyond,
     kPoolingGradient},
    {"aten::avg_pool3d", &PoolingFlops<3>, kBeyond, kPooling},
    {"aten::avg_pool3d_backward", &AveragePoolingBackwardFlops<3>, kBeyond,
     kPoolingGradient},
    {"aten::batch_norm_backward", kBackward, kBeyond, kNormalizationGradient},
    {"aten::cudnn_batch_norm", &BatchNormFlops, kBeyond, kBatchNormalization},
    {"aten::cudnn_batch_norm_backward", kBackward, kBeyond,
     kNormalizationGradient},
    {"aten::cumprod", &PerInputElement<1>, kBeyond, kScan},
    {"aten::cumprod_", &PerInputElement<1>, kBeyond, kScan},
    {"aten::cumsum", &PerInputElement<1>, kBeyond, kScan},
    {"aten::cumsum_", &PerInputElement<1>, kBeyond, kScan},
    {"aten::embedding_dense_backward", &PerArgumentElement<0, 1>, kBeyond,
     kAccumulate},
    {"aten::index_add", &PerArgumentElement<3, 1>, kBeyond, kAccumulate},
    {"aten::index_add_", &PerArgumentElement<3, 1>, kBeyond, kAccumulate},
    {"aten::index_put", &IndexPutFlops, kBeyond, kIndexPut},
    {"aten::index_put_", &IndexPutFlops, kBeyond, kIndexPut},
    {"aten::index_reduce", &PerArgumentElement<3, 1>, kBeyond, kAccumulate},
    {"aten::index_reduce_", &PerArgumentElement<3, 1>, kBeyond, kAccumulate},
    {"aten::max_pool2d_with_indices", &PoolingFlops<2>, kBeyond, kPooling},
    {"aten::max_pool2d_with_indices_backward", &PerArgumentElement<0, 1>,
     kBeyond, kMaxPoolingGradient},
    {"aten::max_pool3d_with_indices", &PoolingFlops<3>, kBeyond, kPooling},
    {"aten::max_pool3d_with_indices_backward", &PerArgumentElement<0, 1>,
     kBeyond, kMaxPoolingGradient},
    {"aten::miopen_batch_norm", &BatchNormFlops, kBeyond, kBatchNormalization},
    {"aten::miopen_batch_norm_backward", kBackward, kBeyond,
     kNormalizationGradient},
    {"aten::mse_loss", &PerInputElement<3>, kBeyond, kMseLoss},
    {"aten::mse_loss_backward", &PerArgumentElement<1, 3>, kBeyond,
     kMseLossGradient},
    {"aten::native_batch_norm", &BatchNormFlops, kBeyond, kBatchNormalization},
    {"aten::native_batch_norm_backward", kBackward, kBeyond,
     kNormalizationGradient},
    {"aten::native_dropout", &PerInputElement<1>, kBeyond, kDropout},
    {"aten::native_group_norm", kForward, kBeyond, kNormalization},
    {"aten::native_group_norm_backward", kBackward, kBeyond,
     kNormalizationGradient},
    {"aten::native_layer_norm", kForward, kBeyond, kNormalization},
    {"aten::native_layer_norm_backward", kBackward, kBeyond,
     kNormalizationGradient},
    {"aten::nll_loss2d_backward", &PerArgumentElement<2, 1>, kBeyond, kNllLoss},
    {"aten::nll_loss2d_forward", &PerArgumentElement<1, 1>, kBeyond, kNllLoss},
    {"aten::nll_loss_backward", &PerArgumentElement<2, 1>, kBeyond, kNllLoss},
    {"aten::nll_loss_forward", &PerArgumentElement<1, 1>, kBeyond, kNllLoss},
    {"aten::scatter_add", &PerArgumentElement<3, 1>, kBeyond, kAccumulate},
    {"aten::scatter_add_", &PerArgumentElement<3, 1>, kBeyond, kAccumulate},
    {"aten::scatter_reduce", &PerArgumentElement<3, 1>, kBeyond, kAccumulate},
    {"aten::scatter_reduce_", &PerArgumentElement<3, 1>, kBeyond, kAccumulate},
});
static_assert(IsSortedByPacket(kTable),
              "kTable must be sorted by packet, without duplicates");

constexpr absl::string_view kRandomReason =
    "Random number generation is excluded from FLOPs.";

constexpr auto kIgnored = std::to_array<IgnoredOperatorEntry>({
    {"aten::_local_scalar_dense", kDataMovementReason},
    {"aten::_unsafe_index", kDataMovementReason},
    {"aten::arange", kCreationReason},
    {"aten::as_strided_scatter", kDataMovementReason},
    {"aten::bernoulli", kRandomReason},
    {"aten::bernoulli_", kRandomReason},
    {"aten::cauchy_", kRandomReason},
    {"aten::channel_shuffle", kDataMovementReason},
    {"aten::constant_pad_nd", kDataMovementReason},
    {"aten::copy", kDataMovementReason},
    {"aten::detach_", kViewReason},
    {"aten::diagonal_backward", kDataMovementReason},
    {"aten::embedding", kDataMovementReason},
    {"aten::empty_like", kAllocationReason},
    {"aten::exponential_", kRandomReason},
    {"aten::fill", kCreationReason},
    {"aten::fill_", kCreationReason},
    {"aten::flip", kDataMovementReason},
    {"aten::full_like", kCreationReason},
    {"aten::gather", kDataMovementReason},
    {"aten::geometric_", kRandomReason},
    {"aten::im2col", kDataMovementReason},
    {"aten::index", kDataMovementReason},
    {"aten::index_copy", kDataMovementReason},
    {"aten::index_copy_", kDataMovementReason},
    {"aten::index_fill", kDataMovementReason},
    {"aten::index_fill_", kDataMovementReason},
    {"aten::index_select", kDataMovementReason},
    {"aten::linspace", kCreationReason},
    {"aten::log_normal_", kRandomReason},
    {"aten::masked_scatter", kDataMovementReason},
    {"aten::masked_scatter_", kDataMovementReason},
    {"aten::masked_select", kDataMovementReason},
    {"aten::narrow_copy", kDataMovementReason},
    {"aten::new_empty", kAllocationReason},
    {"aten::new_empty_strided", kAllocationReason},
    {"aten::new_full", kCreationReason},
    {"aten::new_ones", kCreationReason},
    {"aten::new_zeros", kCreationReason},
    {"aten::normal", kRandomReason},
    {"aten::normal_", kRandomReason},
    {"aten::ones_like", kCreationReason},
    {"aten::pixel_shuffle", kDataMovementReason},
    {"aten::pixel_unshuffle", kDataMovementReason},
    {"aten::rand", kRandomReason},
    {"aten::rand_like", kRandomReason},
    {"aten::randint", kRandomReason},
    {"aten::randint_like", kRandomReason},
    {"aten::randn", kRandomReason},
    {"aten::randn_like", kRandomReason},
    {"aten::random_", kRandomReason},
    {"aten::randperm", kRandomReason},
    {"aten::reflection_pad1d", kDataMovementReason},
    {"aten::reflection_pad2d", kDataMovementReason},
    {"aten::reflection_pad3d", kDataMovementReason},
    {"aten::repeat", kDataMovementReason},
    {"aten::repeat_interleave", kDataMovementReason},
    {"aten::replication_pad1d", kDataMovementReason},
    {"aten::replication_pad2d", kDataMovementReason},
    {"aten::replication_pad3d", kDataMovementReason},
    {"aten::resize_", kAllocationReason},
    {"aten::roll", kDataMovementReason},
    {"aten::select_backward", kDataMovementReason},
    {"aten::select_scatter", kDataMovementReason},
    {"aten::slice_backward", kDataMovementReason},
    {"aten::slice_scatter", kDataMovementReason},
    {"aten::stack", kDataMovementReason},
    {"aten::take", kDataMovementReason},
    {"aten::tril", kDataMovementReason},
    {"aten::tril_", kDataMovementReason},
    {"aten::triu", kDataMovementReason},
    {"aten::triu_", kDataMovementReason},
    {"aten::unfold_backward", kDataMovementReason},
    {"aten::uniform_", kRandomReason},
    {"aten::upsample_nearest1d", kDataMovementReason},
    {"aten::upsample_nearest2d", kDataMovementReason},
    {"aten::upsample_nearest3d", kDataMovementReason},
    {"aten::zero_", kCreationReason},
    {"aten::zeros_like", kCreationReason},
});
static_assert(IsSortedByPacket(kIgnored),
              "kIgnored must be sorted by packet, without duplicates");

}  // namespace

// Operators whose schema says they return views: the row docs/operators.md
// shows for them (its packet names the rule, as kPointwiseRule's does).
constexpr IgnoredOperatorEntry kSchemaView{"view", kViewReason};

const IgnoredOperatorEntry* FindElementwiseIgnored(absl::string_view packet,
                                                   ElementwiseTags tags) {
  if (const IgnoredOperatorEntry* entry = FindByPacket(kIgnored, packet)) {
    return entry;
  }
  return tags.view ? &kSchemaView : nullptr;
}

absl::Span<const IgnoredOperatorEntry> AllElementwiseIgnored() {
  static const std::vector<IgnoredOperatorEntry>* const entries = [] {
    auto* all = new std::vector<IgnoredOperatorEntry>{kSchemaView};
    all->insert(all->end(), kIgnored.begin(), kIgnored.end());
    return all;
  }();
  return *entries;
}

const OperatorFormulaEntry* FindElementwiseRule(absl::string_view packet,
                                                ElementwiseTags tags) {
  if (const OperatorFormulaEntry* entry = FindByPacket(kTable, packet)) {
    return entry;
  }
  if (tags.pointwise) return &kPointwiseRule;
  if (tags.reduction) return &kReductionRule;
  return nullptr;
}

absl::Span<const OperatorFormulaEntry> AllElementwiseRules() {
  static const std::vector<OperatorFormulaEntry>* const rules = [] {
    auto* all =
        new std::vector<OperatorFormulaEntry>{kPointwiseRule, kReductionRule};
    all->insert(all->end(), kTable.begin(), kTable.end());
    return all;
  }();
  return *rules;
}

}  // namespace torchscan::formulas
