// Recovering the hyper-parameters a TorchScript module does not keep.
//
// torch.jit.trace keeps a module's parameters and buffers but not its Python
// attributes: a traced Conv2d has no `stride` or `in_channels`. What the
// module did is still there. Its forward graph holds the operator it ran,
// with the traced arguments as constants (a Conv2d's stride, padding,
// dilation and groups are those of its aten::_convolution), and its weight's
// shape gives its channels and kernel. A scripted module keeps its
// attributes; nothing is recovered for it.
//
// What neither shows stays null in the description, and the crawler turns
// the module's formulas into `unavailable` with an
// `unrecovered_module_attribute` diagnostic naming the module and the
// attribute (docs/report-schema.md).

#ifndef TORCHSCAN_TORCHSCAN_RECOVER_FROM_GRAPH_H_
#define TORCHSCAN_TORCHSCAN_RECOVER_FROM_GRAPH_H_

#include <torch/csrc/jit/api/module.h>

#include <string>
#include <vector>

#include "report/json_io.h"

namespace torchscan {

// Fills the null attributes of `description` (DescribeScriptModule's) from
// the module's parameter shapes and its forward graph's operators.
void RecoverFromForwardGraph(const torch::jit::Module& module,
                             report::Json& description);

// The attributes of a description that are null ("out_proj.in_features" for
// a nested one), in the description's order.
std::vector<std::string> MissingAttributes(const report::Json& description);

}  // namespace torchscan

#endif  // TORCHSCAN_TORCHSCAN_RECOVER_FROM_GRAPH_H_
