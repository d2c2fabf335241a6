// Backward module scopes from C++ gradient hooks.
//
// by_module follows PyTorch's ModuleTracker, which FlopCounterMode uses: a
// module is running in backward from the moment every gradient of its
// outputs is computed until every gradient of its inputs is, and nothing is
// running once the engine finishes. ModuleTracker learns those moments from
// `register_multi_grad_hook` on each module call's inputs and outputs, a
// Python function that costs about 11 us per module call. A watch is the
// same hook in C++: one tensor hook per tensor, sharing a counter per graph
// task that fires the scope change when the last expected gradient arrives,
// with the same rule for which gradients are expected (the engine will run
// the tensor's gradient function or accumulator in this graph task). Unlike
// register_multi_grad_hook, a watch owns no autograd node (NOTE [Watches own
// no autograd nodes] in gradient_watches.cc).
//
// NOTE [Why gradient hooks and not autograd nodes]
// Tying each autograd node to the module scope active when it was created,
// and looking up the engine's current node in backward, would need no
// per-module-call work at all, but it does not give FlopCounterMode's
// by_module: ModuleTracker keeps a module "running" until the gradients of
// all its inputs are computed, so when siblings share an input (query, key
// and value projections; a residual block's downsample) the first sibling's
// backward stays open while the others run and FlopCounterMode attributes
// their FLOPs to it as well. Creation scopes attribute them to their own
// module only. Parity with FlopCounterMode is the contract, so we replay
// ModuleTracker's events, at C++ cost.

#ifndef TORCHSCAN_PYTHON_OPERATORS_GRADIENT_WATCHES_H_
#define TORCHSCAN_PYTHON_OPERATORS_GRADIENT_WATCHES_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace torchscan::dispatch {

// When the gradients of all of `tensors` that the running backward computes
// are computed, adds `label` to (`entering`) or removes it from the module
// scope of measurement `handle`. Entering also resets the scope to empty
// when that backward finishes. Every tensor must require grad.
void WatchGradients(std::int64_t handle, const std::vector<at::Tensor>& tensors,
                    std::string label, bool entering);

// Ends the watches of measurement `handle`: their hooks are removed from the
// tensors still alive and do nothing if they still run.
void EndGradientWatches(std::int64_t handle);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_PYTHON_OPERATORS_GRADIENT_WATCHES_H_
