// Records one finished operator call in a counting session, the same way
// whichever mechanism saw it: the counting fallback (the usual path) or the
// hidden-region observer (calls the key cannot see).

#ifndef TORCHSCAN_DISPATCH_CALL_RECORDING_H_
#define TORCHSCAN_DISPATCH_CALL_RECORDING_H_

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/ArrayRef.h>

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

// Whether recording a call of `info` reads its arguments and results (a
// formula, a custom formula or a deferred one applies); if not,
// CountingSession::RecordCall records it by name alone, without touching
// them.
bool RecordingReadsValues(const OperatorInfo& info, CountingSession& session);

// Records the finished call: the session's custom formula for the operator,
// else a deferred (caller-evaluated) record, else the formula table's
// formula, else the call by name. Arguments are in schema order, results as
// returned; shapes are read from them now, as FlopCounterMode reads them
// after the call. A formula that fails or throws is recorded as a failed
// call: the call itself succeeded and the workload keeps its result.
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
