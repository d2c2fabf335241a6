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

constexpr auto kForward = &PerInputElement<kNormalizationForward>;
constexpr auto kBackward = &PerInputElement<kNormalizationBackward>;
constexpr auto kRunning = &PerInputElement<kRunningStatisticsNormalization>;

// Softmax and normalisation packets, whose schemas carry no tag: every
// overload (out= included) of a packet takes its rule, as in kTable of
// operator_formulas.cc. The first argument is the input, or the gradient
// of the output (cudnn and miopen backward: the input, of the same size).
constexpr auto kTable = std::to_array<OperatorFormulaEntry>({
    {"aten::_batch_norm_no_update", kRunning, kBeyond, kRunningStatistics},
    {"aten::_batch_norm_with_update", kForward, kBeyond, kNormalization},
    {"aten::_batch_norm_with_update_functional", kForward, kBeyond,
     kNormalization},
    {"aten::_fused_rms_norm", &PerInputElement<kRmsNormalizationForward>,
     kBeyond, kRmsNormalization},
    {"aten::_fused_rms_norm_backward",
     &PerInputElement<kRmsNormalizationBackward>, kBeyond,
     kRmsNormalizationGradient},
    {"aten::_log_softmax", &PerInputElement<kSoftmaxForward>, kBeyond,
     kLogSoftmax},
    {"aten::_log_softmax_backward_data", &PerInputElement<kSoftmaxBackward>,
     kBeyond, kLogSoftmaxGradient},
    {"aten::_masked_softmax", &PerInputElement<kSoftmaxForward>, kBeyond,
     kSoftmax},
    {"aten::_masked_softmax_backward", &PerInputElement<kSoftmaxBackward>,
     kBeyond, kSoftmaxGradient},
    {"aten::_native_batch_norm_legit", kForward, kBeyond, kNormalization},
    {"aten::_native_batch_norm_legit_functional", kForward, kBeyond,
     kNormalization},
    {"aten::_native_batch_norm_legit_no_training", kRunning, kBeyond,
     kRunningStatistics},
    {"aten::_safe_softmax", &PerInputElement<kSoftmaxForward>, kBeyond,
     kSoftmax},
    {"aten::_softmax", &PerInputElement<kSoftmaxForward>, kBeyond, kSoftmax},
    {"aten::_softmax_backward_data", &PerInputElement<kSoftmaxBackward>,
     kBeyond, kSoftmaxGradient},
    {"aten::batch_norm_backward", kBackward, kBeyond, kNormalizationGradient},
    {"aten::cudnn_batch_norm", kForward, kBeyond, kNormalization},
    {"aten::cudnn_batch_norm_backward", kBackward, kBeyond,
     kNormalizationGradient},
    {"aten::miopen_batch_norm", kForward, kBeyond, kNormalization},
    {"aten::miopen_batch_norm_backward", kBackward, kBeyond,
     kNormalizationGradient},
    {"aten::native_batch_norm", kForward, kBeyond, kNormalization},
    {"aten::native_batch_norm_backward", kBackward, kBeyond,
     kNormalizationGradient},
    {"aten::native_group_norm", kForward, kBeyond, kNormalization},
    {"aten::native_group_norm_backward", kBackward, kBeyond,
     kNormalizationGradient},
    {"aten::native_layer_norm", kForward, kBeyond, kNormalization},
    {"aten::native_layer_norm_backward", kBackward, kBeyond,
     kNormalizationGradient},
});
static_assert(IsSortedByPacket(kTable),
              "kTable must be sorted by packet, without duplicates");

constexpr auto kIgnored = std::to_array<IgnoredOperatorEntry>({
    {"aten::empty_like", kAllocationReason},
    {"aten::fill", kCreationReason},
    {"aten::fill_", kCreationReason},
    {"aten::full_like", kCreationReason},
    {"aten::new_empty", kAllocationReason},
    {"aten::new_empty_strided", kAllocationReason},
    {"aten::new_full", kCreationReason},
    {"aten::new_ones", kCreationReason},
    {"aten::new_zeros", kCreationReason},
    {"aten::ones_like", kCreationReason},
    {"aten::zero_", kCreationReason},
    {"aten::zeros_like", kCreationReason},
});
static_assert(IsSortedByPacket(kIgnored),
              "kIgnored must be sorted by packet, without duplicates");

}  // namespace

const IgnoredOperatorEntry* FindElementwiseIgnored(absl::string_view packet) {
  return FindByPacket(kIgnored, packet);
}

absl::Span<const IgnoredOperatorEntry> AllElementwiseIgnored() {
  return kIgnored;
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
