// The boxed fallback that sees every operator call on a counting thread.
//
// Semantics match FlopCounterMode's __torch_dispatch__, which sits at the
// Python key, below autograd and below every functorch transform:
//  - an overload with a CompositeImplicitAutograd kernel is passed on with the
//    key still active, so its decomposition comes back here op by op and the
//    composite itself is never counted;
//  - so is a call made at the logical level of a functorch transform (vmap,
//    grad, jvp, ...) or of the legacy vmap (torch.autograd.functional's
//    vectorize=True): the transform's physical calls come back here;
//  - a call on a tensor subclass with __torch_dispatch__ is passed on, and the
//    dense calls the subclass makes are counted where our key cannot see them
//    (hidden_region.h);
//  - anything else runs with the key excluded, so the kernel's own internal
//    calls are invisible (nothing is counted twice), then is counted once.
// docs/design.md ("Execution paths") has the whole matrix and its tests.

#include "torchscan_dispatch/counting_fallback.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <torch/csrc/autograd/forward_grad.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/library.h>

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "torchscan_dispatch/attention_masks.h"
#include "torchscan_dispatch/call_bytes.h"
#include "torchscan_dispatch/call_recording.h"
#include "torchscan_dispatch/compute_precision.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/dispatch_key.h"
#include "torchscan_dispatch/fallback_registration.h"
#include "torchscan_dispatch/hidden_region.h"
#include "torchscan_dispatch/nested_products.h"
#include "torchscan_dispatch/operator_info.h"
#include "torchscan_dispatch/operator_values.h"
#include "torchscan_dispatch/thread_state.h"
#include "torchscan_dispatch/unboxed_kernels.h"

