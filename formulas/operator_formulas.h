// The operator FLOP formula table.
//
// Compile-time and sorted by packet name, so a lookup is a binary search done
// once per operator (the dispatcher caches the result per operator handle).
// Conventions follow torch.utils.flop_counter.FlopCounterMode: a multiply-add
// is 2 FLOPs, bias additions are not counted, and every overload of a packet
// (mm, mm.out, ...) uses the packet's formula. In-place packets (addmm_) are
// separate operators, as in FlopCounterMode.
//
// Adding an operator: write the formula (matmul_, convolution_, attention_ or
// fused_layer_formulas.cc), add one entry to kTable in operator_formulas.cc
// (kept sorted; a static_assert checks it) and one test in
// operator_formulas_test.cc. docs/operators.md lists the table.

#ifndef TORCHSCAN_FORMULAS_OPERATOR_FORMULAS_H_
#define TORCHSCAN_FORMULAS_OPERATOR_FORMULAS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "formulas/operator_call.h"

namespace torchscan::formulas {

using OperatorFormula = absl::StatusOr<Count> (*)(const OperatorCall& call);

// How a formula relates to FlopCounterMode of the pinned torch.
enum class FormulaOrigin {
  // Same operator, same count.
  kFlopCounterMode,
  // FlopCounterMode has a formula, but it is wrong for this operator (two
  // dimensions swapped, an argument bound to the wrong parameter, a count
  // multiplied by the group count); we count correctly.
  kCorrected,
  // FlopCounterMode has no formula and counts 0.
  kBeyondFlopCounterMode,
};

struct OperatorFormulaEntry {
  // Schema name of the packet, e.g. "aten::mm".
  absl::string_view packet;
  OperatorFormula formula;
  FormulaOrigin origin;
  // One line for docs/operators.md.
  absl::string_view convention;
  // Bit i set: the formula needs the values of argument i (a 1-D integer
  // tensor such as sequence offsets), not only its shape.
  std::uint32_t value_arguments = 0;
};

// nullptr when the packet has no formula.
const OperatorFormulaEntry* FindOperatorFormula(absl::string_view packet);
absl::Span<const OperatorFormulaEntry> AllOperatorFormulas();
absl::string_view FormulaOriginName(FormulaOrigin origin);

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_OPERATOR_FORMULAS_H_
