// Internal to formulas/: pieces the module FLOPs, MACs and DMAs formulas share.

#ifndef TORCHSCAN_FORMULAS_MODULE_FORMULA_SUPPORT_H_
#define TORCHSCAN_FORMULAS_MODULE_FORMULA_SUPPORT_H_

#include <vector>

#include "absl/status/statusor.h"
#include "formulas/exact_count.h"
#include "formulas/formula_outcome.h"
#include "formulas/module_call.h"
#include "formulas/module_description.h"
#include "formulas/python_semantics.h"
#include "report/count.h"

namespace torchscan::formulas::module_internal {

// torchscan's adaptive_kernel_size(inp, out): per spatial dimension (zipped
// to the shorter of inp.shape[2:] and out.shape[2:]) i // o when o divides i,
// else i % o + 1.
python::Py<std::vector<ExactCount>> AdaptiveKernelSize(const CallValue& inp,
                                                       const CallValue& out);

// The kernel size the pool FLOPs/MACs formulas use: the product of a tuple,
// but a raw int as is (MaxPool2d(2) counts 2, not 4: quirk 10).
ExactCount PoolKernelVolume(const HyperParameter& kernel_size);

// The outcome of a counting formula; overflow past 128 bits is a status.
absl::StatusOr<FormulaOutcome<report::Count>> Finish(
    const python::Py<ExactCount>& result, absl::string_view what);

// The warning and the 0 upstream returns for a type it does not support.
FormulaOutcome<report::Count> UnsupportedCount(const ModuleDescription& module);

template <typename T>
const T& ParamsOf(const ModuleDescription& module) {
  // ValidateModuleDescription ran first, so the alternative is right.
  return std::get<T>(module.params);
}

}  // namespace torchscan::formulas::module_internal

#endif  // TORCHSCAN_FORMULAS_MODULE_FORMULA_SUPPORT_H_
