// Records one finished operator call in a counting session, the same way
// whichever mechanism saw it: the counting fallback (the usual path) or the
// hidden-region observer (calls the key cannot see).

#ifndef TORCHSCAN_DISPATCH_CALL_RECORDING_H_
#define TORCHSCAN_DISPATCH_CALL_RECORDING_H_

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/ArrayRef.h>

#include "absl/types/span.h"
#include "formulas/operator_call.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/dispatch_key.h"
#include "torchscan_dispatch/operator_info.h"

namespace torchscan::dispatch {

// NOTE [Reading values without being counted]
// Reading a tensor's contents, or making meta tensors for a deferred formula
// (copies of a call's tensors, or a compiled graph's described ones), runs
// tensor operators. They are our work, not the workload's: neither the
// counting key nor a hidden-region observer may see them. Hold a NotCounted
// while running them.
struct NotCounted {
  c10::impl::ExcludeDispatchKeyGuard exclude{kCountingKey};
  at::DisableRecordFunctionGuard no_observer;
};

// The formula that counts calls of `info` in `session`: its table formula,
// else, in a session counting elementwise work, its elementwise rule
// (OperatorInfo::elementwise), else nullptr.
const formulas::OperatorFormulaEntry* FormulaFor(
    const OperatorInfo& info, const CountingSession& session);

// Whether recording a call of `info` reads its arguments and results (a
// formula, a custom formula or a deferred one applies); if not,
// CountingSession::RecordCall records it by name alone, without touching
// them.
bool RecordingReadsValues(const OperatorInfo& info, CountingSession& session);

// NOTE [The counted path]
// Most counted calls are a table formula reading shapes (mm, addmm, bmm,
// convolution, SDPA). Keeping the arguments for after the call copied their
// IValues (a reference-count increment and decrement per tensor, atomics)
// into a heap vector, and reducing them made two more vectors. When the
// operator writes none of its arguments (OperatorInfo::writes_arguments is
// false), nothing can change their sizes during the call, so reading them
// before it gives the values FlopCounterMode reads after it: the fallback
// reduces them into inline storage on its own stack frame, runs the call,
// and records with the results still on the stack. Nothing is allocated and
// no reference count is touched. Calls whose formula needs argument values
// (value_arguments), custom, deferred and communication calls, and calls
// that write an argument keep RecordFinishedCall's path.

// Whether a call of `info` takes the counted path above: it has a table
// formula that reads only shapes and plain values, writes no argument, and
// the session has no custom or deferred formula for it.
bool ReadsArgumentsBeforeCall(const OperatorInfo& info,
                              CountingSession& session);

// Records a finished call that ReadsArgumentsBeforeCall: `arguments` were
// reduced, and its `precision` read (ComputePrecision), before the call;
// `results` are as returned. `slot` is this thread's
// ThisThreadState().session. Failures are recorded as RecordFinishedCall
// records them.
void RecordFormulaCall(const OperatorInfo& info,
                       absl::Span<const formulas::OperatorValue> arguments,
                       c10::ArrayRef<c10::IValue> results, Precision precision,
                       const CallBytes& bytes, CountingSession& session,
                       SessionSlot& slot);

// The same, with the results reduced too (an unboxed kernel reads them
// typed: unboxed_kernels.h).
void RecordFormulaCall(const OperatorInfo& info,
                       absl::Span<const formulas::OperatorValue> arguments,
                       absl::Span<const formulas::OperatorValue> results,
                       Precision precision, const CallBytes& bytes,
                       CountingSession& session, SessionSlot& slot);

// Records the finished call: the session's custom formula for the operator,
// else a deferred (caller-evaluated) record, else the formula table's
// formula, else the call by name. Arguments are in schema order, results as
// returned; shapes (and the compute precision) are read from them now, as
// FlopCounterMode reads them after the call, and so are the bytes it moved
// (call_bytes.h). A formula that fails or throws is
// recorded as a failed call: the call itself succeeded and the workload keeps
// its result.
void RecordFinishedCall(const OperatorInfo& info,
                        c10::ArrayRef<c10::IValue> arguments,
                        c10::ArrayRef<c10::IValue> results,
                        CountingSession& session);

// Records the communication volume of a finished collective call
// (info.is_communication()); the call itself is recorded separately.
void RecordCommunicationOf(const OperatorInfo& info,
                           c10::ArrayRef<c10::IValue> arguments,
                           CountingSession& session);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_CALL_RECORDING_H_
