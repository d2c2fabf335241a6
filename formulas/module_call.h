// What a module formula knows about one call: the values passed and returned,
// reduced to the metadata the crawler already records (TorchScan 0.2's
// "describe" rules: tensors by shape, None, tuples, lists, mappings, scalars,
// other objects).
//
// Formulas read more than tensors: TorchScan's MultiheadAttention formula
// tests whether the masks at positions 3 and 5 are None, and a formula handed
// a None or an int where it expects a tensor raises the Python error we must
// reproduce ("'NoneType' object has no attribute 'numel'"). So a call keeps
// every ordered input and the whole output, and the first input and output
// tensors are found here with the crawler's depth-first search.

#ifndef TORCHSCAN_FORMULAS_MODULE_CALL_H_
#define TORCHSCAN_FORMULAS_MODULE_CALL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "formulas/module_description.h"
#include "report/field_table.h"
#include "report/value_metadata.h"

namespace torchscan::formulas {

using Dims = std::vector<std::int64_t>;

// One Python value.
struct CallValue {
  enum class Kind {
    kTensor,  // `shape`
    kNone,
    kTuple,    // `items`; namedtuples and torch.Size are tuples too
    kList,     // `items`
    kMapping,  // `items` holds the values in iteration order; `type` the class
    kScalar,   // bool, int, float, complex, str, bytes; `type` the class
    kObject,   // anything else; `type` its qualified class name
  };
  Kind kind = Kind::kNone;
  Dims shape;
  // The class name as the crawler's metadata gives it. Optional for tuples
  // and lists (then "tuple" / "list"); used in Python error messages.
  std::string type;
  std::vector<CallValue> items;

  static CallValue Tensor(Dims shape);
  static CallValue None();
  static CallValue Tuple(std::vector<CallValue> items);
  static CallValue List(std::vector<CallValue> items);
  static CallValue Mapping(std::string type, std::vector<CallValue> values);
  static CallValue Scalar(std::string type);
  static CallValue Object(std::string type);

  bool is_tensor() const { return kind == Kind::kTensor; }
  bool is_none() const { return kind == Kind::kNone; }

  bool operator==(const CallValue&) const = default;
};

// The value a formula sees of one the crawler described: tensors keep their
// shape, containers their items (a mapping its values), scalars and objects
// their class. A pending value (never part of a finished call) reads as None.
CallValue CallValueOf(const report::ValueMetadata& value);

// The name Python prints for the value's class in "'<name>' object has no
// attribute ..." (type(x).__name__ for classes defined in Python).
std::string PythonTypeName(const CallValue& value);

// The crawler's first-tensor search: a tensor is itself; tuples, lists and
// mappings are searched item by item, depth first. nullptr when none.
const CallValue* FirstTensor(const CallValue& value);
const CallValue* FirstTensor(absl::Span<const CallValue> values);

// One module call as the formulas see it.
struct ModuleCall {
  // The call's arguments in forward-signature order with defaults filled in
  // (TorchScan 0.2's argument ordering), e.g. MultiheadAttention(q, k, v) gives
  // (q, k, v, None, True, None, True, False).
  std::vector<CallValue> inputs;
  // The whole returned value.
  CallValue output;

  bool operator==(const ModuleCall&) const = default;
  // {"inputs": [value, ...], "output": value}; a value's JSON form is
  // module_json.h's JsonCodec<CallValue>, which reading and writing need.
  static constexpr auto kFields =
      std::make_tuple(report::Field("inputs", &ModuleCall::inputs),
                      report::Field("output", &ModuleCall::output));
};

// A metric-leaf call as a front end captured it (TorchScan 0.2's post-call
// record, 4.6): what module_metrics.h evaluates.
struct CapturedModuleCall {
  // Full dotted module path; "" for the root.
  std::string path;
  ModuleDescription module;
  ModuleCall call;

  bool operator==(const CapturedModuleCall&) const = default;
  // {"path": "features.0", "module": {...}, "call": {...}}; the module's
  // JSON form is module_json.h's JsonCodec<ModuleDescription>.
  static constexpr auto kFields =
      std::make_tuple(report::Field("path", &CapturedModuleCall::path),
                      report::Field("module", &CapturedModuleCall::module),
                      report::Field("call", &CapturedModuleCall::call));
};

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_MODULE_CALL_H_
