// TorchScan 0.2's module formulas: FLOPs, MACs, DMAs and receptive field of
// one module call, from a plain description of the module and the call.
//
// Numbers, warnings and errors are the released torchscan 0.2.0's
// (torchscan/modules/*.py), case for case; docs/modules.md states every
// formula in words. Each function returns
//   * a non-OK status only when the description itself is malformed (a front
//     end bug: the family's hyper-parameters are missing or of the wrong
//     kind), or when a count leaves 128 bits;
//   * otherwise a FormulaOutcome: the value with the warnings upstream would
//     emit, or the exception upstream would raise.
//
// Which values each formula reads, as in a crawl (TorchScan 0.2's per-call
// metric evaluation):
//   ModuleFlops         the ordered inputs, and the first output tensor; for
//                       MultiheadAttention the whole output;
//   ModuleMacs/Dmas/ReceptiveField
//                       the first input tensor and the first output tensor
//                       (None when there is none, which upstream's formulas
//                       then fail on, as here).

#ifndef TORCHSCAN_FORMULAS_MODULE_FORMULAS_H_
#define TORCHSCAN_FORMULAS_MODULE_FORMULAS_H_

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "formulas/formula_outcome.h"
#include "formulas/module_call.h"
#include "formulas/module_description.h"
#include "report/count.h"
#include "report/metric_result.h"

namespace torchscan::formulas {

using report::Count;

// Python's number kinds survive: ints are Counts, floats doubles, and a
// Conv's string padding ("same") stays a string. Identity-like modules give
// (1.0, 1.0, 0.0); ConvTranspose (-kernel, 1.0 / stride, 0.0); adaptive pools
// (int, int, float).
struct ReceptiveField {
  report::MetricValue receptive_field;
  report::MetricValue effective_stride;
  report::MetricValue effective_padding;
};

absl::StatusOr<FormulaOutcome<Count>> ModuleFlops(
    const ModuleDescription& module, const ModuleCall& call);
absl::StatusOr<FormulaOutcome<Count>> ModuleMacs(
    const ModuleDescription& module, const ModuleCall& call);
absl::StatusOr<FormulaOutcome<Count>> ModuleDmas(
    const ModuleDescription& module, const ModuleCall& call);
absl::StatusOr<FormulaOutcome<ReceptiveField>> ModuleReceptiveField(
    const ModuleDescription& module, const ModuleCall& call);

// The per-layer helpers upstream's tests call directly
// (flops_transformer_encoderlayer / flops_transformer_decoderlayer).
// Encoder inputs: (src, src_mask, src_key_padding_mask); decoder inputs:
// (tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
// memory_key_padding_mask); trailing items may be left out (None).
absl::StatusOr<FormulaOutcome<Count>> TransformerEncoderLayerFlops(
    const TransformerEncoderLayerParams& layer,
    absl::Span<const CallValue> inputs);
absl::StatusOr<FormulaOutcome<Count>> TransformerDecoderLayerFlops(
    const TransformerDecoderLayerParams& layer,
    absl::Span<const CallValue> inputs);

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_MODULE_FORMULAS_H_
