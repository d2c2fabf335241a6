#include "torchscan_dispatch/hidden_region.h"

#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>

#include <memory>
#include <vector>

#include "torchscan_dispatch/call_log.h"
#include "torchscan_dispatch/call_recording.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/dispatch_key.h"
#include "torchscan_dispatch/operator_info.h"
#include "torchscan_dispatch/operator_values.h"
#include "torchscan_dispatch/thread_state.h"

namespace torchscan::dispatch {
namespace {

// One call the observer counts, from its start to its end. The arguments
// are kept (reference-count bumps) because a RecordFunction's inputs are
// only valid during the start callback: an unboxed call boxes them into a
// temporary that is gone by the time the call ends.
struct ObservedCall : at::ObserverContext {
  ObservedCall(const OperatorInfo& info, CountingSession& session,
               c10::ArrayRef<c10::IValue> inputs)
      : info(info), session(session), arguments(inputs.vec()) {}
  const OperatorInfo& info;
  CountingSession& session;
  std::vector<c10::IValue> arguments;
};

bool KeyIsActive() {
  return c10::impl::tls_is_dispatch_key_included(kCountingKey) &&
         !c10::impl::tls_is_dispatch_key_excluded(kCountingKey);
}

bool Included(c10::DispatchKey key) {
  return c10::impl::tls_is_dispatch_key_included(key) &&
         !c10::impl::tls_is_dispatch_key_excluded(key);
}

// The fallback's rules, read from the thread-local key sets (a
// RecordFunction does not carry the call's key set), with one difference:
// under any of PyTorch's infrastructure modes nothing is counted. Inside a
// hidden region a fake mode is the subclass's own shape inference (DTensor's
// sharding propagation runs operators on fake tensors) or compilation, never
// the workload's work.
bool Transparent(const OperatorInfo& info, const at::RecordFunction& fn) {
  using c10::impl::TorchDispatchModeKey;
  using c10::impl::TorchDispatchModeTLS;
  if (info.decomposes ||
      Included(c10::DispatchKey::FuncTorchDynamicLayerFrontMode) ||
      Included(c10::DispatchKey::FuncTorchDynamicLayerBackMode)) {
    return true;
  }
  if (TorchDispatchModeTLS::any_modes_set() &&
      (TorchDispatchModeTLS::get_mode(TorchDispatchModeKey::FAKE) ||
       TorchDispatchModeTLS::get_mode(TorchDispatchModeKey::PROXY) ||
       TorchDispatchModeTLS::get_mode(TorchDispatchModeKey::FUNCTIONAL))) {
    return true;
  }
  // A legacy vmap BatchedTensor (NOTE [Legacy vmap] in counting_fallback.cc):
  // the batching rule's physical calls are the ones to count.
  return AnyTensorIn(fn.inputs(), [](const at::Tensor& tensor) {
    const c10::DispatchKeySet keys = tensor.key_set();
    return keys.has(c10::DispatchKey::Python) ||
           keys.has(c10::DispatchKey::Batched);
  });
}

std::unique_ptr<at::ObserverContext> OnCallStart(const at::RecordFunction& fn) {
  ThreadState& thread = ThisThreadState();
  const ExecutionState& state = thread.execution;
  if (state.observed_depth > 0 || state.kernel_depth > 0 ||
      state.compiled_graph_depth > 0 || state.compiling_depth > 0 ||
      KeyIsActive()) {
    return nullptr;
  }
  CountingSession* session = CountingSession::Current();
  if (session == nullptr) return nullptr;
  const OperatorInfo* info =
      OperatorInfoForRecordFunction(fn, thread.observed_operators);
  if (info == nullptr || Transparent(*info, fn)) return nullptr;
  ++thread.execution.observed_depth;
  return std::make_unique<ObservedCall>(*info, *session, fn.inputs());
}

void OnCallEnd(const at::RecordFunction& fn, at::ObserverContext* context) {
  if (context == nullptr) return;
  --ThisThreadState().execution.observed_depth;
  const auto& call = *static_cast<const ObservedCall*>(context);
  // A call that threw has no outputs; like FlopCounterMode, it is not
  // counted (the exception reaches the workload unchanged).
  if (call.info.num_returns > 0 && fn.outputs().empty()) return;
  if (CountingSession::Current() != &call.session) return;

  // NOTE [Calls recorded as their RecordFunction ends] in call_log.h.
  FinishingRecordFunction finishing(fn.handle(), fn.name());
  RecordFinishedCall(call.info, call.arguments, fn.outputs(), call.session);
}

}  // namespace

void EnterHiddenRegion() {
  ExecutionState& state = ThisThreadState().execution;
  if (state.hidden_depth++ > 0) return;
  state.observer_handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&OnCallStart, &OnCallEnd)
          .needsInputs(true)
          .needsOutputs(true)
          .scopes({at::RecordScope::FUNCTION}));
}

void ExitHiddenRegion() {
  ExecutionState& state = ThisThreadState().execution;
  if (state.hidden_depth == 0 || --state.hidden_depth > 0) return;
  at::removeCallback(state.observer_handle);
  state.observer_handle = 0;
}

HiddenRegion::HiddenRegion() { EnterHiddenRegion(); }
HiddenRegion::~HiddenRegion() { ExitHiddenRegion(); }

}  // namespace torchscan::dispatch
