// The counting fallback, for the unboxed kernels (unboxed_kernels.h) that
// stand in front of it for a few hot operators: they hand it every call they
// do not count themselves, and take its tests from here.

#ifndef TORCHSCAN_DISPATCH_COUNTING_FALLBACK_H_
#define TORCHSCAN_DISPATCH_COUNTING_FALLBACK_H_

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/DispatchKeySet.h>

#include "torchscan_dispatch/thread_state.h"

namespace torchscan::dispatch {

// The boxed fallback registered on the counting key (counting_fallback.cc).
void CountingFallback(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                      torch::jit::Stack* stack);

// Whether the fallback would count a call with dispatch keys `keys` on a
// thread in `state` directly (excluded key, the kernel run below it, then
// recorded) as far as the keys and the thread say: no functorch layer or
// legacy batching, no Python key (no subclass argument, no dispatch mode, so
// no tracing), not compiling, not inside a compiled graph, not inside the
// primal computation of a forward-AD call. The arguments' own tests (nested
// tensors, forward-AD tangents, attention masks) and the operator's
// (decomposes, formula) are the caller's.
bool CountsDirectlyByKeys(c10::DispatchKeySet keys,
                          const ExecutionState& state);

// Whether `tensor` carries a forward-mode AD tangent (NOTE [Forward-mode AD]
// in counting_fallback.cc).
bool HasForwardGrad(const at::Tensor& tensor);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_COUNTING_FALLBACK_H_
