#include "python/operators/counting_functions.h"  // Python.h first

#include <c10/util/Exception.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "formulas/operator_formulas.h"
#include "python/operators/gradient_watches.h"
#include "python/operators/open_measurements.h"
#include "report/count.h"
#include "report/json_io.h"
#include "report/json_reader.h"
#include "torchscan_dispatch/active_counting.h"
#include "torchscan_dispatch/counting_options.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/unseen_threads.h"

namespace torchscan::dispatch {
namespace {

using report::Json;
using report::JsonArray;
using report::JsonObject;
using report::JsonValue;

// Threads that joined a measurement (threads="follow"), by token. A
// JoinedCounting must end on the thread that made it.
class JoinedThreads {
 public:
  static JoinedThreads& Get() {
    static JoinedThreads* joined = new JoinedThreads();
    return *joined;
  }
  std::int64_t Join(std::shared_ptr<CountingSession> session) {
    auto joined = std::make_unique<JoinedCounting>(std::move(session));
    absl::MutexLock lock(&mu_);
    const std::int64_t token = next_token_++;
    joined_.emplace(token, std::move(joined));
    return token;
  }
  void Leave(std::int64_t token) {
    std::unique_ptr<JoinedCounting> joined;
    {
      absl::MutexLock lock(&mu_);
      auto it = joined_.find(token);
      TORCH_CHECK(it != joined_.end(), "torchscan: no joined thread ", token);
      TORCH_CHECK(it->second->thread() == std::this_thread::get_id(),
                  "torchscan: joined thread ", token,
                  " must leave on the thread that joined");
      joined = std::move(it->second);
      joined_.erase(it);
    }
  }

 private:
  absl::Mutex mu_;
  std::int64_t next_token_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::int64_t, std::unique_ptr<JoinedCounting>> joined_
      ABSL_GUARDED_BY(mu_);
};

// Options: {"deferred_packets": ["aten.sin", ...], "record_calls": bool,
// "elementwise": bool}, each member optional.
absl::StatusOr<CountingOptions> ReadCountingOptions(const Json& document) {
  TS_ASSIGN_OR_RETURN(JsonObject options,
                      JsonValue(document, "options").Object());
  TS_RETURN_IF_ERROR(options.RejectUnknownKeys(
      {"deferred_packets", "record_calls", "elementwise"}));
  CountingOptions counting_options;
  if (options.Contains("deferred_packets")) {
    TS_ASSIGN_OR_RETURN(JsonArray packets, options.Array("deferred_packets"));
    for (std::size_t i = 0; i < packets.size(); ++i) {
      TS_ASSIGN_OR_RETURN(std::string packet, packets.Item(i).String());
      counting_options.deferred_packets.push_back(std::move(packet));
    }
  }
  if (options.Contains("record_calls")) {
    TS_ASSIGN_OR_RETURN(counting_options.record_calls,
                        options.Bool("record_calls"));
  }
  if (options.Contains("elementwise")) {
    TS_ASSIGN_OR_RETURN(counting_options.elementwise,
                        options.Bool("elementwise"));
  }
  return counting_options;
}

// Results: one entry per call handed out, in order: {"flops": int} or
// {"error": str}.
absl::Status ResolveDeferredCalls(const Json& document,
                                  const std::vector<DeferredCall>& calls,
                                  CountingSession& session) {
  TS_ASSIGN_OR_RETURN(JsonArray results,
                      JsonValue(document, "results").Array());
  if (results.size() != calls.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "results: expected ", calls.size(), " results, got ", results.size()));
  }
  for (std::size_t i = 0; i < calls.size(); ++i) {
    TS_ASSIGN_OR_RETURN(JsonObject result, results.Item(i).Object());
    TS_RETURN_IF_ERROR(result.RejectUnknownKeys({"flops", "error"}));
    if (result.Contains("flops")) {
      TS_ASSIGN_OR_RETURN(report::Count flops, result.Integer("flops"));
      session.ResolveDeferred(calls[i], flops);
      continue;
    }
    std::string error = "failed";
    if (result.Contains("error")) {
      TS_ASSIGN_OR_RETURN(error, result.String("error"));
    }
    session.ResolveDeferred(calls[i], absl::InvalidArgumentError(error));
  }
  return absl::OkStatus();
}

// A ValueError "torchscan: <path>: <problem>"; returns false.
bool RaiseBadValue(const absl::Status& status) {
  return RaiseValueError(absl::InvalidArgumentError(
      absl::StrCat("torchscan: ", status.message())));
}

// A Python value as JSON, a bad one a ValueError naming its path from `name`.
bool ValueArgument(PyObject* value, const char* name, Json* out) {
  return ToJson(value, name, out, "torchscan: ");
}

