#include "formulas/operator_formulas.h"

#include <algorithm>
#include <array>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace torchscan::formulas {
namespace {

absl::Status ShapeError(absl::string_view what,
                        absl::Span<const std::int64_t> shape) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, ", got shape [", absl::StrJoin(shape, ", "), "]"));
}

// mm(a, b), or any overload whose first two arguments are the matrices.
absl::StatusOr<Count> Mm(const OperatorCall& call) {
  absl::StatusOr<absl::Span<const std::int64_t>> a =
      TensorShapeAt(call.arguments, 0, "self");
  if (!a.ok()) return a.status();
  absl::StatusOr<absl::Span<const std::int64_t>> b =
      TensorShapeAt(call.arguments, 1, "mat2");
  if (!b.ok()) return b.status();
  return MatmulFlops(*a, *b);
}

// addmm(bias, a, b): the product only; the bias addition is not counted.
absl::StatusOr<Count> Addmm(const OperatorCall& call) {
  absl::StatusOr<absl::Span<const std::int64_t>> a =
      TensorShapeAt(call.arguments, 1, "mat1");
  if (!a.ok()) return a.status();
  absl::StatusOr<absl::Span<const std::int64_t>> b =
      TensorShapeAt(call.arguments, 2, "mat2");
  if (!b.ok()) return b.status();
  return MatmulFlops(*a, *b);
}

absl::StatusOr<Count> Bmm(const OperatorCall& call) {
  absl::StatusOr<absl::Span<const std::int64_t>> a =
      TensorShapeAt(call.arguments, 0, "self");
  if (!a.ok()) return a.status();
  absl::StatusOr<absl::Span<const std::int64_t>> b =
      TensorShapeAt(call.arguments, 1, "mat2");
  if (!b.ok()) return b.status();
  return BatchedMatmulFlops(*a, *b);
}

absl::StatusOr<Count> Baddbmm(const OperatorCall& call) {
  absl::StatusOr<absl::Span<const std::int64_t>> a =
      TensorShapeAt(call.arguments, 1, "batch1");
  if (!a.ok()) return a.status();
  absl::StatusOr<absl::Span<const std::int64_t>> b =
      TensorShapeAt(call.arguments, 2, "batch2");
  if (!b.ok()) return b.status();
  return BatchedMatmulFlops(*a, *b);
}

constexpr auto kTable = std::to_array<OperatorFormulaEntry>({
    {"aten::addmm", &Addmm, "2*m*n*k of mat1 [m,k] @ mat2 [k,n]; bias not counted"},
    {"aten::baddbmm", &Baddbmm,
     "2*b*m*n*k of batch1 [b,m,k] @ batch2 [b,k,n]; bias not counted"},
    {"aten::bmm", &Bmm, "2*b*m*n*k of self [b,m,k] @ mat2 [b,k,n]"},
    {"aten::mm", &Mm, "2*m*n*k of self [m,k] @ mat2 [k,n]"},
});

constexpr bool IsSortedAndUnique() {
  for (std::size_t i = 1; i < kTable.size(); ++i) {
    if (!(kTable[i - 1].packet < kTable[i].packet)) return false;
  }
  return true;
}
static_assert(IsSortedAndUnique(),
              "kTable must be sorted by packet name, without duplicates");

}  // namespace

absl::StatusOr<Count> MatmulFlops(absl::Span<const std::int64_t> a,
                                  absl::Span<const std::int64_t> b) {
  if (a.size() != 2) return ShapeError("matmul: the first operand must be 2-D", a);
  if (b.size() != 2) return ShapeError("matmul: the second operand must be 2-D", b);
  if (a[1] != b[0]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "matmul: inner dimensions must match, got ", a[1], " and ", b[0]));
  }
  return Count(2) * a[0] * b[1] * a[1];
}

absl::StatusOr<Count> BatchedMatmulFlops(absl::Span<const std::int64_t> a,
                                         absl::Span<const std::int64_t> b) {
  if (a.size() != 3) return ShapeError("bmm: the first operand must be 3-D", a);
  if (b.size() != 3) return ShapeError("bmm: the second operand must be 3-D", b);
  if (a[0] != b[0]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bmm: batch dimensions must match, got ", a[0], " and ", b[0]));
  }
  if (a[2] != b[1]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bmm: inner dimensions must match, got ", a[2], " and ", b[1]));
  }
  return Count(2) * a[0] * a[1] * b[2] * a[2];
}

const OperatorFormulaEntry* FindOperatorFormula(absl::string_view packet) {
  auto it = std::lower_bound(
      kTable.begin(), kTable.end(), packet,
      [](const OperatorFormulaEntry& entry, absl::string_view name) {
        return entry.packet < name;
      });
  if (it == kTable.end() || it->packet != packet) return nullptr;
  return &*it;
}

absl::Span<const OperatorFormulaEntry> AllOperatorFormulas() { return kTable; }

}  // namespace torchscan::formulas
