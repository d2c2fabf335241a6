#include "formulas/matmul_formulas.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace torchscan::formulas {
namespace {

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
  TS_RETURN_IF_ERROR(ExpectRank(a, 2, "matmul: the first operand"));
  TS_RETURN_IF_ERROR(ExpectRank(b, 2, "matmul: the second operand"));
  if (a[1] != b[0]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "matmul: inner dimensions must match, got ", a[1], " and ", b[0]));
  }
  return Product({2, a[0], b[1], a[1]});
}

absl::StatusOr<Count> BatchedMatmulFlops(ShapeRef a, ShapeRef b) {
  TS_RETURN_IF_ERROR(ExpectRank(a, 3, "bmm: the first operand"));
  TS_RETURN_IF_ERROR(ExpectRank(b, 3, "bmm: the second operand"));
  if (a[0] != b[0]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bmm: batch dimensions must match, got ", a[0], " and ", b[0]));
  }
  if (a[2] != b[1]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bmm: inner dimensions must match, got ", a[2], " and ", b[1]));
  }
  return Product({2, a[0], a[1], b[2], a[2]});
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

}  // namespace torchscan::formulas
