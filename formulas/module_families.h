// The module family table: one row per ModuleFamily with everything the
// family means to the formulas: how its hyper-parameters are read from a
// description's JSON, and its TorchScan 0.2 FLOPs, MACs, DMAs and receptive
// field formulas (each the small function of module_family_formulas.h).
//
// Adding a family is its enum value and JSON name (module_description.h/.cc)
// plus one row in module_families.cc; ModuleFlops, ModuleMacs, ModuleDmas,
// ModuleReceptiveField and ModuleDescriptionFromJson look the row up.

#ifndef TORCHSCAN_FORMULAS_MODULE_FAMILIES_H_
#define TORCHSCAN_FORMULAS_MODULE_FAMILIES_H_

#include "absl/status/statusor.h"
#include "formulas/exact_count.h"
#include "formulas/module_call.h"
#include "formulas/module_description.h"
#include "formulas/module_formulas.h"
#include "pycompat/python_semantics.h"
#include "report/json_reader.h"

namespace torchscan::formulas {

// What a formula may read of one call (module_formulas.h says which formula
// reads which value).
struct FormulaArgs {
  const ModuleDescription& module;  // validated: params match the family
  const pycompat::PyTuple& inputs;  // the ordered inputs as a Python tuple
  const CallValue& inp;             // the first input tensor, or None
  const CallValue& out;             // the first output tensor, or None
  const CallValue& output;          // the whole output
};

using ParamsReader =
    absl::StatusOr<ModuleParams> (*)(const report::JsonObject& object);
using CountFormula = pycompat::Py<ExactCount> (*)(const FormulaArgs& args);
using FieldFormula = pycompat::Py<ReceptiveField> (*)(const FormulaArgs& args);

struct ModuleFamilyRow {
  ModuleFamily family;
  // nullptr: the family has no hyper-parameters (std::monostate).
  ParamsReader read_params;
  // nullptr: upstream has no formula of this metric for the family, so it
  // warns "Module type not supported: <type>" and returns 0, or (1.0, 1.0,
  // 0.0) for the receptive field.
  CountFormula flops;
  CountFormula macs;
  CountFormula dmas;
  FieldFormula receptive_field;
};

// The row of `family`; every ModuleFamily has one.
const ModuleFamilyRow& ModuleFamilyRowFor(ModuleFamily family);

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_MODULE_FAMILIES_H_
