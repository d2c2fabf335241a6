// The elementwise convention's rule table and counts, against hand
// computations (NOTE [Elementwise FLOPs per element] in
// elementwise_formulas.cc).

#include "formulas/elementwise_formulas.h"

#include <vector>

#include "formulas/ignored_operators.h"
#include "gtest/gtest.h"

namespace torchscan::formulas {
namespace {

using V = OperatorValue;

V T(Shape shape) { return V::Tensor(std::move(shape)); }

constexpr ElementwiseTags kNoTags{};
constexpr ElementwiseTags kPointwise{.pointwise = true};
constexpr ElementwiseTags kReduction{.reduction = true};

absl::StatusOr<Count> Flops(const OperatorFormulaEntry* rule,
                            std::vector<V> arguments, std::vector<V> results) {
  if (rule == nullptr) return absl::NotFoundError("no rule");
  return rule->formula(OperatorCall{arguments, results});
}

TEST(ElementwiseRule, PointwiseTagCountsOnePerResultElement) {
  // relu of a 4x8 tensor: 32 elements, 1 FLOP each.
  EXPECT_EQ(Flops(FindElementwiseRule("aten::relu", kPointwise), {T({4, 8})},
                  {T({4, 8})})
                .value(),
            32);
}

TEST(ElementwiseRule, PointwiseCountsTheBroadcastResult) {
  // add of (4, 1) and (1, 8) broadcasts to 4 * 8 = 32 elements.
  EXPECT_EQ(Flops(FindElementwiseRule("aten::add", kPointwise),
                  {T({4, 1}), T({1, 8}), V::Int(1)}, {T({4, 8})})
                .value(),
            32);
}

TEST(ElementwiseRule, PointwiseWithoutTensorResultCountsItsLargestArgument) {
  // aten::equal returns a bool: the larger argument, 6 elements.
  EXPECT_EQ(Flops(FindElementwiseRule("aten::equal", kPointwise),
                  {T({2, 3}), T({3})}, {V::Bool(true)})
                .value(),
            6);
}

TEST(ElementwiseRule, ReductionTagCountsOnePerInputElement) {
  // sum over dim 1 of a 4x8 tensor reads 32 elements.
  EXPECT_EQ(
      Flops(FindElementwiseRule("aten::sum", kReduction),
            {T({4, 8}), V::IntList({1}), V::Bool(false), V::None()}, {T({4})})
          .value(),
      32);
}

TEST(ElementwiseRule, SoftmaxCountsFivePerElement) {
  EXPECT_EQ(Flops(FindElementwiseRule("aten::_softmax", kNoTags),
                  {T({2, 3, 5}), V::Int(-1), V::Bool(false)}, {T({2, 3, 5})})
                .value(),
            5 * 2 * 3 * 5);
}

TEST(ElementwiseRule, SoftmaxBackwardCountsFourPerGradientElement) {
  EXPECT_EQ(
      Flops(FindElementwiseRule("aten::_softmax_backward_data", kNoTags),
            {T({2, 7}), T({2, 7}), V::Int(-1), V::OfKind(V::Kind::kOther)},
            {T({2, 7})})
          .value(),
      4 * 14);
}

TEST(ElementwiseRule, LayerNormCountsSevenPerInputElement) {
  EXPECT_EQ(
      Flops(FindElementwiseRule("aten::native_layer_norm", kNoTags),
            {T({4, 16}), V::IntList({16}), T({16}), T({16}), V::Real(1e-5)},
            {T({4, 16}), T({4, 1}), T({4, 1})})
          .value(),
      7 * 64);
}

TEST(ElementwiseRule, LayerNormBackwardCountsThirteenPerGradientElement) {
  EXPECT_EQ(
      Flops(FindElementwiseRule("aten::native_layer_norm_backward", kNoTags),
            {T({4, 16}), T({4, 16})}, {T({4, 16}), T({16}), T({16})})
          .value(),
      13 * 64);
}

TEST(ElementwiseRule, BatchNormWithRunningStatisticsCountsFourPerElement) {
  EXPECT_EQ(Flops(FindElementwiseRule(
                      "aten::_native_batch_norm_legit_no_training", kNoTags),
                  {T({2, 3, 4, 4})}, {T({2, 3, 4, 4})})
                .value(),
            4 * 96);
}

TEST(ElementwiseRule, RmsNormCountsFourForwardAndNineBackward) {
  EXPECT_EQ(Flops(FindElementwiseRule("aten::_fused_rms_norm", kNoTags),
                  {T({8, 32})}, {T({8, 32}), T({8, 1})})
                .value(),
            4 * 256);
  EXPECT_EQ(
      Flops(FindElementwiseRule("aten::_fused_rms_norm_backward", kNoTags),
            {T({8, 32}), T({8, 32})}, {T({8, 32}), T({32})})
          .value(),
      9 * 256);
}

TEST(ElementwiseRule, TableWinsOverTags) {
  // A (hypothetically) pointwise-tagged softmax still takes softmax's rule.
  EXPECT_EQ(FindElementwiseRule("aten::_softmax", kPointwise),
            FindElementwiseRule("aten::_softmax", kNoTags));
}

TEST(ElementwiseRule, UntaggedOperatorOutsideTheTableHasNoRule) {
  EXPECT_EQ(FindElementwiseRule("aten::sort", kNoTags), nullptr);
  EXPECT_EQ(FindElementwiseRule("aten::topk", kNoTags), nullptr);
}

TEST(ElementwiseRule, BatchNormInEvaluationCountsFourPerElement) {
  // native_batch_norm(input, weight, bias, running_mean, running_var,
  // training, momentum, eps) on 2x3x4x4 = 96 elements.
  auto call = [](bool training) {
    return Flops(FindElementwiseRule("aten::native_batch_norm", kNoTags),
                 {T({2, 3, 4, 4}), T({3}), T({3}), T({3}), T({3}),
                  V::Bool(training), V::Real(0.1), V::Real(1e-5)},
                 {T({2, 3, 4, 4}), T({0}), T({0})});
  };
  EXPECT_EQ(call(true).value(), 7 * 96);
  EXPECT_EQ(call(false).value(), 4 * 96);
}

TEST(ElementwiseRule, BatchNormNoStatsOverloadReadsItsOwnTrainingFlag) {
  // _native_batch_norm_legit.no_stats(input, weight, bias, training, ...):
  // the flag is the first bool wherever it sits.
  EXPECT_EQ(
      Flops(FindElementwiseRule("aten::_native_batch_norm_legit", kNoTags),
            {T({4, 5}), T({5}), T({5}), V::Bool(false), V::Real(0.1),
             V::Real(1e-5)},
            {T({4, 5}), T({0}), T({0})})
          .value(),
      4 * 20);
}

TEST(ElementwiseRule, MaxPoolingCountsEachWindowOfEachOutput) {
  // 2x3 kernel over 1x2x6x9 with stride 1: output 1x2x5x7, 6 compares each.
  EXPECT_EQ(Flops(FindElementwiseRule("aten::max_pool2d_with_indices", kNoTags),
                  {T({1, 2, 6, 9}), V::IntList({2, 3}), V::IntList({}),
                   V::IntList({0}), V::IntList({1}), V::Bool(false)},
                  {T({1, 2, 5, 7}), T({1, 2, 5, 7})})
                .value(),
            2 * 5 * 7 * 6);
}

TEST(ElementwiseRule, PoolingKernelOfOneNumberIsSquare) {
  // avg_pool3d with kernel_size=[2]: a 2x2x2 window for each of 1x1x2x2x2.
  EXPECT_EQ(Flops(FindElementwiseRule("aten::avg_pool3d", kNoTags),
                  {T({1, 1, 4, 4, 4}), V::IntList({2})}, {T({1, 1, 2, 2, 2})})
                .value(),
            8 * 8);
}

TEST(ElementwiseRule, PoolingKernelOfTheWrongRankIsAnError) {
  EXPECT_FALSE(Flops(FindElementwiseRule("aten::avg_pool2d", kNoTags),
                     {T({1, 1, 4, 4}), V::IntList({2, 2, 2})},
                     {T({1, 1, 2, 2})})
                   .ok());
}

TEST(ElementwiseRule, AveragePoolingBackwardSpreadsEachGradientOverItsWindow) {
  // avg_pool2d_backward(grad_output, self, kernel_size, ...): 1x1x3x3
  // gradients, each over a 2x2 window.
  EXPECT_EQ(Flops(FindElementwiseRule("aten::avg_pool2d_backward", kNoTags),
                  {T({1, 1, 3, 3}), T({1, 1, 6, 6}), V::IntList({2, 2})},
                  {T({1, 1, 6, 6})})
                .value(),
            9 * 4);
}

TEST(ElementwiseRule, AdaptivePoolingWindowsOverlapWhenSizesDoNotDivide) {
  // 5 elements into 3 cells: [0, 2), [1, 4), [3, 5): lengths 2 + 3 + 2 = 7;
  // 4 into 2: 2 + 2 = 4. Over 2 channels: 2 * 7 * 4.
  EXPECT_EQ(Flops(FindElementwiseRule("aten::_adaptive_avg_pool2d", kNoTags),
                  {T({2, 5, 4}), V::IntList({3, 2})}, {T({2, 3, 2})})
                .value(),
            2 * 7 * 4);
  // The backward of the same pooling: the same windows.
  EXPECT_EQ(
      Flops(FindElementwiseRule("aten::_adaptive_avg_pool2d_backward", kNoTags),
            {T({2, 3, 2}), T({2, 5, 4})}, {T({2, 5, 4})})
          .value(),
      2 * 7 * 4);
}

TEST(ElementwiseRule, AdaptivePoolingToOneCellReadsEveryElementOnce) {
  EXPECT_EQ(Flops(FindElementwiseRule("aten::adaptive_max_pool3d", kNoTags),
                  {T({3, 4, 5, 6}), V::IntList({1, 1, 1})},
                  {T({3, 1, 1, 1}), T({3, 1, 1, 1})})
                .value(),
            3 * 4 * 5 * 6);
}

TEST(ElementwiseRule, IndexPutCountsValuesOnlyWhenAccumulating) {
  // index_put(self, indices, values, accumulate): 5 values.
  auto call = [](bool accumulate) {
    return Flops(FindElementwiseRule("aten::index_put", kNoTags),
                 {T({8, 3}), V::OfKind(V::Kind::kTensorList), T({5, 3}),
                  V::Bool(accumulate)},
                 {T({8, 3})});
  };
  EXPECT_EQ(call(true).value(), 15);
  EXPECT_EQ(call(false).value(), 0);
}

TEST(ElementwiseRule, ScatterAndIndexAddCountTheirSource) {
  // scatter_add(self, dim, index, src) and index_add_(self, dim, index,
  // source): one add per element of the fourth argument.
  EXPECT_EQ(Flops(FindElementwiseRule("aten::scatter_add_", kNoTags),
                  {T({10, 4}), V::Int(0), T({3, 4}), T({3, 4})}, {T({10, 4})})
                .value(),
            12);
  EXPECT_EQ(Flops(FindElementwiseRule("aten::index_add", kNoTags),
                  {T({10, 4}), V::Int(0), T({6}), T({6, 4})}, {T({10, 4})})
                .value(),
            24);
}

TEST(ElementwiseRule, EmbeddingBackwardAddsEachGradientElement) {
  // embedding_dense_backward(grad_output, indices, num_weights, ...).
  EXPECT_EQ(
      Flops(FindElementwiseRule("aten::embedding_dense_backward", kNoTags),
            {T({4, 16, 32}), T({4, 16}), V::Int(100)}, {T({100, 32})})
          .value(),
      4 * 16 * 32);
}

TEST(ElementwiseRule, NllLossCountsOnePerTarget) {
  EXPECT_EQ(Flops(FindElementwiseRule("aten::nll_loss_forward", kNoTags),
                  {T({8, 10}), T({8}), V::None(), V::Int(1), V::Int(-100)},
                  {T({}), T({})})
                .value(),
            8);
  EXPECT_EQ(Flops(FindElementwiseRule("aten::nll_loss2d_backward", kNoTags),
                  {T({}), T({2, 5, 3, 3}), T({2, 3, 3})}, {T({2, 5, 3, 3})})
                .value(),
            18);
}

TEST(ElementwiseRule, UnknownShapeIsAnError) {
  const absl::StatusOr<Count> flops =
      Flops(FindElementwiseRule("aten::relu", kPointwise),
            {V::UnknownShapeTensor()}, {V::UnknownShapeTensor()});
  EXPECT_EQ(flops.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(ElementwiseRule, TableOnlyFillsGaps) {
  // The convention never replaces a formula or an ignore-list entry: no
  // table packet has either.
  for (const OperatorFormulaEntry& rule : AllElementwiseRules()) {
    EXPECT_EQ(FindOperatorFormula(rule.packet), nullptr) << rule.packet;
    EXPECT_EQ(FindIgnoredOperator(rule.packet), nullptr) << rule.packet;
    EXPECT_EQ(rule.value_arguments, 0u) << rule.packet;
  }
}

TEST(ElementwiseIgnored, CreationOperatorsAreZeroFlopUnderTheConvention) {
  ASSERT_NE(FindElementwiseIgnored("aten::ones_like", kNoTags), nullptr);
  EXPECT_EQ(FindElementwiseIgnored("aten::ones_like", kNoTags)->reason,
            kCreationReason);
  EXPECT_EQ(FindElementwiseIgnored("aten::empty_like", kNoTags)->reason,
            kAllocationReason);
  EXPECT_EQ(FindElementwiseIgnored("aten::relu", kPointwise), nullptr);
  for (const IgnoredOperatorEntry& entry : AllElementwiseIgnored()) {
    if (entry.packet == "view") continue;
    EXPECT_EQ(FindIgnoredOperator(entry.packet), nullptr) << entry.packet;
    EXPECT_EQ(FindOperatorFormula(entry.packet), nullptr) << entry.packet;
    EXPECT_EQ(FindElementwiseRule(entry.packet, kNoTags), nullptr)
        << entry.packet;
  }
}

TEST(ElementwiseIgnored, DataMovementIsZeroFlopUnderTheConvention) {
  for (const char* packet :
       {"aten::embedding", "aten::gather", "aten::index", "aten::stack",
        "aten::select_backward", "aten::slice_backward"}) {
    const IgnoredOperatorEntry* entry = FindElementwiseIgnored(packet, kNoTags);
    ASSERT_NE(entry, nullptr) << packet;
    EXPECT_EQ(entry->reason, kDataMovementReason) << packet;
  }
}

TEST(ElementwiseIgnored, SchemaViewsAreZeroFlopWhateverTheirName) {
  constexpr ElementwiseTags kView{.view = true};
  const IgnoredOperatorEntry* entry =
      FindElementwiseIgnored("aten::_reshape_alias", kView);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->reason, kViewReason);
  EXPECT_EQ(FindElementwiseIgnored("aten::_reshape_alias", kNoTags), nullptr);
  EXPECT_EQ(AllElementwiseIgnored()[0].packet, "view");
}

TEST(ElementwiseRule, AllRulesListsTheTagRulesFirst) {
  const absl::Span<const OperatorFormulaEntry> rules = AllElementwiseRules();
  ASSERT_GE(rules.size(), 2u);
  EXPECT_EQ(rules[0].packet, "pointwise");
  EXPECT_EQ(rules[1].packet, "reduction");
  EXPECT_EQ(rules.size(), 2u + 67u);
}

}  // namespace
}  // namespace torchscan::formulas
