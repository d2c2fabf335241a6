// A TorchScript module's forward graph in the form the one graph recovery
// reads (crawl/recover_from_graph.h).
//
// torch.jit.trace keeps a module's parameters and buffers but not its
// Python attributes: a traced Conv2d has no `stride` or `in_channels`. Its
// forward graph still holds the operator it ran, with the traced arguments
// as constants, and its parameters as the module's attributes (a
// `prim::GetAttr` of the module itself), whose sizes the module has. A
// scripted module keeps its attributes, which always take precedence
// (script_module_description.cc).

#ifndef TORCHSCAN_TORCHSCAN_SCRIPT_MODULE_GRAPH_H_
#define TORCHSCAN_TORCHSCAN_SCRIPT_MODULE_GRAPH_H_

#include <torch/csrc/jit/api/module.h>

#include <map>
#include <string>

#include "crawl/recover_from_graph.h"
#include "formulas/module_description.h"

namespace torchscan {

// The operators of `module`'s forward graph, nested blocks included, each
// argument a constant, a list of int constants, one of the module's own
// attributes (its tensors by their sizes), a tensor the graph computes, or
// an unknown value; and the module's defined parameters (its submodules'
// too) and buffers by their sizes.
crawl::ModuleGraph ScriptModuleGraph(const torch::jit::Module& module,
                                     formulas::ModuleFamily family);

// What the module's graph shows of the family's attributes, by torch's
// attribute names, as the description holds them: plain values as a
// scripted module stores them (ints, lists of ints, a padding string,
// bools, floats, or None where None is the value), a tensor attribute as
// its numel or whether it is set (a traced module keeps no None tensor).
// An attribute the graph does not show is absent.
std::map<std::string, c10::IValue> RecoverScriptAttributes(
    const torch::jit::Module& module, formulas::ModuleFamily family);

}  // namespace torchscan

#endif  // TORCHSCAN_TORCHSCAN_SCRIPT_MODULE_GRAPH_H_
