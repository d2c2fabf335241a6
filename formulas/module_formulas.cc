// The four module formula entry points: validate the description, find the
// family's formula in the module family table, and run it on what it reads
// of the call.

#include "formulas/module_formulas.h"

#include "base/status_macros.h"
#include "formulas/module_families.h"
#include "formulas/module_family_formulas.h"
#include "formulas/module_formula_support.h"

namespace torchscan::formulas {
namespace {

// Runs the family's `metric` formula; a family without one warns and gives 0.
absl::StatusOr<FormulaOutcome<Count>> RunCountFormula(
    CountFormula ModuleFamilyRow::*metric, const ModuleDescription& module,
    const ModuleCall& call, absl::string_view what) {
  TS_RETURN_IF_ERROR(ValidateModuleDescription(module));
  const CountFormula formula = ModuleFamilyRowFor(module.family).*metric;
  if (formula == nullptr) return module_internal::UnsupportedCount(module);
  const python::PyTuple inputs = python::TupleOf(call.inputs);
  const FormulaArgs args{module, inputs,
                         python::OrNone(FirstTensor(call.inputs)),
                         python::OrNone(FirstTensor(call.output)), call.output};
  return module_internal::Finish(formula(args), what);
}

}  // namespace

absl::StatusOr<FormulaOutcome<Count>> ModuleFlops(
    const ModuleDescription& module, const ModuleCall& call) {
  return RunCountFormula(&ModuleFamilyRow::flops, module, call, "module FLOPs");
}

absl::StatusOr<FormulaOutcome<Count>> ModuleMacs(
    const ModuleDescription& module, const ModuleCall& call) {
  return RunCountFormula(&ModuleFamilyRow::macs, module, call, "module MACs");
}

absl::StatusOr<FormulaOutcome<Count>> ModuleDmas(
    const ModuleDescription& module, const ModuleCall& call) {
  return RunCountFormula(&ModuleFamilyRow::dmas, module, call, "module DMAs");
}

absl::StatusOr<FormulaOutcome<ReceptiveField>> ModuleReceptiveField(
    const ModuleDescription& module, const ModuleCall& call) {
  TS_RETURN_IF_ERROR(ValidateModuleDescription(module));
  using Outcome = FormulaOutcome<ReceptiveField>;
  const FieldFormula formula =
      ModuleFamilyRowFor(module.family).receptive_field;
  if (formula == nullptr) {
    return Outcome::Value(module_internal::IdentityField(),
                          {UnsupportedModuleWarning(module.type)});
  }
  const python::PyTuple inputs = python::TupleOf(call.inputs);
  const FormulaArgs args{module, inputs,
                         python::OrNone(FirstTensor(call.inputs)),
                         python::OrNone(FirstTensor(call.output)), call.output};
  python::Py<ReceptiveField> field = formula(args);
  if (!field.ok()) return Outcome::Error(field.error());
  return Outcome::Value(*field);
}

}  // namespace torchscan::formulas
