// Recovering the hyper-parameters a TorchScript module does not keep.
//
// torch.jit.trace keeps a module's parameters and buffers but not its Python
// attributes: a traced Conv2d has no `stride` or `in_channels`. What the
// module did is still there. Its forward graph holds the operator it ran,
// with the traced arguments as constants (a Conv2d's stride, padding,
// dilation and groups are those of its aten::_convolution), and its weight's
// shape gives its channels and kernel. A scripted module keeps its
// attributes, which always take precedence.
//
// What neither shows stays missing: DescribeScriptModule then names the
// attribute, and the crawler reports an `unrecovered_module_attribute`
// diagnostic instead of the module's formulas (docs/cli.md).

#ifndef TORCHSCAN_TORCHSCAN_RECOVER_FROM_GRAPH_H_
#define TORCHSCAN_TORCHSCAN_RECOVER_FROM_GRAPH_H_

#include <torch/csrc/jit/api/module.h>

#include <map>
#include <string>

namespace torchscan {

// The attributes the module's parameter shapes and forward graph show, by
// the torch.nn attribute names, valued as a scripted module stores them
// (ints, lists of ints, a padding string, bools, floats). Family-agnostic:
// each family's reader takes only the names it reads.
std::map<std::string, c10::IValue> RecoverAttributes(
    const torch::jit::Module& module);

}  // namespace torchscan

#endif  // TORCHSCAN_TORCHSCAN_RECOVER_FROM_GRAPH_H_
