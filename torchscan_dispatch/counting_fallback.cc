// The boxed fallback that sees every operator call on a counting thread.
//
// Semantics match FlopCounterMode's __torch_dispatch__:
//  - an overload with a CompositeImplicitAutograd kernel is passed on with the
//    key still active, so its decomposition comes back here op by op and the
//    composite itself is never counted;
//  - anything else runs with the key excluded, so the kernel's own internal
//    calls are invisible (nothing is counted twice), then is counted once.

#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/dispatch_key.h"
#include "torchscan_dispatch/operator_info.h"
#include "torchscan_dispatch/operator_values.h"

namespace torchscan::dispatch {
namespace {

void CountAndRun(const OperatorInfo& info, const c10::OperatorHandle& op,
                 c10::DispatchKeySet below, torch::jit::Stack* stack,
                 CountingSession& session) {
  if (info.formula == nullptr) {
    op.redispatchBoxed(below, stack);
    session.RecordCall(info);
    return;
  }
  // Formulas read shapes after the call, as FlopCounterMode does, so out= and
  // resizing overloads are measured on their results. Holding the arguments
  // costs reference-count bumps, not copies.
  std::vector<c10::IValue> arguments(stack->end() - info.num_arguments,
                                     stack->end());
  op.redispatchBoxed(below, stack);
  const std::vector<formulas::OperatorValue> argument_values =
      ToOperatorValues(arguments);
  const std::vector<formulas::OperatorValue> result_values =
      ToOperatorValues(torch::jit::last(*stack, info.num_returns));
  absl::StatusOr<Count> flops =
      info.formula->formula(formulas::OperatorCall{argument_values, result_values});
  if (flops.ok()) {
    session.RecordCounted(info, *flops);
  } else {
    session.RecordFailed(info, flops.status());
  }
}

void CountingFallback(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                      torch::jit::Stack* stack) {
  const c10::DispatchKeySet below =
      keys & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kCountingKey);
  const OperatorInfo& info = OperatorInfoFor(op);
  if (info.decomposes) {
    op.redispatchBoxed(below, stack);
    return;
  }
  c10::impl::ExcludeDispatchKeyGuard exclude(kCountingKey);
  CountingSession* session = CountingSession::Current();
  if (session == nullptr) {
    op.redispatchBoxed(below, stack);
    return;
  }
  CountAndRun(info, op, below, stack, *session);
}

}  // namespace
}  // namespace torchscan::dispatch

TORCH_LIBRARY_IMPL(_, TESTING_ONLY_GenericMode, m) {
  static_assert(torchscan::dispatch::kCountingKey ==
                    c10::DispatchKey::TESTING_ONLY_GenericMode,
                "the registration key must be kCountingKey");
  m.fallback(torch::CppFunction::makeFromBoxedFunction<
             &torchscan::dispatch::CountingFallback>());
}