namespace torchscan::dispatch {
namespace {

// NOTE [functorch transforms]
// Our key is above FuncTorchDynamicLayerFrontMode. A transformed call reaches
// us first at the logical level (BatchedTensor or GradWrapper arguments with
// per-example shapes). Each transform's interpreter then works on its level
// and hands the call to the next one below: DynamicLayerBackMode restores the
// thread-local key sets saved at DynamicLayerFrontMode, pops the layer and
// dispatches again from the top. Once the last layer is popped the front and
// back keys leave the included set, and the call that comes back is the
// physical one FlopCounterMode sees at the Python key. So: pass every call
// made while a layer is on the stack, with the key still active, and count
// the physical call when it returns with the stack empty. Tangent and
// backward computations a transform makes come back the same way.
bool InsideFunctorchTransform(c10::DispatchKeySet keys) {
  return keys.has(c10::DispatchKey::FuncTorchDynamicLayerFrontMode) ||
         keys.has(c10::DispatchKey::FuncTorchDynamicLayerBackMode);
}

// NOTE [Legacy vmap]
// torch.autograd.functional's jacobian and hessian with vectorize=True and
// autograd.grad(is_grads_batched=True) batch with the legacy vmap of
// torch._vmap_internals, not with functorch: its BatchedTensors carry the
// Batched key and no dynamic layer is pushed, so the rule above does not
// apply. The Batched kernel (a batching rule, or the for-loop fallback) is
// below our key and calls the physical operators through the dispatcher.
// Run with the key excluded, those calls were invisible, and the logical call
// was counted on per-example shapes: a silent undercount (the backward `mm`
// of a jacobian over 16 outputs counted once, not 16 times). FlopCounterMode
// sits below Batched and counts the physical calls. So a call with a legacy
// BatchedTensor argument is passed on uncounted with the key still active,
// and the physical calls come back here to be counted.
bool HasLegacyBatchedArgument(c10::DispatchKeySet keys) {
  return keys.has(c10::DispatchKey::Batched);
}

// NOTE [What PyTorch runs while it compiles]
// Dynamo's fake-tensor propagation, AOTAutograd's joint tracing, lazy
// backward compilation and max-autotune's benchmarks all run operators, none
// of which is the workload's work. torch.compile's own calls are hidden from
// the key (compiled_region.h); compilation the autograd engine starts
// (a lazily compiled backward) is flagged by the Python package
// (compiling_depth), and proxy or functional tracing modes mark tracing that
// torch.export and make_fx do. A user's own FakeTensorMode is not tracing:
// FlopCounterMode counts fake tensors, and so do we.
// Any dispatch mode puts the Python key in the thread's included set, so the
// mode lookups (which copy a shared_ptr) happen only when it is there.
bool PyTorchIsTracing(c10::DispatchKeySet keys, const ExecutionState& state) {
  using c10::impl::TorchDispatchModeKey;
  using c10::impl::TorchDispatchModeTLS;
  if (state.compiling_depth > 0) return true;
  return keys.has(c10::DispatchKey::Python) &&
         (TorchDispatchModeTLS::get_mode(TorchDispatchModeKey::PROXY) ||
          TorchDispatchModeTLS::get_mode(TorchDispatchModeKey::FUNCTIONAL));
}

// NOTE [Tensor subclasses]
// The Python key's fallback excludes every key above Python while a
// subclass's __torch_dispatch__ runs, so the dense calls a nested jagged
// tensor or a DTensor makes never reach us, and the outer call's shapes
// (nested ints, global DTensor shapes) are not what runs. The outer call is
// passed on uncounted inside a hidden region, whose observer counts the dense
// calls. Fake tensors are the exception: under a FakeTensorMode the outer
// call is the one FlopCounterMode counts, with the shapes it would have.
bool HasSubclassArgument(c10::DispatchKeySet keys,
                         const torch::jit::Stack& stack,
                         std::size_t num_arguments) {
  if (!keys.has(c10::DispatchKey::Python)) return false;
  if (c10::impl::TorchDispatchModeTLS::get_mode(
          c10::impl::TorchDispatchModeKey::FAKE)) {
    return false;
  }
  return AnyTensorArgument(stack, num_arguments, [](const at::Tensor& tensor) {
    return tensor.key_set().has(c10::DispatchKey::Python);
  });
}

// NOTE [Forward-mode AD]
// Tangents are computed inside the autograd kernel, which calls operators
// through the full dispatcher; FlopCounterMode sees them. Such a call is
// therefore passed on with the key still active (and counted itself after
// it returns). The kernel's primal computation runs below autograd, with the
// autograd keys excluded from the thread-local set: calls arriving in that
// state while a forward-AD call is open are that kernel's internals and are
// not counted.
bool InsidePrimalOfForwardAdCall(const ExecutionState& state) {
  return state.forward_ad_depth > 0 &&
         c10::impl::tls_is_dispatch_key_excluded(
             c10::DispatchKey::AutogradFunctionality);
}

}  // namespace

bool HasForwardGrad(const at::Tensor& tensor) {
  const torch::autograd::AutogradMeta* meta =
      torch::autograd::impl::get_autograd_meta(tensor);
  return meta != nullptr && meta->fw_grad_ != nullptr &&
         !meta->fw_grad_->empty();
}

bool CountsDirectlyByKeys(c10::DispatchKeySet keys,
                          const ExecutionState& state) {
  return !InsideFunctorchTransform(keys) && !HasLegacyBatchedArgument(keys) &&
         !keys.has(c10::DispatchKey::Python) && state.compiling_depth == 0 &&
         state.compiled_graph_depth == 0 && !InsidePrimalOfForwardAdCall(state);
}

namespace {

// Runs the call and counts it. Arguments a formula reads are reduced before
// the call when nothing can change them (NOTE [The counted path] in
// call_recording.h), else held (reference-count bumps, not copies) for after
// it. The bytes its arguments move are read before the call, by reference,
// and its results' after (call_bytes.h): every counted call has them.
void RunAndCountCall(const OperatorInfo& info, const c10::OperatorHandle& op,
                     c10::DispatchKeySet below, torch::jit::Stack* stack,
                     CountingSession& session, SessionSlot& thread_slot) {
  if (!RecordingReadsValues(info, session)) {
    CallBytes bytes =
        ArgumentBytesOf(info, torch::jit::last(*stack, info.num_arguments));
    op.redispatchBoxed(below, stack);
    AddResultBytes(info, torch::jit::last(*stack, info.num_returns), bytes);
    session.RecordCall(info, thread_slot, bytes);
    return;
  }
  if (ReadsArgumentsBeforeCall(info, session)) {
    const c10::ArrayRef<c10::IValue> inputs =
        torch::jit::last(*stack, info.num_arguments);
    const OperatorValues arguments = ToOperatorValues(inputs);
    const Precision precision = ComputePrecision(info, inputs);
    CallBytes bytes = ArgumentBytesOf(info, inputs);
    op.redispatchBoxed(below, stack);
    const c10::ArrayRef<c10::IValue> results =
        torch::jit::last(*stack, info.num_returns);
    AddResultBytes(info, results, bytes);
    RecordFormulaCall(info, arguments, results, precision, bytes, session,
                      thread_slot);
    return;
  }
  std::vector<c10::IValue> arguments(stack->end() - info.num_arguments,
                                     stack->end());
  op.redispatchBoxed(below, stack);
  RecordFinishedCall(info, arguments,
                     torch::jit::last(*stack, info.num_returns), session);
}

// NOTE [Masked attention calls]
// An attention call with is_causal or a mask also records the FLOPs its mask
// does not allow (attention_masks.h). Its arguments are held for after the
// call; calls without a mask pay the test of two arguments, and every other
// operator one flag test.
void RunAndCount(const OperatorInfo& info, const c10::OperatorHandle& op,
                 c10::DispatchKeySet below, torch::jit::Stack* stack,
                 CountingSession& session, SessionSlot& thread_slot) {
  if (!info.attention_mask.has_value() ||
      !AttentionCallIsMasked(*info.attention_mask,
                             torch::jit::last(*stack, info.num_arguments))) {
    RunAndCountCall(info, op, below, stack, session, thread_slot);
    return;
  }
  const std::vector<c10::IValue> arguments(stack->end() - info.num_arguments,
                                           stack->end());
  RunAndCountCall(info, op, below, stack, session, thread_slot);
  RecordAttentionMask(info, arguments,
                      torch::jit::last(*stack, info.num_returns), session);
}

void RunUncounted(const c10::OperatorHandle& op, c10::DispatchKeySet below,
                  torch::jit::Stack* stack, ExecutionState& state) {
  c10::impl::ExcludeDispatchKeyGuard exclude(kCountingKey);
  DepthGuard kernel(state.kernel_depth);
  op.redispatchBoxed(below, stack);
}

}  // namespace

void CountingFallback(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                      torch::jit::Stack* stack) {
  const c10::DispatchKeySet below =
      keys & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kCountingKey);
  ThreadState& thread = ThisThreadState();
  const OperatorInfo& info = OperatorInfoFor(op, thread.operators);
  if (InsideFunctorchTransform(keys) || HasLegacyBatchedArgument(keys)) {
    op.redispatchBoxed(below, stack);
    return;
  }
  ExecutionState& state = thread.execution;
  CountingSession* session = CountingSession::Current();
  // Inside a compiled graph the graph's tally counts (compiled_graph_tally.h):
  // its extern kernels must not be counted again.
  const bool counting = session != nullptr && state.compiled_graph_depth == 0 &&
                        !PyTorchIsTracing(keys, state);
  // Before the composite test: a subclass may take a composite operator at
  // the Python key (nested jagged tensors take aten.matmul there).
  if (counting && HasSubclassArgument(keys, *stack, info.num_arguments)) {
    HiddenRegion region;
    op.redispatchBoxed(below, stack);
    return;
  }
  // Products of strided nested tensors pad them: passed on with the key
  // active, their padding left out of the mask-aware count.
  if (counting && info.pads_nested &&
      IsNestedProductCall(info, torch::jit::last(*stack, info.num_arguments))) {
    RunNestedProduct(info, op, below, stack, *session);
    return;
  }
  if (info.decomposes) {
    if (counting && info.attention_mask.has_value()) {
      RecordDecomposedAttention(
          info, torch::jit::last(*stack, info.num_arguments), *session);
    }
    op.redispatchBoxed(below, stack);
    return;
  }
  if (!counting || InsidePrimalOfForwardAdCall(state)) {
    RunUncounted(op, below, stack, state);
    return;
  }
  if (AnyTensorArgument(*stack, info.num_arguments, HasForwardGrad)) {
    DepthGuard forward_ad(state.forward_ad_depth);
    RunAndCount(info, op, below, stack, *session, thread.session);
    return;
  }
  c10::impl::ExcludeDispatchKeyGuard exclude(kCountingKey);
  DepthGuard kernel(state.kernel_depth);
  RunAndCount(info, op, below, stack, *session, thread.session);
}

