// The module family table: one row per ModuleFamily with everything the
// family means to the formulas: the torch class upstream's isinstance check
// names, the module attributes its hyper-parameters are read from (by a
// front end holding the live module: python/operators/module_attributes.h),
// how they are read from a description's JSON, and its TorchScan 0.2 FLOPs,
// MACs, DMAs and receptive field formulas (each the small function of
// module_family_formulas.h).
//
// Adding a family is its enum value and JSON name (module_description.h/.cc)
// plus one row in module_families.cc. Everything else looks the row up:
// ModuleFlops, ModuleMacs, ModuleDmas, ModuleReceptiveField, a description's
// JSON codec (module_json.h), the crawl's native module description
// (python/operators/module_attributes.h), the TorchScript front end
// (torchscan/script_module_description.h), Python's describe_module and the
// graph recovery (an activation's `inplace`: crawl/recover_from_graph.h). A
// family with new hyper-parameters also declares their struct
// (module_description.h), its formulas (module_family_formulas.h) and, for
// modules that keep no attributes, its reader in crawl/recover_from_graph.cc;
// one whose hyper-parameters are no module attributes (kTransformer) needs
// its front ends' own code.

#ifndef TORCHSCAN_FORMULAS_MODULE_FAMILIES_H_
#define TORCHSCAN_FORMULAS_MODULE_FAMILIES_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "formulas/exact_count.h"
#include "formulas/module_call.h"
#include "formulas/module_description.h"
#include "formulas/module_formulas.h"
#include "formulas/python_semantics.h"
#include "report/json_reader.h"

namespace torchscan::formulas {

// What a formula may read of one call (module_formulas.h says which formula
// reads which value).
struct FormulaArgs {
  const ModuleDescription& module;  // validated: params match the family
  const python::PyTuple& inputs;    // the ordered inputs as a Python tuple
  const CallValue& inp;             // the first input tensor, or None
  const CallValue& out;             // the first output tensor, or None
  const CallValue& output;          // the whole output
};

using ParamsReader =
    absl::StatusOr<ModuleParams> (*)(const report::JsonObject& object);
using CountFormula = python::Py<ExactCount> (*)(const FormulaArgs& args);
using FieldFormula = python::Py<ReceptiveField> (*)(const FormulaArgs& args);

// How one hyper-parameter is read from the module's attribute of the same
// name, as Python's describe_module (python/torchscan_dispatch/_describe.py)
// reads it. A value of another type than the kind names is not converted:
// the front end leaves the module to describe_module, which has the last
// word (and raises where it raises).
enum class AttributeKind {
  kInt,             // an int, as stored: in_features, groups
  kTruth,           // bool(value) of a bool: inplace, training
  kIsNotNone,       // value is not None: Linear's bias (it must exist)
  kSetAndNotNone,   // getattr(module, name, None) is not None
  kNumber,          // float(value) of a float or an int
  kNumberOrNone,    // None, or float(value): BatchNorm's momentum
  kNumelOrNone,     // None, or a tensor's numel(): BatchNorm's buffers
  kHyper,           // an int or a tuple of ints, as stored (tuples: lists)
  kHyperOrString,   // the same, or a string: Conv's padding "same"
  kHyperIfPresent,  // kHyper, or unset when there is no such attribute
  kIntTuple,        // a tuple of ints, as a list: normalized_shape
  kLinear,          // a submodule, read by the Linear row's attributes
};

// One attribute's value, the alternative AlternativeOf(kind) names.
using AttributeValue =
    std::variant<std::int64_t, bool, double, std::optional<double>,
                 std::optional<std::int64_t>, HyperParameter,
                 std::optional<HyperParameter>, std::vector<std::int64_t>,
                 LinearParams>;

constexpr std::size_t AlternativeOf(AttributeKind kind) {
  switch (kind) {
    case AttributeKind::kInt:
      return 0;
    case AttributeKind::kTruth:
    case AttributeKind::kIsNotNone:
    case AttributeKind::kSetAndNotNone:
      return 1;
    case AttributeKind::kNumber:
      return 2;
    case AttributeKind::kNumberOrNone:
      return 3;
    case AttributeKind::kNumelOrNone:
      return 4;
    case AttributeKind::kHyper:
    case AttributeKind::kHyperOrString:
      return 5;
    case AttributeKind::kHyperIfPresent:
      return 6;
    case AttributeKind::kIntTuple:
      return 7;
    case AttributeKind::kLinear:
      return 8;
  }
  return 0;
}

// One hyper-parameter of a family: the module attribute it is read from and
// where it goes in the family's params.
struct ModuleAttribute {
  const char* name = nullptr;  // torch's attribute name; nullptr ends a list
  AttributeKind kind = AttributeKind::kInt;
  // The key the value is written under in a description's JSON: the
  // member's in its params' field table ("running_mean_numel" for
  // BatchNorm's "running_mean").
  const char* key = nullptr;
  // Stores a value of the kind's alternative in `params`, which it first
  // makes the family's alternative when they hold another.
  void (*store)(ModuleParams& params, AttributeValue value) = nullptr;
};

inline constexpr std::size_t kMaxModuleAttributes = 12;
inline constexpr std::size_t kMaxScriptClasses = 4;
inline constexpr std::size_t kMaxActivationOperators = 2;

struct ModuleFamilyRow {
  ModuleFamily family;
  // The class upstream's isinstance check names, by qualified name
  // ("torch.nn.modules.conv._ConvNd"); the rows are in upstream's check
  // order. nullptr for kUnsupported.
  const char* torch_class = nullptr;
  // NOTE [TorchScript keeps no base classes]
  // A scripted module's type names its own class only, so a TorchScript
  // front end cannot run upstream's isinstance check. It matches the class
  // by name: torch_class itself, or one of these concrete subclasses of it
  // (nullptr ends the list). Only rows DescribedByAttributes are matched:
  // the attributes are all a script module offers.
  std::array<const char*, kMaxScriptClasses> script_classes = {};
  // nullptr: the family has no hyper-parameters (std::monostate).
  ParamsReader read_params;
  // The attributes read_params' members come from. A family that has
  // hyper-parameters and declares none here (kTransformer: whole encoder and
  // decoder stacks) is described by the front end's own code.
  std::array<ModuleAttribute, kMaxModuleAttributes> attributes = {};
  // An activation's operators ("aten::relu"; nullptr ends the list). A
  // traced or exported module keeps no `inplace` attribute; the graph
  // recoveries read it from which operator the call ran: the `_` variant
  // (aten::relu_) means inplace.
  std::array<const char*, kMaxActivationOperators> activation_operators = {};
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

// Every row, in the enum's order (upstream's isinstance order), kUnsupported
// first.
absl::Span<const ModuleFamilyRow> ModuleFamilyRows();

// A row's list without its unused tail: the entries before the first
// nullptr name (attributes, script_classes, activation_operators).
constexpr const char* ListedName(const char* name) { return name; }
constexpr const char* ListedName(const ModuleAttribute& attribute) {
  return attribute.name;
}
template <typename T, std::size_t N>
constexpr absl::Span<const T> Listed(const std::array<T, N>& list) {
  std::size_t size = 0;
  while (size < N && ListedName(list[size]) != nullptr) ++size;
  return absl::Span<const T>(list.data(), size);
}

// True when the row's attributes give all of its family's hyper-parameters
// (a family without any included).
constexpr bool DescribedByAttributes(const ModuleFamilyRow& row) {
  return row.read_params == nullptr || row.attributes[0].name != nullptr;
}

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_MODULE_FAMILIES_H_
