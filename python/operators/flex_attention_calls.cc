#include "python/operators/flex_attention_calls.h"  // Python.h first

#include <c10/core/Device.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "formulas/operator_formulas.h"
#include "torchscan_dispatch/attention_masks.h"
#include "torchscan_dispatch/call_recording.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/operator_info.h"
#include "torchscan_dispatch/thread_state.h"

namespace torchscan::dispatch {
namespace {

// The operators whose dense kernels the Python hook sees: a record names one
// of them, never an arbitrary name.
bool IsFlexAttention(std::string_view packet) {
  return packet == "higher_order::flex_attention" ||
         packet == "higher_order::flex_attention_backward";
}

PyObject* CountingHere(PyObject*, PyObject*) {
  return PyLong_FromLong(CountingSession::Current() != nullptr &&
                                 ThisThreadState().execution.compiling_depth ==
                                     0
                             ? 1
                             : 0);
}

PyObject* StreamCapturing(PyObject*, PyObject* device) {
  const char* text = PyBytes_AsString(device);
  if (text == nullptr) return nullptr;
  long capturing = -1;
  try {
    const c10::Device parsed(text);
    if (parsed.is_cpu()) {
      capturing = 0;
    } else {
      const c10::impl::VirtualGuardImpl guard(parsed.type());
      capturing = guard.getStream(parsed).is_capturing() ? 1 : 0;
    }
  } catch (...) {
    capturing = -1;
  }
  return PyLong_FromLong(capturing);
}

PyObject* EnterNotCounted(PyObject*, PyObject*) {
  NotCounted* token = nullptr;
  try {
    token = new NotCounted();
  } catch (...) {
    Py_RETURN_NONE;
  }
  return PyLong_FromVoidPtr(token);
}

PyObject* ExitNotCounted(PyObject*, PyObject* token) {
  if (token == Py_None) Py_RETURN_NONE;
  void* address = PyLong_AsVoidPtr(token);
  if (address == nullptr && PyErr_Occurred()) return nullptr;
  delete static_cast<NotCounted*>(address);
  Py_RETURN_NONE;
}

PyObject* RecordMask(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!CheckArguments(kExtensionModule, "record_flex_attention_mask", nargs,
                      5)) {
    return nullptr;
  }
  const char* packet = PyBytes_AsString(args[0]);
  if (packet == nullptr) return nullptr;
  long long counts[3];  // executed, all pairs, allowed pairs
  for (int i = 0; i < 3; ++i) {
    counts[i] = PyLong_AsLongLong(args[i + 1]);
    if (counts[i] == -1 && PyErr_Occurred()) return nullptr;
  }
  const auto [executed, all_pairs, allowed_pairs] = counts;
  const char* unread_reason = nullptr;
  if (args[4] != Py_None) {
    unread_reason = PyBytes_AsString(args[4]);
    if (unread_reason == nullptr) return nullptr;
  }
  long result = -1;
  try {
    CountingSession* session = CountingSession::Current();
    if (session != nullptr && IsFlexAttention(packet) && executed >= 0 &&
        all_pairs >= 0) {
      const absl::StatusOr<Count> allowed =
          unread_reason == nullptr
              ? absl::StatusOr<Count>(allowed_pairs)
              : absl::FailedPreconditionError(unread_reason);
      // The same entry a compiled graph's call of the operator records to
      // (with the operator's formula), so both report under one name.
      const OperatorInfo& info = SyntheticOperatorInfo(
          packet, formulas::FindOperatorFormula(packet), "");
      RecordFlexAttentionMask(info, executed, all_pairs, allowed, *session);
      result = 0;
    }
  } catch (...) {
    result = -1;
  }
  return PyLong_FromLong(result);
}

PyMethodDef kFunctions[] = {
    {"counting_here", CountingHere, METH_NOARGS,
     "counting_here() -> int: 1 when a call's mask is worth evaluating."},
    {"stream_capturing", StreamCapturing, METH_O,
     "stream_capturing(device) -> int: 1 when its stream is captured."},
    {"enter_not_counted", EnterNotCounted, METH_NOARGS,
     "enter_not_counted() -> int: operator calls from now on are ours."},
    {"exit_not_counted", ExitNotCounted, METH_O,
     "exit_not_counted(token): ends enter_not_counted's region."},
    {"record_flex_attention_mask", AsCFunction(RecordMask), METH_FASTCALL,
     "record_flex_attention_mask(packet, executed, all_pairs, allowed, "
     "unread_reason) -> int: records one call's mask."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool AddFlexAttentionFunctions(PyObject* module) {
  return PyModule_AddFunctions(module, kFunctions) == 0;
}

}  // namespace torchscan::dispatch
