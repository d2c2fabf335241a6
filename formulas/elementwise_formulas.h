// The elementwise convention: an opt-in count for the elementwise work that
// FlopCounterMode, and so the default method, leaves uncounted (pointwise
// operators, reductions, softmax and normalisations). A measurement that
// asks for it (CountingOptions::elementwise) counts an operator without a
// formula table entry, and not on the ignore list, with the rule this file
// decides for it, and its report names kElementwiseFlopsMethod
// (report/flop_report.h). docs/methodology.md ("Elementwise work") states
// the rules; NOTE [Elementwise FLOPs per element] in elementwise_formulas.cc
// says why each number is what it is.
//
// The rule is decided once per operator overload, from two facts its schema
// carries (its ATen tags `pointwise` and `reduction`) and a table of the
// softmax and normalisation packets, whose schemas carry neither tag. Each
// rule is an OperatorFormulaEntry, so the counting paths apply it as they
// apply a table formula.

#ifndef TORCHSCAN_FORMULAS_ELEMENTWISE_FORMULAS_H_
#define TORCHSCAN_FORMULAS_ELEMENTWISE_FORMULAS_H_

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "formulas/ignored_operators.h"
#include "formulas/operator_formulas.h"

namespace torchscan::formulas {

// The ATen tags of an overload's schema that decide its rule.
struct ElementwiseTags {
  bool pointwise = false;
  bool reduction = false;
  // Every result aliases an argument that the operator does not write (the
  // schema's `Tensor(a)` returns): a view, zero FLOPs under the convention
  // whether or not the ignore list names it (_reshape_alias, unfold, ...).
  bool view = false;
};

// The rule that counts calls of `packet` ("aten::relu") with schema tags
// `tags` under the elementwise convention, or nullptr when none does: the
// table's entry for a softmax or normalisation packet, else the pointwise
// rule for a `pointwise` overload, else the reduction rule for a
// `reduction` one. The caller applies it only to operators with neither a
// formula nor an ignore-list entry (a formula always wins).
const OperatorFormulaEntry* FindElementwiseRule(absl::string_view packet,
                                                ElementwiseTags tags);

// The pointwise and reduction rules (their `packet` names the tag), then
// the softmax and normalisation table sorted by packet: for
// docs/operators.md and its test.
absl::Span<const OperatorFormulaEntry> AllElementwiseRules();

// NOTE [Creation under the elementwise convention]
// Operators that only create or fill tensors (ones_like, zeros_like,
// fill_, new_zeros, ...) are zero-FLOP under the convention, as the ignore
// list's creation operators (ones, zeros, full, empty) are under both
// methods; the ignore list itself is TorchScan 0.2's and stays as it is,
// so under the default method they remain uncounted. Without them a
// training step's `loss.backward()` (whose seed gradient is a ones_like)
// could never be complete under the convention. Data movement (embedding,
// gather, index, stack, the select and slice backwards, padding), random
// generation and reading a scalar (_local_scalar_dense) are zero-FLOP under
// the convention for the same reason. The entry of `packet`, the view row
// for an operator whose tags say it is a view, or nullptr.
const IgnoredOperatorEntry* FindElementwiseIgnored(absl::string_view packet,
                                                   ElementwiseTags tags);
// The view row (its packet is "view"), then the table sorted by packet.
absl::Span<const IgnoredOperatorEntry> AllElementwiseIgnored();

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_ELEMENTWISE_FORMULAS_H_
