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
  EXPECT_EQ(FindElementwiseRule("aten::embedding", kNoTags), nullptr);
  EXPECT_EQ(FindElementwiseRule("aten::gather", kNoTags), nullptr);
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
  ASSERT_NE(FindElementwiseIgnored("aten::ones_like"), nullptr);
  EXPECT_EQ(FindElementwiseIgnored("aten::ones_like")->reason, kCreationReason);
  EXPECT_EQ(FindElementwiseIgnored("aten::empty_like")->reason,
            kAllocationReason);
  EXPECT_EQ(FindElementwiseIgnored("aten::relu"), nullptr);
  for (const IgnoredOperatorEntry& entry : AllElementwiseIgnored()) {
    EXPECT_EQ(FindIgnoredOperator(entry.packet), nullptr) << entry.packet;
    EXPECT_EQ(FindOperatorFormula(entry.packet), nullptr) << entry.packet;
    EXPECT_EQ(FindElementwiseRule(entry.packet, kNoTags), nullptr)
        << entry.packet;
  }
}

TEST(ElementwiseRule, AllRulesListsTheTagRulesFirst) {
  const absl::Span<const OperatorFormulaEntry> rules = AllElementwiseRules();
  ASSERT_GE(rules.size(), 2u);
  EXPECT_EQ(rules[0].packet, "pointwise");
  EXPECT_EQ(rules[1].packet, "reduction");
  EXPECT_EQ(rules.size(), 28u);
}

}  // namespace
}  // namespace torchscan::formulas
