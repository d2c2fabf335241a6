// JSON for module descriptions and calls, the form a Python front end sends.
//
// A description names the class, the family and the parameter count, then
// the family's hyper-parameters under torch's own attribute names:
//
//   {"type": "Conv2d", "family": "conv", "parameter_count": 224,
//    "in_channels": 3, "kernel_size": [3, 3], "stride": [1, 1],
//    "padding": [0, 0], "dilation": [1, 1], "groups": 1, "bias": true}
//
// Hyper-parameters keep Python's shapes: an int is a JSON integer, a tuple a
// JSON array, Conv padding "same" a string. Values of a call are the
// crawler's value metadata (TorchScan 0.2's "describe" rules):
//
//   {"inputs": [{"kind": "tensor", "shape": [1, 3, 32, 32], "dtype": ...},
//               {"kind": "none"}, {"kind": "scalar", "type": "bool"}],
//    "output": {"kind": "tensor", "shape": [1, 8, 30, 30], ...}}
//
// docs/modules.md lists every family's fields. Unknown fields are errors, so
// a front end that drifts from this contract fails loudly; every error names
// the field path ("module.out_proj.in_features: expected an integer, got
// string").
//
// The hyper-parameters, calls and captured calls declare their fields in
// field tables (module_description.h, module_call.h); a description and a
// value, whose keys depend on their family or kind, are read and written by
// the two codecs below, so every record here is read with report::FromJson:
//
//   TS_ASSIGN_OR_RETURN(ModuleDescription module,
//                       report::FromJson<ModuleDescription>(
//                           report::JsonValue(json, "module")));
//
// A description and a value refuse the keys nothing read after reading the
// rest ("module.negative_slope: is not a field of this object"), as do the
// objects nested in a description (module_description.h's
// UnreadKeysRefused); a call and a captured call refuse theirs first, as
// every field table does ("call.extra: unknown field").

#ifndef TORCHSCAN_FORMULAS_MODULE_JSON_H_
#define TORCHSCAN_FORMULAS_MODULE_JSON_H_

#include "absl/status/statusor.h"
#include "formulas/module_call.h"
#include "formulas/module_description.h"
#include "report/field_table.h"
#include "report/json_io.h"
#include "report/json_reader.h"

namespace torchscan::report {

// {"type": ..., "family": ..., "parameter_count": n, <the family's
// hyper-parameters>}: the family's params struct (its table's rows) in the
// description's own object. A description that is not valid
// (ValidateModuleDescription) is refused with the description's path.
template <>
struct JsonCodec<formulas::ModuleDescription> {
  static Json Write(const formulas::ModuleDescription& module);
  static absl::StatusOr<formulas::ModuleDescription> Read(
      const JsonValue& node);
};

// {"kind": "tensor", "shape": [...]} and the other kinds of the file
// comment. Tensor metadata the formulas do not read (dtype, device,
// requires_grad) is checked and dropped, and so are a mapping's keys:
// a mapping is written with "key_type": "object" and no key.
template <>
struct JsonCodec<formulas::CallValue> {
  static Json Write(const formulas::CallValue& value);
  static absl::StatusOr<formulas::CallValue> Read(const JsonValue& node);
};

}  // namespace torchscan::report

#endif  // TORCHSCAN_FORMULAS_MODULE_JSON_H_
