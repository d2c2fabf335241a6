// Plain descriptions of TorchScript modules for the module formulas
// (formulas/module_json.h), read from the scripted module's class name,
// constants and attributes: the same JSON Python's describe_module writes.
//
// TorchScript keeps no Python class hierarchy, so the family is chosen by
// the exact torch.nn class name; a user subclass of nn.Linear is
// "unsupported" here although Python's isinstance would accept it.

#ifndef TORCHSCAN_TORCHSCAN_SCRIPT_MODULE_DESCRIPTION_H_
#define TORCHSCAN_TORCHSCAN_SCRIPT_MODULE_DESCRIPTION_H_

#include <torch/csrc/jit/api/module.h>

#include <string>

#include "report/json_io.h"

namespace torchscan {

report::Json DescribeScriptModule(const torch::jit::Module& module);

// The formula family of a torch.nn class name ("torch.nn.modules.conv.Conv2d"
// -> "conv"); "unsupported" for anything else.
std::string ScriptModuleFamily(const std::string& demangled_class_name);

}  // namespace torchscan

#endif  // TORCHSCAN_TORCHSCAN_SCRIPT_MODULE_DESCRIPTION_H_
