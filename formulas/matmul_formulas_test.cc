// The typed entry points of the matrix products (MatmulFlopCount,
// BatchedMatmulFlopCount) against the table's formulas on OperatorValues
// (MmFlops, AddmmFlops, BmmFlops, BaddbmmFlops): the same count wherever
// the table's formula gives one, nothing wherever it gives a diagnostic.

#include "formulas/matmul_formulas.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "formulas/formula_support.h"
#include "formulas/operator_call.h"
#include "formulas/operator_formulas.h"
#include "gtest/gtest.h"

namespace torchscan::formulas {
namespace {

using V = OperatorValue;

constexpr std::int64_t kLarge = std::int64_t{1} << 40;
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// The table's formula on the shapes, as the counting fallback calls it; the
// operands at `first` and `first + 1`, after `first` placeholder tensors
// (addmm's and baddbmm's `self`).
absl::StatusOr<Count> TableFormula(OperatorFormula formula, std::size_t first,
                                   const Shape& a, const Shape& b) {
  std::vector<V> arguments(first, V::Tensor({1}));
  arguments.push_back(V::Tensor(a));
  arguments.push_back(V::Tensor(b));
  return formula(OperatorCall{arguments, {}});
}

// The count, or nothing for an error, whatever its message.
std::optional<Count> CountOf(const absl::StatusOr<Count>& flops) {
  if (!flops.ok()) return std::nullopt;
  return *flops;
}

struct ProductShapes {
  std::string name;
  Shape a;
  Shape b;
};

std::string NameOf(const testing::TestParamInfo<ProductShapes>& info) {
  return info.param.name;
}

class MatmulFlopCountTest : public testing::TestWithParam<ProductShapes> {};

TEST_P(MatmulFlopCountTest, EqualsMm) {
  const ProductShapes& shapes = GetParam();
  EXPECT_EQ(CountOf(TableFormula(&MmFlops, 0, shapes.a, shapes.b)),
            MatmulFlopCount(shapes.a, shapes.b));
}

TEST_P(MatmulFlopCountTest, EqualsAddmm) {
  const ProductShapes& shapes = GetParam();
  EXPECT_EQ(CountOf(TableFormula(&AddmmFlops, 1, shapes.a, shapes.b)),
            MatmulFlopCount(shapes.a, shapes.b));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MatmulFlopCountTest,
    testing::Values(ProductShapes{"Square", {8, 8}, {8, 8}},
                    ProductShapes{"Rectangular", {3, 5}, {5, 7}},
                    ProductShapes{"OneRow", {1, 5}, {5, 7}},
                    ProductShapes{"ZeroRows", {0, 5}, {5, 7}},
                    ProductShapes{"ZeroInner", {3, 0}, {0, 7}},
                    ProductShapes{"ZeroColumns", {3, 5}, {5, 0}},
                    ProductShapes{"Large", {kLarge, kLarge}, {kLarge, kLarge}},
                    ProductShapes{"Overflowing", {kMax, kMax}, {kMax, kMax}},
                    ProductShapes{"InnerMismatch", {3, 5}, {4, 7}},
                    ProductShapes{"FirstNot2D", {2, 3, 5}, {5, 7}},
                    ProductShapes{"SecondNot2D", {3, 5}, {5}},
                    ProductShapes{"Scalars", {}, {}}),
    NameOf);

class BatchedMatmulFlopCountTest
    : public testing::TestWithParam<ProductShapes> {};

TEST_P(BatchedMatmulFlopCountTest, EqualsBmm) {
  const ProductShapes& shapes = GetParam();
  EXPECT_EQ(CountOf(TableFormula(&BmmFlops, 0, shapes.a, shapes.b)),
            BatchedMatmulFlopCount(shapes.a, shapes.b));
}

TEST_P(BatchedMatmulFlopCountTest, EqualsBaddbmm) {
  const ProductShapes& shapes = GetParam();
  EXPECT_EQ(CountOf(TableFormula(&BaddbmmFlops, 1, shapes.a, shapes.b)),
            BatchedMatmulFlopCount(shapes.a, shapes.b));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BatchedMatmulFlopCountTest,
    testing::Values(
        ProductShapes{"Square", {2, 8, 8}, {2, 8, 8}},
        ProductShapes{"BatchOfOne", {1, 3, 5}, {1, 5, 7}},
        ProductShapes{"ZeroBatch", {0, 3, 5}, {0, 5, 7}},
        ProductShapes{"ZeroRows", {2, 0, 5}, {2, 5, 7}},
        ProductShapes{"ZeroInner", {2, 3, 0}, {2, 0, 7}},
        ProductShapes{"ZeroColumns", {2, 3, 5}, {2, 5, 0}},
        ProductShapes{"Large", {kLarge, 2, kLarge}, {kLarge, kLarge, 2}},
        ProductShapes{"Overflowing", {kMax, kMax, kMax}, {kMax, kMax, kMax}},
        ProductShapes{"BatchMismatch", {2, 3, 5}, {3, 5, 7}},
        ProductShapes{"InnerMismatch", {2, 3, 5}, {2, 4, 7}},
        ProductShapes{"FirstNot3D", {3, 5}, {2, 5, 7}},
        ProductShapes{"SecondNot3D", {2, 3, 5}, {5, 7}}),
    NameOf);

TEST(MatmulFlopCountTest, CountsTwoFlopsPerMultiplyAdd) {
  EXPECT_EQ(std::optional<Count>(2 * 3 * 7 * 5),
            MatmulFlopCount(Shape{3, 5}, Shape{5, 7}));
}

TEST(MatmulFlopCountTest, CountsLargeShapesExactly) {
  EXPECT_EQ(std::optional<Count>(Count(2) * kLarge * kLarge * kLarge),
            MatmulFlopCount(Shape{kLarge, kLarge}, Shape{kLarge, kLarge}));
}

TEST(BatchedMatmulFlopCountTest, CountsEveryBatch) {
  EXPECT_EQ(std::optional<Count>(4 * 2 * 3 * 7 * 5),
            BatchedMatmulFlopCount(Shape{4, 3, 5}, Shape{4, 5, 7}));
}

// The table's diagnostics are the ones before the typed entry points
// existed.
TEST(MatmulFlopsTest, InnerMismatchSaysWhich) {
  EXPECT_EQ("matmul: inner dimensions must match, got 5 and 4",
            MatmulFlops(Shape{3, 5}, Shape{4, 7}).status().message());
}

TEST(MatmulFlopsTest, WrongRankSaysWhichOperand) {
  EXPECT_EQ("matmul: the second operand must be 2-D, got shape [5]",
            MatmulFlops(Shape{3, 5}, Shape{5}).status().message());
}

TEST(MatmulFlopsTest, OverflowIsOutOfRange) {
  EXPECT_EQ(absl::StatusCode::kOutOfRange,
            MatmulFlops(Shape{kMax, kMax}, Shape{kMax, kMax}).status().code());
}

TEST(BatchedMatmulFlopsTest, BatchMismatchSaysWhich) {
  EXPECT_EQ(
      "bmm: batch dimensions must match, got 2 and 3",
      BatchedMatmulFlops(Shape{2, 3, 5}, Shape{3, 5, 7}).status().message());
}

TEST(BatchedMatmulFlopsTest, InnerMismatchSaysWhich) {
  EXPECT_EQ(
      "bmm: inner dimensions must match, got 5 and 4",
      BatchedMatmulFlops(Shape{2, 3, 5}, Shape{2, 4, 7}).status().message());
}

TEST(BatchedMatmulFlopsTest, WrongRankSaysWhichOperand) {
  EXPECT_EQ("bmm: the first operand must be 3-D, got shape [3, 5]",
            BatchedMatmulFlops(Shape{3, 5}, Shape{2, 5, 7}).status().message());
}

}  // namespace
}  // namespace torchscan::formulas
