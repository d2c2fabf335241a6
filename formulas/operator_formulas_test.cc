#include "formulas/operator_formulas.h"

#include "formulas/ignored_operators.h"
#include "gtest/gtest.h"

namespace torchscan::formulas {
namespace {

absl::StatusOr<Count> Evaluate(absl::string_view packet,
                               std::vector<OperatorValue> arguments) {
  const OperatorFormulaEntry* entry = FindOperatorFormula(packet);
  if (entry == nullptr) return absl::NotFoundError(packet);
  return entry->formula(OperatorCall{arguments, {}});
}

OperatorValue T(Shape shape) { return OperatorValue::Tensor(std::move(shape)); }

// Hand computation: an [m,k] @ [k,n] product is m*n dot products of length k,
// each k multiplies and k adds in FlopCounterMode's convention: 2*m*n*k.
TEST(MatmulFormulas, MmIsTwoMNK) {
  EXPECT_EQ(*Evaluate("aten::mm", {T({2, 3}), T({3, 4})}), 2 * 2 * 4 * 3);
}

TEST(MatmulFormulas, AddmmIgnoresTheBias) {
  EXPECT_EQ(*Evaluate("aten::addmm", {T({5}), T({7, 3}), T({3, 5}),
                                      OperatorValue::Int(1), OperatorValue::Int(1)}),
            2 * 7 * 5 * 3);
}

TEST(MatmulFormulas, BmmAndBaddbmmCountEveryBatch) {
  EXPECT_EQ(*Evaluate("aten::bmm", {T({4, 2, 3}), T({4, 3, 6})}), 2 * 4 * 2 * 6 * 3);
  EXPECT_EQ(*Evaluate("aten::baddbmm", {T({4, 2, 6}), T({4, 2, 3}), T({4, 3, 6})}),
            2 * 4 * 2 * 6 * 3);
}

TEST(MatmulFormulas, LargeMetaShapesDoNotOverflow) {
  // A [2^31, 2^31] @ [2^31, 2^31] product: 2^94 FLOPs, beyond 64 bits.
  const std::int64_t side = std::int64_t{1} << 31;
  EXPECT_EQ(*Evaluate("aten::mm", {T({side, side}), T({side, side})}),
            Count(1) << 94);
}

TEST(MatmulFormulas, BadShapesAreErrorsThatNameTheProblem) {
  absl::StatusOr<Count> flops = Evaluate("aten::mm", {T({2, 3}), T({4, 5})});
  ASSERT_FALSE(flops.ok());
  EXPECT_EQ(flops.status().message(), "matmul: inner dimensions must match, got 3 and 4");
  flops = Evaluate("aten::bmm", {T({2, 3}), T({2, 3, 5})});
  ASSERT_FALSE(flops.ok());
  EXPECT_EQ(flops.status().message(),
            "bmm: the first operand must be 3-D, got shape [2, 3]");
  flops = Evaluate("aten::mm", {OperatorValue::UnknownShapeTensor(), T({3, 4})});
  ASSERT_FALSE(flops.ok());
  EXPECT_EQ(flops.status().code(), absl::StatusCode::kUnimplemented);
  flops = Evaluate("aten::mm", {T({3, 4})});
  EXPECT_EQ(flops.status().message(), "mat2 (argument 1) is missing");
}

TEST(OperatorTables, LookupFindsEntriesAndNothingElse) {
  EXPECT_NE(FindOperatorFormula("aten::mm"), nullptr);
  EXPECT_EQ(FindOperatorFormula("aten::mm_"), nullptr);
  EXPECT_EQ(FindOperatorFormula("aten::addmm_"), nullptr);
  EXPECT_EQ(FindOperatorFormula("aten::sin"), nullptr);
  ASSERT_NE(FindIgnoredOperator("aten::view"), nullptr);
  EXPECT_EQ(FindIgnoredOperator("aten::view")->reason, "Metadata-only tensor view.");
  EXPECT_EQ(FindIgnoredOperator("aten::relu"), nullptr);
  for (const OperatorFormulaEntry& entry : AllOperatorFormulas()) {
    EXPECT_EQ(FindIgnoredOperator(entry.packet), nullptr)
        << entry.packet << " is both counted and ignored";
  }
}

}  // namespace
}  // namespace torchscan::formulas
