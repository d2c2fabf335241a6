#include "formulas/matmul_formulas.h"

#include <cstddef>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace torchscan::formulas {
namespace {

// NOTE [Typed matrix products]
// The unboxed kernels hold a product's shapes already, as the typed tensors'
// sizes; the table's formula (MmFlops) wants them as OperatorValues and
// returns a StatusOr: building the values and evaluating it on them cost a
// counted 8x8 mm about 760 instructions (docs/performance.md, "Unboxed
// kernels for the hot operators"). So each product's checks and arithmetic are
// written once, below, and say what is wrong instead of building a Status: the
// typed entry points (MatmulFlopCount, BatchedMatmulFlopCount) return the count
// or nothing, and the formulas of the table (MatmulFlops, BatchedMatmulFlops)
// turn the same outcome into their diagnostic. The two cannot disagree on a
// count, and a caller that gets nothing asks the table's formula why.

// Why two shapes are no product the formula counts, in the order the
// checks run (the first that fails is the diagnostic).
enum class ProductProblem {
  kNone,
  kFirstRank,
  kSecondRank,
  kBatch,
  kInner,
  kOverflow,
};

ProductProblem Exact(std::optional<Count> product, Count& flops) {
  if (!product) return ProductProblem::kOverflow;
  flops = *product;
  return ProductProblem::kNone;
}

// [m,k] @ [k,n]: 2*m*n*k into `flops`, or why not.
ProductProblem CountMatmul(ShapeRef a, ShapeRef b, Count& flops) {
  if (a.size() != 2) return ProductProblem::kFirstRank;
  if (b.size() != 2) return ProductProblem::kSecondRank;
  if (a[1] != b[0]) return ProductProblem::kInner;
  return Exact(ExactProductOf({2, a[0], b[1], a[1]}), flops);
}

// [b,m,k] @ [b,k,n]: 2*b*m*n*k into `flops`, or why not.
ProductProblem CountBatchedMatmul(ShapeRef a, ShapeRef b, Count& flops) {
  if (a.size() != 3) return ProductProblem::kFirstRank;
  if (b.size() != 3) return ProductProblem::kSecondRank;
  if (a[0] != b[0]) return ProductProblem::kBatch;
  if (a[2] != b[1]) return ProductProblem::kInner;
  return Exact(ExactProductOf({2, a[0], a[1], b[2], a[2]}), flops);
}

// The diagnostic of `problem` (not kNone) for operands `a` and `b` of rank
// `rank` of the product `what` names: the inner dimensions are a's last and
// b's second to last.
absl::Status ProductError(ProductProblem problem, absl::string_view what,
                          std::size_t rank, ShapeRef a, ShapeRef b) {
  switch (problem) {
    case ProductProblem::kFirstRank:
      return ExpectRank(a, rank, absl::StrCat(what, ": the first operand"));
    case ProductProblem::kSecondRank:
      return ExpectRank(b, rank, absl::StrCat(what, ": the second operand"));
    case ProductProblem::kBatch:
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": batch dimensions must match, got ", a[0], " and ", b[0]));
    case ProductProblem::kInner:
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": inner dimensions must match, got ", a[rank - 1],
                       " and ", b[rank - 2]));
    case ProductProblem::kOverflow:
      return CountOverflowError();
    case ProductProblem::kNone:
      break;
  }
  return absl::InternalError(absl::StrCat(what, ": no problem to report"));
}

absl::StatusOr<Count> MatmulOfArguments(const OperatorCall& call,
                                        std::size_t first,
                                        absl::string_view first_role,
                                        absl::string_view second_role) {
  TS_ASSIGN_OR_RETURN(ShapeRef a, ArgumentShape(call, first, first_role));
  TS_ASSIGN_OR_RETURN(ShapeRef b, ArgumentShape(call, first + 1, second_role));
  return MatmulFlops(a, b);
}

absl::StatusOr<Count> BatchedMatmulOfArguments(const OperatorCall& call,
                                               std::size_t first,
                                               absl::string_view first_role,
                                               absl::string_view second_role) {
  TS_ASSIGN_OR_RETURN(ShapeRef a, ArgumentShape(call, first, first_role));
  TS_ASSIGN_OR_RETURN(ShapeRef b, ArgumentShape(call, first + 1, second_role));
  return BatchedMatmulFlops(a, b);
}

// A matrix-vector product [m,n] @ [n] is an mm with n as the inner dimension
// and a single column: 2*m*n.
absl::StatusOr<Count> MatrixVectorFlops(ShapeRef matrix, ShapeRef vector) {
  TS_RETURN_IF_ERROR(ExpectRank(matrix, 2, "matrix-vector: the matrix"));
  TS_RETURN_IF_ERROR(ExpectRank(vector, 1, "matrix-vector: the vector"));
  if (matrix[1] != vector[0]) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix-vector: inner dimensions must match, got ",
                     matrix[1], " and ", vector[0]));
  }
  return Product({2, matrix[0], matrix[1]});
}

}  // namespace