// Runs `body` (returning T) without the GIL: its value, or a RuntimeError
// for the c10::Error it throws (an unknown handle, a misuse).
template <typename T, typename Body>
bool Run(Body body, T* out) {
  return WithoutGil([&]() -> absl::StatusOr<T> { return body(); }, out,
                    RaiseStatus);
}

// Runs `body` (returning void) without the GIL: None, or nullptr with a
// RuntimeError.
template <typename Body>
PyObject* RunToNone(Body body) {
  bool done = false;
  return NoneOrRaise(Run<bool>(
      [&] {
        body();
        return true;
      },
      &done));
}

// Runs `body` (returning std::int64_t) without the GIL: a Python int, or
// nullptr with a RuntimeError.
template <typename Body>
PyObject* RunToInt(Body body) {
  std::int64_t value = 0;
  return Run<std::int64_t>(body, &value) ? PyLong_FromLongLong(value) : nullptr;
}

// `value` (a bool, as the operators' schemas asked) as a bool.
bool BoolArgument(PyObject* value, const char* name, bool* out) {
  if (!PyBool_Check(value)) {
    PyErr_Format(PyExc_TypeError, "torchscan: %s must be a bool", name);
    return false;
  }
  *out = value == Py_True;
  return true;
}

PyObject* BeginCounting(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  Json document;
  if (!CheckArguments(kExtensionModule, "begin_counting", nargs, 1) ||
      !ValueArgument(args[0], "options", &document)) {
    return nullptr;
  }
  absl::StatusOr<CountingOptions> options = ReadCountingOptions(document);
  if (!options.ok()) {
    RaiseBadValue(options.status());
    return nullptr;
  }
  return RunToInt(
      [&] { return OpenMeasurements::Get().Begin(*std::move(options)); });
}

PyObject* StopCounting(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  std::int64_t handle = 0;
  if (!CheckArguments(kExtensionModule, "stop_counting", nargs, 1) ||
      !Handle(args[0], &handle)) {
    return nullptr;
  }
  return RunToNone([&] { OpenMeasurements::Get().Stop(handle); });
}

PyObject* ResolveDeferred(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  std::int64_t handle = 0;
  Json results;
  if (!CheckArguments(kExtensionModule, "resolve_deferred", nargs, 2) ||
      !Handle(args[0], &handle) ||
      !ValueArgument(args[1], "results", &results)) {
    return nullptr;
  }
  // A c10::Error (an unknown handle) is a RuntimeError, a bad result a
  // ValueError. The calls are destroyed without the GIL.
  bool resolved = false;
  return NoneOrRaise(WithoutGil(
      [&]() -> absl::StatusOr<bool> {
        const std::vector<DeferredCall> calls =
            HandedOutCalls::Get().Take(handle);
        TS_RETURN_IF_ERROR(ResolveDeferredCalls(
            results, calls, OpenMeasurements::Get().Session(handle)));
        return true;
      },
      &resolved, RaiseBadValue));
}

PyObject* FinishCounting(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  std::int64_t handle = 0;
  if (!CheckArguments(kExtensionModule, "finish_counting", nargs, 1) ||
      !Handle(args[0], &handle)) {
    return nullptr;
  }
  return RunToNone([&] {
    HandedOutCalls::Get().Take(handle);
    OpenMeasurements::Get().Finish(handle);
  });
}

// A negative layer index tracks a module that has no layer record.
std::string LayerLabel(std::int64_t layer) {
  return layer < 0 ? "" : std::to_string(layer);
}

// The handle, layer and module label of enter_layer and exit_layer.
bool LayerArguments(const char* function, PyObject* const* args,
                    Py_ssize_t nargs, std::int64_t* handle, std::string* layer,
                    std::string* module_label) {
  std::int64_t index = 0;
  if (!CheckArguments(kExtensionModule, function, nargs, 3) ||
      !Handle(args[0], handle) || !Handle(args[1], &index) ||
      !Utf8(args[2], module_label)) {
    return false;
  }
  *layer = LayerLabel(index);
  return true;
}

PyObject* EnterLayer(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  std::int64_t handle = 0;
  std::string layer, module_label;
  if (!LayerArguments("enter_layer", args, nargs, &handle, &layer,
                      &module_label)) {
    return nullptr;
  }
  return RunToNone([&] {
    OpenMeasurements::Get().Session(handle).EnterLayer(layer,
                                                       std::move(module_label));
  });
}

PyObject* ExitLayer(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  std::int64_t handle = 0;
  std::string layer, module_label;
  if (!LayerArguments("exit_layer", args, nargs, &handle, &layer,
                      &module_label)) {
    return nullptr;
  }
  return RunToNone([&] {
    OpenMeasurements::Get().Session(handle).ExitLayer(layer, module_label);
  });
}

