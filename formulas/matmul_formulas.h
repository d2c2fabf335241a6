// Matrix-product formulas: 2 FLOPs per multiply-add, additions of a bias or
// accumulator (addmm's `self`) not counted, as FlopCounterMode does.

#ifndef TORCHSCAN_FORMULAS_MATMUL_FORMULAS_H_
#define TORCHSCAN_FORMULAS_MATMUL_FORMULAS_H_

#include <optional>

#include "absl/status/statusor.h"
#include "formulas/formula_support.h"
#include "formulas/operator_call.h"

namespace torchscan::formulas {

// [m,k] @ [k,n]: 2*m*n*k.
absl::StatusOr<Count> MatmulFlops(ShapeRef a, ShapeRef b);
// [b,m,k] @ [b,k,n]: 2*b*m*n*k.
absl::StatusOr<Count> BatchedMatmulFlops(ShapeRef a, ShapeRef b);

// The typed entry points of the same two formulas, for callers that hold
// the shapes already (the unboxed kernels, torchscan_dispatch/
// unboxed_kernels.cc): the count where MatmulFlops (BatchedMatmulFlops)
// returns one, nothing where it returns an error, whose diagnostic only it
// gives. No Status is built (NOTE [Typed matrix products] in the .cc).
std::optional<Count> MatmulFlopCount(ShapeRef a, ShapeRef b);
std::optional<Count> BatchedMatmulFlopCount(ShapeRef a, ShapeRef b);

// FlopCounterMode's packets.
absl::StatusOr<Count> MmFlops(const OperatorCall& call);
absl::StatusOr<Count> AddmmFlops(const OperatorCall& call);
absl::StatusOr<Count> BmmFlops(const OperatorCall& call);
absl::StatusOr<Count> BaddbmmFlops(const OperatorCall& call);
// _scaled_mm and _scaled_mm_v2 (fp8 and other scaled products): self @ mat2;
// scales, bias and the output dtype are not counted.
absl::StatusOr<Count> ScaledMmFlops(const OperatorCall& call);

// Products FlopCounterMode does not count (it reports 0 for them).
absl::StatusOr<Count> DotFlops(const OperatorCall& call);
absl::StatusOr<Count> MvFlops(const OperatorCall& call);
absl::StatusOr<Count> AddmvFlops(const OperatorCall& call);
absl::StatusOr<Count> AddrFlops(const OperatorCall& call);
absl::StatusOr<Count> AddbmmFlops(const OperatorCall& call);
// torch._grouped_mm (mixture-of-experts layers): each group is its own
// [m_g,k_g] @ [k_g,n_g] product (NOTE [Grouped matrix products] in the .cc).
// Reads the values of `offs` (argument 2).
absl::StatusOr<Count> GroupedMmFlops(const OperatorCall& call);
// torch._scaled_grouped_mm: the same groups, offs at argument 4; the scales
// are not counted.
absl::StatusOr<Count> ScaledGroupedMmFlops(const OperatorCall& call);
// torch._scaled_grouped_mm_v2: offs at argument 8, after the scale lists and
// their recipes.
absl::StatusOr<Count> ScaledGroupedMmV2Flops(const OperatorCall& call);

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_MATMUL_FORMULAS_H_