absl::StatusOr<Count> MatmulFlops(ShapeRef a, ShapeRef b) {
  Count flops;
  const ProductProblem problem = CountMatmul(a, b, flops);
  if (problem == ProductProblem::kNone) return flops;
  return ProductError(problem, "matmul", 2, a, b);
}

absl::StatusOr<Count> BatchedMatmulFlops(ShapeRef a, ShapeRef b) {
  Count flops;
  const ProductProblem problem = CountBatchedMatmul(a, b, flops);
  if (problem == ProductProblem::kNone) return flops;
  return ProductError(problem, "bmm", 3, a, b);
}

std::optional<Count> MatmulFlopCount(ShapeRef a, ShapeRef b) {
  Count flops;
  if (CountMatmul(a, b, flops) != ProductProblem::kNone) return std::nullopt;
  return flops;
}

std::optional<Count> BatchedMatmulFlopCount(ShapeRef a, ShapeRef b) {
  Count flops;
  if (CountBatchedMatmul(a, b, flops) != ProductProblem::kNone) {
    return std::nullopt;
  }
  return flops;
}

absl::StatusOr<Count> MmFlops(const OperatorCall& call) {
  return MatmulOfArguments(call, 0, "self", "mat2");
}

absl::StatusOr<Count> AddmmFlops(const OperatorCall& call) {
  return MatmulOfArguments(call, 1, "mat1", "mat2");
}

absl::StatusOr<Count> BmmFlops(const OperatorCall& call) {
  return BatchedMatmulOfArguments(call, 0, "self", "mat2");
}

absl::StatusOr<Count> BaddbmmFlops(const OperatorCall& call) {
  return BatchedMatmulOfArguments(call, 1, "batch1", "batch2");
}

absl::StatusOr<Count> ScaledMmFlops(const OperatorCall& call) {
  // Scales, bias and output dtype do not change the product's FLOPs.
  return MatmulOfArguments(call, 0, "self", "mat2");
}

absl::StatusOr<Count> DotFlops(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(ShapeRef a, ArgumentShape(call, 0, "self"));
  TS_ASSIGN_OR_RETURN(ShapeRef b, ArgumentShape(call, 1, "other"));
  TS_RETURN_IF_ERROR(ExpectRank(a, 1, "dot: the first operand"));
  if (a != b) {
    return absl::InvalidArgumentError(
        absl::StrCat("dot: operands must have the same shape, got ",
                     ShapeText(a), " and ", ShapeText(b)));
  }
  return Product({2, a[0]});
}

absl::StatusOr<Count> MvFlops(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(ShapeRef matrix, ArgumentShape(call, 0, "self"));
  TS_ASSIGN_OR_RETURN(ShapeRef vector, ArgumentShape(call, 1, "vec"));
  return MatrixVectorFlops(matrix, vector);
}

absl::StatusOr<Count> AddmvFlops(const OperatorCall& call) {
  TS_ASSIGN_OR_RETURN(ShapeRef matrix, ArgumentShape(call, 1, "mat"));
  TS_ASSIGN_OR_RETURN(ShapeRef vector, ArgumentShape(call, 2, "vec"));
  return MatrixVectorFlops(matrix, vector);
}

absl::StatusOr<Count> AddrFlops(const OperatorCall& call) {
  // The outer product is an mm with inner dimension 1: 2*m*n, as
  // FlopCounterMode counts [m,1] @ [1,n].
  TS_ASSIGN_OR_RETURN(ShapeRef a, ArgumentShape(call, 1, "vec1"));
  TS_ASSIGN_OR_RETURN(ShapeRef b, ArgumentShape(call, 2, "vec2"));
  TS_RETURN_IF_ERROR(ExpectRank(a, 1, "addr: vec1"));
  TS_RETURN_IF_ERROR(ExpectRank(b, 1, "addr: vec2"));
  return Product({2, a[0], b[0]});
}

absl::StatusOr<Count> AddbmmFlops(const OperatorCall& call) {
  // The batched products; summing them over the batch is an accumulation,
  // not counted, like addmm's bias.
  return BatchedMatmulOfArguments(call, 1, "batch1", "batch2");
}