PyObject* ChangeScopeLabel(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  std::int64_t handle = 0, channel = 0;
  std::string label;
  bool present = false;
  if (!CheckArguments(kExtensionModule, "change_scope_label", nargs, 4) ||
      !Handle(args[0], &handle) || !Handle(args[1], &channel) ||
      !Utf8(args[2], &label) || !BoolArgument(args[3], "present", &present)) {
    return nullptr;
  }
  if (!IsScopeChannel(channel)) {
    PyErr_Format(PyExc_ValueError, "torchscan: unknown scope channel %lld",
                 static_cast<long long>(channel));
    return nullptr;
  }
  return RunToInt([&]() -> std::int64_t {
    return OpenMeasurements::Get().Session(handle).ChangeScopeLabel(
        static_cast<ScopeChannel>(channel), label, present);
  });
}

PyObject* EndWatches(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  std::int64_t handle = 0;
  if (!CheckArguments(kExtensionModule, "end_gradient_watches", nargs, 1) ||
      !Handle(args[0], &handle)) {
    return nullptr;
  }
  return RunToNone([&] { EndGradientWatches(handle); });
}

PyObject* JoinCounting(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  std::int64_t handle = 0;
  if (!CheckArguments(kExtensionModule, "join_counting", nargs, 1) ||
      !Handle(args[0], &handle)) {
    return nullptr;
  }
  return RunToInt([&] {
    return JoinedThreads::Get().Join(
        OpenMeasurements::Get().Session(handle).shared_from_this());
  });
}

PyObject* LeaveCounting(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  std::int64_t token = 0;
  if (!CheckArguments(kExtensionModule, "leave_counting", nargs, 1) ||
      !Handle(args[0], &token)) {
    return nullptr;
  }
  return RunToNone([&] { JoinedThreads::Get().Leave(token); });
}

PyObject* UnseenThreadWatches(PyObject*, PyObject* const*, Py_ssize_t nargs) {
  if (!CheckArguments(kExtensionModule, "unseen_thread_watches", nargs, 0))
    return nullptr;
  return PyLong_FromLong(OpenUnseenThreadWatches());
}

// Python gives the operators of torch's register_flop_formula registry that
// the table does not count to their registered formula (deferred); the
// table's formula wins over the registry's.
PyObject* HasFormula(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  std::string packet;
  if (!CheckArguments(kExtensionModule, "has_formula", nargs, 1) ||
      !Utf8(args[0], &packet)) {
    return nullptr;
  }
  return PyBool_FromLong(
      formulas::FindOperatorFormula(SchemaPacketName(packet)) != nullptr);
}

PyMethodDef kFunctions[] = {
    {"begin_counting", AsCFunction(BeginCounting), METH_FASTCALL,
     "begin_counting(options) -> int: begins a measurement on this thread."},
    {"stop_counting", AsCFunction(StopCounting), METH_FASTCALL,
     "stop_counting(handle): stops counting, on the thread that began it."},
    {"resolve_deferred", AsCFunction(ResolveDeferred), METH_FASTCALL,
     "resolve_deferred(handle, results): the deferred calls' FLOPs."},
    {"finish_counting", AsCFunction(FinishCounting), METH_FASTCALL,
     "finish_counting(handle): stops and forgets the measurement."},
    {"enter_layer", AsCFunction(EnterLayer), METH_FASTCALL,
     "enter_layer(handle, layer, module_label): a crawled layer's call."},
    {"exit_layer", AsCFunction(ExitLayer), METH_FASTCALL,
     "exit_layer(handle, layer, module_label): its end."},
    {"change_scope_label", AsCFunction(ChangeScopeLabel), METH_FASTCALL,
     "change_scope_label(handle, channel, label, present) -> int."},
    {"end_gradient_watches", AsCFunction(EndWatches), METH_FASTCALL,
     "end_gradient_watches(handle): ends the measurement's watches."},
    {"join_counting", AsCFunction(JoinCounting), METH_FASTCALL,
     "join_counting(handle) -> int: this thread counts into it."},
    {"leave_counting", AsCFunction(LeaveCounting), METH_FASTCALL,
     "leave_counting(token): this thread stops counting into it."},
    {"unseen_thread_watches", AsCFunction(UnseenThreadWatches), METH_FASTCALL,
     "unseen_thread_watches() -> int: measurements watching threads."},
    {"has_formula", AsCFunction(HasFormula), METH_FASTCALL,
     "has_formula(packet) -> bool: whether the formula table counts it."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool AddCountingFunctions(PyObject* module) {
  return PyModule_AddFunctions(module, kFunctions) == 0;
}

}  // namespace torchscan::dispatch
