// The boxed fallback that sees every operator call on a counting thread.
//
// Semantics match FlopCounterMode's __torch_dispatch__:
//  - an overload with a CompositeImplicitAutograd kernel is passed on with the
//    key still active, so its decomposition comes back here op by op and the
//    composite itself is never counted;
//  - anything else runs with the key excluded, so the kernel's own internal
//    calls are invisible (nothing is counted twice), then is counted once.

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include <exception>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/dispatch_key.h"
#include "torchscan_dispatch/fallback_registration.h"
#include "torchscan_dispatch/operator_info.h"
#include "torchscan_dispatch/operator_values.h"
#include "torchscan_dispatch/thread_state.h"

namespace torchscan::dispatch {
namespace {

// A formula that throws is treated like one that returns an error: the
// operator call itself succeeded, so the workload gets its result, and the
// report names the failure instead of silently missing the call.
template <typename Formula>
absl::StatusOr<Count> Evaluate(const Formula& formula,
                               const formulas::OperatorCall& call) {
  try {
    return formula(call);
  } catch (const c10::Error& error) {
    return absl::InternalError(absl::StrCat("the FLOP formula threw: ",
                                            error.what_without_backtrace()));
  } catch (const std::exception& error) {
    return absl::InternalError(
        absl::StrCat("the FLOP formula threw: ", error.what()));
  }
}

// Runs the call and counts it with `formula`, which sees its arguments and
// results after the call, as FlopCounterMode's formulas do (so out= and
// resizing overloads are measured on their results).
template <typename Formula>
void RunAndCountWith(const OperatorInfo& info, const c10::OperatorHandle& op,
                     c10::DispatchKeySet below, torch::jit::Stack* stack,
                     CountingSession& session, const Formula& formula,
                     std::uint32_t value_arguments) {
  // Holding the arguments costs reference-count bumps, not copies.
  std::vector<c10::IValue> arguments(stack->end() - info.num_arguments,
                                     stack->end());
  op.redispatchBoxed(below, stack);
  std::vector<formulas::OperatorValue> argument_values =
      ToOperatorValues(arguments);
  for (std::uint32_t bits = value_arguments; bits != 0; bits &= bits - 1) {
    const int index = __builtin_ctz(bits);
    if (index < static_cast<int>(arguments.size())) {
      ReadIntegerValues(arguments[index], argument_values[index]);
    }
  }
  const std::vector<formulas::OperatorValue> result_values =
      ToOperatorValues(torch::jit::last(*stack, info.num_returns));
  absl::StatusOr<Count> flops =
      Evaluate(formula, formulas::OperatorCall{argument_values, result_values});
  if (flops.ok()) {
    session.RecordCounted(info, *flops);
  } else {
    session.RecordFailed(info, flops.status());
  }
}

// Runs the call and keeps its arguments and results (as meta tensors) for
// the caller to evaluate after the workload.
void RunAndDefer(const OperatorInfo& info, const c10::OperatorHandle& op,
                 c10::DispatchKeySet below, torch::jit::Stack* stack,
                 CountingSession& session) {
  std::vector<c10::IValue> arguments(stack->end() - info.num_arguments,
                                     stack->end());
  op.redispatchBoxed(below, stack);
  std::vector<c10::IValue> results;
  for (const c10::IValue& result : torch::jit::last(*stack, info.num_returns)) {
    results.push_back(ToMetaIValue(result));
  }
  for (c10::IValue& argument : arguments) argument = ToMetaIValue(argument);
  session.RecordDeferred(info, std::move(arguments), std::move(results));
}

void CountAndRun(const OperatorInfo& info, const c10::OperatorHandle& op,
                 c10::DispatchKeySet below, torch::jit::Stack* stack,
                 CountingSession& session, SessionSlot& thread_slot) {
  if (session.has_custom_formulas()) {
    if (const CustomFormula* custom = session.CustomFormulaFor(info)) {
      RunAndCountWith(info, op, below, stack, session, *custom, 0);
      return;
    }
  }
  if (session.has_deferred() && session.IsDeferred(info)) {
    RunAndDefer(info, op, below, stack, session);
    return;
  }
  if (info.formula == nullptr) {
    op.redispatchBoxed(below, stack);
    session.RecordCall(info, thread_slot);
    return;
  }
  RunAndCountWith(info, op, below, stack, session, info.formula->formula,
                  info.formula->value_arguments);
}

void CountingFallback(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                      torch::jit::Stack* stack) {
  const c10::DispatchKeySet below =
      keys & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kCountingKey);
  ThreadState& thread = ThisThreadState();
  const OperatorInfo& info = OperatorInfoFor(op, thread.operators);
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
  CountAndRun(info, op, below, stack, *session, thread.session);
}

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
    } catch (const c10::Error& error) {
      library_.reset();
      status_ = absl::FailedPreconditionError(
          absl::StrCat("registering the counting fallback failed: ",
                       error.what_without_backtrace()));
    }
  }

  const absl::Status& status() const { return status_; }

 private:
  std::optional<torch::Library> library_;
  absl::Status status_;
};

const Registration registration;

}  // namespace

absl::Status CountingFallbackStatus() { return registration.status(); }

}  // namespace torchscan::dispatch
