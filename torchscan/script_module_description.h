// Plain descriptions of TorchScript modules for the module formulas
// (formulas/module_description.h), read from the scripted module's class
// name, constants and attributes: what Python's describe_module gives the
// module it was scripted from.
//
// TorchScript keeps no Python class hierarchy, so the family is chosen by
// the exact torch.nn class name the family table lists (NOTE [TorchScript
// keeps no base classes] in formulas/module_families.h), and the
// hyper-parameters are the attributes its row declares; a user subclass of
// nn.Linear is "unsupported" here although Python's isinstance would accept
// it.

#ifndef TORCHSCAN_TORCHSCAN_SCRIPT_MODULE_DESCRIPTION_H_
#define TORCHSCAN_TORCHSCAN_SCRIPT_MODULE_DESCRIPTION_H_

#include <torch/csrc/jit/api/module.h>

#include "absl/status/statusor.h"
#include "formulas/module_description.h"

namespace torchscan {

// InvalidArgument, naming the attribute, when a torch.nn class lacks an
// attribute its family's formulas read or holds another kind of value there
// (a module scripted by another torch release).
absl::StatusOr<formulas::ModuleDescription> DescribeScriptModule(
    const torch::jit::Module& module);

}  // namespace torchscan

#endif  // TORCHSCAN_TORCHSCAN_SCRIPT_MODULE_DESCRIPTION_H_
