// The operator FLOP formula table.
//
// Compile-time and sorted by packet name, so a lookup is a binary search done
// once per operator (the dispatcher caches the result per operator handle).
// Conventions follow torch.utils.flop_counter.FlopCounterMode: a multiply-add
// is 2 FLOPs, bias additions are not counted, and every overload of a packet
// (mm, mm.out, ...) uses the packet's formula. In-place packets (addmm_) are
// separate operators, as in FlopCounterMode.
//
// Adding an operator: write the formula, add one entry to kOperatorFormulas
// (kept sorted; a static_assert checks it) and one test in
// operator_formulas_test.cc. docs/operators.md lists the table.

#ifndef TORCHSCAN_FORMULAS_OPERATOR_FORMULAS_H_
#define TORCHSCAN_FORMULAS_OPERATOR_FORMULAS_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "formulas/operator_call.h"

namespace torchscan::formulas {

using OperatorFormula = absl::StatusOr<Count> (*)(const OperatorCall& call);

struct OperatorFormulaEntry {
  // Schema name of the packet, e.g. "aten::mm".
  absl::string_view packet;
  OperatorFormula formula;
  // One line for docs/operators.md.
  absl::string_view convention;
};

// nullptr when the packet has no formula.
const OperatorFormulaEntry* FindOperatorFormula(absl::string_view packet);
absl::Span<const OperatorFormulaEntry> AllOperatorFormulas();

// Shared building blocks, exposed for tests.
absl::StatusOr<Count> MatmulFlops(absl::Span<const std::int64_t> a,
                                  absl::Span<const std::int64_t> b);
absl::StatusOr<Count> BatchedMatmulFlops(absl::Span<const std::int64_t> a,
                                         absl::Span<const std::int64_t> b);

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_OPERATOR_FORMULAS_H_
