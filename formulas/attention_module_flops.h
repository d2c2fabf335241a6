// Internal to formulas/: the module FLOPs formulas that build on others
// (MultiheadAttention, the Transformer and its layers), and the building
// blocks they share with module_flops.cc.

#ifndef TORCHSCAN_FORMULAS_ATTENTION_MODULE_FLOPS_H_
#define TORCHSCAN_FORMULAS_ATTENTION_MODULE_FLOPS_H_

#include "formulas/exact_count.h"
#include "formulas/module_call.h"
#include "formulas/module_description.h"
#include "formulas/module_family_formulas.h"
#include "formulas/python_semantics.h"

namespace torchscan::formulas::module_internal {

// flops_mha(module, inputs, out); `out` nullptr stands for the default None.
python::Py<ExactCount> MultiheadAttentionFlops(
    const MultiheadAttentionParams& mha, const python::PyTuple& inputs,
    const CallValue* out);
python::Py<ExactCount> TransformerEncoderLayerFlops(
    const TransformerEncoderLayerParams& layer, const python::PyTuple& inputs);
python::Py<ExactCount> TransformerDecoderLayerFlops(
    const TransformerDecoderLayerParams& layer, const python::PyTuple& inputs);
python::Py<ExactCount> TransformerFlops(const TransformerParams& transformer,
                                        const python::PyTuple& inputs);

}  // namespace torchscan::formulas::module_internal

#endif  // TORCHSCAN_FORMULAS_ATTENTION_MODULE_FLOPS_H_