namespace {

class Registration {
 public:
  Registration() {
    c10::Dispatcher& dispatcher = c10::Dispatcher::singleton();
    if (dispatcher.hasBackendFallbackForDispatchKey(kCountingKey)) {
      status_ = absl::FailedPreconditionError(absl::StrCat(
          "another library already registered a fallback on dispatch key ",
          c10::toString(kCountingKey),
          " (a second copy of TorchScan Dispatch, or another tool using that "
          "key); operator counting is unavailable in this process"));
      return;
    }
    try {
      library_.emplace(torch::Library::IMPL, "_", kCountingKey, __FILE__,
                       __LINE__);
      library_->fallback(
          torch::CppFunction::makeFromBoxedFunction<&CountingFallback>());
      aten_.emplace(torch::Library::IMPL, "aten", kCountingKey, __FILE__,
                    __LINE__);
      RegisterUnboxedKernels(*aten_);
    } catch (const c10::Error& error) {
      aten_.reset();
      library_.reset();
      status_ = absl::FailedPreconditionError(
          absl::StrCat("registering the counting fallback failed: ",
                       error.what_without_backtrace()));
    }
  }

  const absl::Status& status() const { return status_; }

 private:
  std::optional<torch::Library> library_;
  // The unboxed kernels of the hot operators (unboxed_kernels.h).
  std::optional<torch::Library> aten_;
  absl::Status status_;
};

const Registration registration;

}  // namespace

absl::Status CountingFallbackStatus() { return registration.status(); }

}  // namespace torchscan::dispatch