// NOTE [Grouped matrix products]
// torch._grouped_mm multiplies groups of one operand by their own matrix;
// `offs` holds the groups' cumulative ends along the grouped dimension. Every
// group is an [m_g,k_g] @ [k_g,n_g] product, so the work is
// 2 * sum_g(m_g * k_g * n_g), which for each layout is
//   [G,m,k] @ [G,k,n], no offs:               2*G*m*k*n
//   [M,k] @ [G,k,n], rows grouped (offs):      2*end*k*n
//   [G,m,k] @ [k,N], columns grouped (offs):   2*m*k*end
//   [m,K] @ [K,n], inner dimension grouped:    2*m*end*n (the weight gradient)
// where `end` is offs' last value: rows (columns, inner indices) past it
// belong to no group and are not multiplied. So the count needs offs'
// values; where they cannot be read (meta or fake tensors, a compiled
// graph, a CUDA graph being captured) the formula fails, naming why, and
// the report is partial: never a count of rows that may not have run.
// torch._scaled_grouped_mm (and its _v2) takes the same operands and offs
// in the same layouts, after its scales: the scales multiply each group's
// result and are not counted, like a bias.
namespace {

absl::StatusOr<std::int64_t> GroupedExtent(absl::string_view op,
                                           const OperatorValue& offs,
                                           std::int64_t extent,
                                           absl::string_view dimension) {
  if (offs.shape_unknown || offs.shape.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": offs must be a 1-D tensor of group ends"));
  }
  if (!offs.values) {
    return absl::FailedPreconditionError(absl::StrCat(
        op,
        ": the values of offs cannot be read here (meta or fake tensors, a "
        "compiled graph, a CUDA graph capture), so the groups' sizes are "
        "unknown"));
  }
  std::int64_t end = 0;
  for (std::int64_t value : *offs.values) {
    if (value < end || value > extent) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": offs must rise from 0 to at most the ", dimension,
                       " extent ", extent, ", got ", value, " after ", end));
    }
    end = value;
  }
  return end;
}

absl::Status ExpectInner(absl::string_view op, std::int64_t a, std::int64_t b) {
  if (a == b) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": inner dimensions must match, got ", a, " and ", b));
}

// The grouped product of arguments 0 and 1, with offs at `offs_index`.
absl::StatusOr<Count> GroupedProductFlops(const OperatorCall& call,
                                          std::size_t offs_index,
                                          absl::string_view op) {
  TS_ASSIGN_OR_RETURN(ShapeRef a, ArgumentShape(call, 0, "self"));
  TS_ASSIGN_OR_RETURN(ShapeRef b, ArgumentShape(call, 1, "mat2"));
  TS_ASSIGN_OR_RETURN(const OperatorValue* offs,
                      OptionalTensorArgument(call, offs_index, "offs"));
  if (a.size() == 3 && b.size() == 3 && offs == nullptr) {
    return BatchedMatmulFlops(a, b);
  }
  if (offs == nullptr || a.size() < 2 || b.size() < 2 ||
      a.size() + b.size() > 5) {
    return absl::InvalidArgumentError(absl::StrCat(
        op,
        ": expected [G,m,k] @ [G,k,n], or 2-D and 3-D operands with offs, "
        "got ",
        ShapeText(a), " @ ", ShapeText(b),
        offs == nullptr ? " without offs" : " with offs"));
  }
  if (a.size() == 2 && b.size() == 3) {
    TS_RETURN_IF_ERROR(ExpectInner(op, a[1], b[1]));
    TS_ASSIGN_OR_RETURN(std::int64_t rows,
                        GroupedExtent(op, *offs, a[0], "row"));
    return Product({2, rows, a[1], b[2]});
  }
  if (a.size() == 3) {
    TS_RETURN_IF_ERROR(ExpectInner(op, a[2], b[0]));
    TS_ASSIGN_OR_RETURN(std::int64_t columns,
                        GroupedExtent(op, *offs, b[1], "column"));
    return Product({2, a[1], a[2], columns});
  }
  TS_RETURN_IF_ERROR(ExpectInner(op, a[1], b[0]));
  TS_ASSIGN_OR_RETURN(std::int64_t inner,
                      GroupedExtent(op, *offs, a[1], "inner"));
  return Product({2, a[0], inner, b[1]});
}

}  // namespace

absl::StatusOr<Count> GroupedMmFlops(const OperatorCall& call) {
  return GroupedProductFlops(call, 2, "_grouped_mm");
}

absl::StatusOr<Count> ScaledGroupedMmFlops(const OperatorCall& call) {
  return GroupedProductFlops(call, 4, "_scaled_grouped_mm");
}

absl::StatusOr<Count> ScaledGroupedMmV2Flops(const OperatorCall& call) {
  return GroupedProductFlops(call, 8, "_scaled_grouped_mm_v2");
}

}  // namespace torchscan::formulas
