#include "torchscan_dispatch/call_recording.h"

#include <exception>
#include <vector>

#include "absl/strings/str_cat.h"
#include "torchscan_dispatch/call_bytes.h"
#include "torchscan_dispatch/compute_precision.h"
#include "torchscan_dispatch/operator_values.h"

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

// Evaluates `formula` on the reduced arguments and the call's results, and
// records the outcome, in `precision`, through this thread's session slot.
template <typename Formula>
void CountReduced(const OperatorInfo& info, const Formula& formula,
                  absl::Span<const formulas::OperatorValue> arguments,
                  absl::Span<const formulas::OperatorValue> results,
                  Precision precision, const CallBytes& bytes,
                  CountingSession& session, SessionSlot& slot) {
  absl::StatusOr<Count> flops =
      Evaluate(formula, formulas::OperatorCall{arguments, results});
  if (flops.ok()) {
    session.RecordCounted(info, *flops, precision, slot, bytes);
  } else {
    session.RecordFailed(info, flops.status(), bytes);
  }
}

template <typename Formula>
void CountValues(const OperatorInfo& info, const Formula& formula,
                 absl::Span<const formulas::OperatorValue> arguments,
                 c10::ArrayRef<c10::IValue> results, Precision precision,
                 const CallBytes& bytes, CountingSession& session,
                 SessionSlot& slot) {
  const OperatorValues result_values = ToOperatorValues(results);
  CountReduced(info, formula, arguments, result_values, precision, bytes,
               session, slot);
}

template <typename Formula>
void CountWith(const OperatorInfo& info, const Formula& formula,
               std::uint32_t value_arguments,
               c10::ArrayRef<c10::IValue> arguments,
               c10::ArrayRef<c10::IValue> results, CountingSession& session) {
  OperatorValues argument_values = ToOperatorValues(arguments);
  if (value_arguments != 0) {
    NotCounted not_counted;
    for (std::uint32_t bits = value_arguments; bits != 0; bits &= bits - 1) {
      const int index = __builtin_ctz(bits);
      if (index >= static_cast<int>(arguments.size())) continue;
      // NOTE [Values that cannot be read]
      // Copying a device tensor to the host fails where the device forbids
      // it (a CUDA stream being captured into a graph). The workload's call
      // has succeeded; the formula then sees the values as unreadable and
      // says so, which the report shows as a named failure.
      try {
        ReadIntegerValues(arguments[index], argument_values[index]);
      } catch (const std::exception&) {
        argument_values[index].values.reset();
      }
    }
  }
  CountValues(info, formula, argument_values, results,
              ComputePrecision(info, arguments),
              CallBytesOf(info, arguments, results), session,
              ThisThreadState().session);
}

}  // namespace

// NOTE [Elementwise rules on the counted path]
// A call with a table formula takes its first branch, as before the
// convention existed; only a call without one tests the operator's rule,
// and then the session's flag (one pointer and one flag test), so calls of
// operators with neither pay one pointer test more.
const formulas::OperatorFormulaEntry* FormulaFor(
    const OperatorInfo& info, const CountingSession& session) {
  if (info.formula != nullptr) return info.formula;
  return info.elementwise != nullptr && session.elementwise() ? info.elementwise
                                                              : nullptr;
}

bool RecordingReadsValues(const OperatorInfo& info, CountingSession& session) {
  return FormulaFor(info, session) != nullptr || info.is_communication() ||
         (session.has_custom_formulas() &&
          session.CustomFormulaFor(info) != nullptr) ||
         (session.has_deferred() && session.IsDeferred(info));
}

bool ReadsArgumentsBeforeCall(const OperatorInfo& info,
                              CountingSession& session) {
  const formulas::OperatorFormulaEntry* formula = FormulaFor(info, session);
  return formula != nullptr && formula->value_arguments == 0 &&
         !info.writes_arguments && !info.is_communication() &&
         !(session.has_custom_formulas() &&
           session.CustomFormulaFor(info) != nullptr) &&
         !(session.has_deferred() && session.IsDeferred(info));
}

void RecordFormulaCall(const OperatorInfo& info,
                       absl::Span<const formulas::OperatorValue> arguments,
                       c10::ArrayRef<c10::IValue> results, Precision precision,
                       const CallBytes& bytes, CountingSession& session,
                       SessionSlot& slot) {
  CountValues(info, FormulaFor(info, session)->formula, arguments, results,
              precision, bytes, session, slot);
}

void RecordFormulaCall(const OperatorInfo& info,
                       absl::Span<const formulas::OperatorValue> arguments,
                       absl::Span<const formulas::OperatorValue> results,
                       Precision precision, const CallBytes& bytes,
                       CountingSession& session, SessionSlot& slot) {
  CountReduced(info, FormulaFor(info, session)->formula, arguments, results,
               precision, bytes, session, slot);
}

void RecordFinishedCall(const OperatorInfo& info,
                        c10::ArrayRef<c10::IValue> arguments,
                        c10::ArrayRef<c10::IValue> results,
                        CountingSession& session) {
  if (info.is_communication()) {
    RecordCommunicationOf(info, arguments, session);
    session.RecordCall(info, CallBytesOf(info, arguments, results));
    return;
  }
  if (session.has_custom_formulas()) {
    if (const CustomFormula* custom = session.CustomFormulaFor(info)) {
      CountWith(info, *custom, 0, arguments, results, session);
      return;
    }
  }
  if (session.has_deferred() && session.IsDeferred(info)) {
    const Precision precision = ComputePrecision(info, arguments);
    NotCounted not_counted;
    std::vector<c10::IValue> kept_arguments, kept_results;
    for (const c10::IValue& value : arguments) {
      kept_arguments.push_back(ToMetaIValue(value));
    }
    for (const c10::IValue& value : results) {
      kept_results.push_back(ToMetaIValue(value));
    }
    session.RecordDeferred(info, std::move(kept_arguments),
                           std::move(kept_results), precision);
    session.RecordBytes(info, CallBytesOf(info, arguments, results));
    return;
  }
  const formulas::OperatorFormulaEntry* formula = FormulaFor(info, session);
  if (formula == nullptr) {
    session.RecordCall(info, CallBytesOf(info, arguments, results));
    return;
  }
  CountWith(info, formula->formula, formula->value_arguments, arguments,
            results, session);
}

void RecordCommunicationOf(const OperatorInfo& info,
                           c10::ArrayRef<c10::IValue> arguments,
                           CountingSession& session) {
  if (info.collective == nullptr) {
    session.RecordUnreadableCommunication(
        info, "no rule says how much data this operator moves");
    return;
  }
  absl::StatusOr<CollectiveVolume> volume =
      ReadCollective(*info.collective, info.group_argument, arguments);
  if (!volume.ok()) {
    session.RecordUnreadableCommunication(info, volume.status().message());
    return;
  }
  session.RecordCommunication(info, info.collective->kind, volume->group_name,
                              volume->group_size, volume->payload_bytes);
}

}  // namespace torchscan::dispatch
