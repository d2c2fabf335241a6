#include "formulas/module_formula_support.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace torchscan::formulas::module_internal {

using python::Py;

Py<std::vector<ExactCount>> AdaptiveKernelSize(const CallValue& inp,
                                               const CallValue& out) {
  TS_PY_ASSIGN_OR_RAISE(const Dims* in_shape, python::ShapeOf(inp));
  TS_PY_ASSIGN_OR_RAISE(const Dims* out_shape, python::ShapeOf(out));
  absl::Span<const std::int64_t> in_dims = python::DimsFrom(*in_shape, 2);
  absl::Span<const std::int64_t> out_dims = python::DimsFrom(*out_shape, 2);
  std::vector<ExactCount> kernel;
  for (std::size_t i = 0; i < std::min(in_dims.size(), out_dims.size()); ++i) {
    const ExactCount in_size = in_dims[i];
    const ExactCount out_size = out_dims[i];
    if (out_size.IsZero()) {
      return python::Raise("ZeroDivisionError", python::kIntegerModuloByZero);
    }
    kernel.push_back(FloorMod(in_size, out_size).IsZero()
                         ? FloorDiv(in_size, out_size)
                         : FloorMod(in_size, out_size) + 1);
  }
  return kernel;
}

ExactCount PoolKernelVolume(const HyperParameter& kernel_size) {
  if (kernel_size.kind == HyperParameter::Kind::kTuple) {
    return python::ProductOf(kernel_size);
  }
  return kernel_size.ints.front();
}

absl::StatusOr<FormulaOutcome<report::Count>> Finish(
    const Py<ExactCount>& result, absl::string_view what) {
  if (!result.ok()) return FormulaOutcome<report::Count>::Error(result.error());
  if (result->overflowed()) {
    return absl::OutOfRangeError(
        absl::StrCat(what, " does not fit in 128 bits for these shapes"));
  }
  return FormulaOutcome<report::Count>::Value(result->value());
}

FormulaOutcome<report::Count> UnsupportedCount(
    const ModuleDescription& module) {
  return FormulaOutcome<report::Count>::Value(
      0, {UnsupportedModuleWarning(module.type)});
}

}  // namespace torchscan::formulas::module_internal
