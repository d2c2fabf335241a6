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

#ifndef TORCHSCAN_FORMULAS_MODULE_JSON_H_
#define TORCHSCAN_FORMULAS_MODULE_JSON_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "formulas/module_call.h"
#include "formulas/module_description.h"
#include "report/json_io.h"

namespace torchscan::formulas {

// `field` is the node's path in error messages.
absl::StatusOr<ModuleDescription> ModuleDescriptionFromJson(
    const report::Json& node, absl::string_view field = "module");
absl::StatusOr<CallValue> CallValueFromJson(const report::Json& node,
                                            absl::string_view field);
// {"inputs": [value, ...], "output": value}
absl::StatusOr<ModuleCall> ModuleCallFromJson(const report::Json& node,
                                              absl::string_view field = "call");
// {"path": "features.0", "module": {...}, "call": {...}}
absl::StatusOr<CapturedModuleCall> CapturedModuleCallFromJson(
    const report::Json& node, absl::string_view field = "captured_call");

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_MODULE_JSON_H_
