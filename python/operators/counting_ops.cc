// Operators under the `torchscan` namespace through which Python drives the
// counter (loaded with torch.ops.load_library).
//
// Python's measure_flops spans many calls, so a measurement is driven by
// handle: begin, (scopes set by module hooks), stop, evaluate the deferred
// custom_mapping calls in Python with counting off, resolve them, read the
// report (measurement_functions.h, in the extension module), finish.

#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>
#include <dlfcn.h>
#include <torch/library.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
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
#include "torchscan_dispatch/dispatch_key.h"
#include "torchscan_dispatch/fallback_registration.h"
#include "torchscan_dispatch/own_operators.h"
#include "torchscan_dispatch/unseen_threads.h"

namespace torchscan::dispatch {
namespace {

using report::Json;
using report::JsonArray;
using report::JsonObject;
using report::JsonValue;

Json ParseOrThrow(const std::string& text, const char* what) {
  absl::StatusOr<Json> parsed = report::ParseJson(text);
  TORCH_CHECK(parsed.ok(), "torchscan: bad ", what, ": ",
              parsed.status().message());
  return *std::move(parsed);
}

// Deferred calls handed to Python and not resolved yet, by handle.
class PendingCalls {
 public:
  static PendingCalls& Get() {
    static PendingCalls* pending = new PendingCalls();
    return *pending;
  }
  void Add(std::int64_t handle, std::vector<DeferredCall> calls) {
    absl::MutexLock lock(&mu_);
    std::vector<DeferredCall>& list = calls_[handle];
    for (DeferredCall& call : calls) list.push_back(std::move(call));
  }
  std::vector<DeferredCall> Take(std::int64_t handle) {
    absl::MutexLock lock(&mu_);
    auto node = calls_.extract(handle);
    return node.empty() ? std::vector<DeferredCall>{}
                        : std::move(node.mapped());
  }

 private:
  absl::Mutex mu_;
  std::map<std::int64_t, std::vector<DeferredCall>> calls_ ABSL_GUARDED_BY(mu_);
};

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

// The calling thread counts into measurement `handle` until LeaveCounting.
std::int64_t JoinCounting(std::int64_t handle) {
  return JoinedThreads::Get().Join(
      OpenMeasurements::Get().Session(handle).shared_from_this());
}

void LeaveCounting(std::int64_t token) { JoinedThreads::Get().Leave(token); }

std::int64_t UnseenThreadWatches() { return OpenUnseenThreadWatches(); }

// Options JSON: {"deferred_packets": ["aten.sin", ...], "record_calls":
// false}, each member optional.
absl::StatusOr<CountingOptions> ReadCountingOptions(const Json& document) {
  TS_ASSIGN_OR_RETURN(JsonObject options,
                      JsonValue(document, "options").Object());
  TS_RETURN_IF_ERROR(
      options.RejectUnknownKeys({"deferred_packets", "record_calls"}));
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
  return counting_options;
}

std::int64_t BeginCounting(std::string options_json) {
  absl::StatusOr<CountingOptions> options =
      ReadCountingOptions(ParseOrThrow(options_json, "options"));
  TORCH_CHECK(options.ok(), "torchscan: ", options.status().message());
  return OpenMeasurements::Get().Begin(*std::move(options));
}

ScopeChannel CheckedChannel(std::int64_t channel) {
  TORCH_CHECK(IsScopeChannel(channel), "torchscan: unknown scope channel ",
              channel);
  return static_cast<ScopeChannel>(channel);
}

std::int64_t ChangeScopeLabel(std::int64_t handle, std::int64_t channel,
                              const std::string& label, bool present) {
  return OpenMeasurements::Get().Session(handle).ChangeScopeLabel(
      CheckedChannel(channel), label, present);
}

// A negative layer index tracks a module that has no layer record.
std::string LayerLabel(std::int64_t layer) {
  return layer < 0 ? "" : std::to_string(layer);
}

void EnterLayer(std::int64_t handle, std::int64_t layer,
                std::string module_label) {
  OpenMeasurements::Get().Session(handle).EnterLayer(LayerLabel(layer),
                                                     std::move(module_label));
}

void ExitLayer(std::int64_t handle, std::int64_t layer,
               std::string module_label) {
  OpenMeasurements::Get().Session(handle).ExitLayer(LayerLabel(layer),
                                                    module_label);
}

void StopCounting(std::int64_t handle) { OpenMeasurements::Get().Stop(handle); }

// Deferred calls as a list of (qualified name, overload, arguments, results).
c10::IValue TakeDeferredCalls(std::int64_t handle) {
  TORCH_CHECK(OpenMeasurements::Get().Stopped(handle),
              "torchscan: stop measurement ", handle,
              " before evaluating its calls");
  CountingSession& session = OpenMeasurements::Get().Session(handle);
  std::vector<DeferredCall> calls = session.TakeDeferredCalls();
  c10::impl::GenericList list(c10::AnyType::get());
  for (const DeferredCall& call : calls) {
    const OperatorInfo& info = OperatorInfoById(call.operator_id);
    c10::impl::GenericList arguments(c10::AnyType::get());
    for (const c10::IValue& argument : call.arguments)
      arguments.push_back(argument);
    c10::impl::GenericList results(c10::AnyType::get());
    for (const c10::IValue& result : call.results) results.push_back(result);
    list.push_back(
        c10::ivalue::Tuple::create({info.packet, info.overload,
                                    std::move(arguments), std::move(results)}));
  }
  PendingCalls::Get().Add(handle, std::move(calls));
  return list;
}

// Results JSON: one entry per call handed out, in order: {"flops": <int>} or
// {"error": "<message>"}.
absl::Status ResolveDeferredCalls(const Json& document,
                                  const std::vector<DeferredCall>& calls,
                                  CountingSession& session) {
  TS_ASSIGN_OR_RETURN(JsonArray results,
                      JsonValue(document, "deferred results").Array());
  if (results.size() != calls.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", calls.size(), " deferred results"));
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

void ResolveDeferred(std::int64_t handle, std::string results_json) {
  const Json results = ParseOrThrow(results_json, "deferred results");
  const std::vector<DeferredCall> calls = PendingCalls::Get().Take(handle);
  const absl::Status resolved = ResolveDeferredCalls(
      results, calls, OpenMeasurements::Get().Session(handle));
  TORCH_CHECK(resolved.ok(), "torchscan: ", resolved.message());
}

void FinishCounting(std::int64_t handle) {
  PendingCalls::Get().Take(handle);
  OpenMeasurements::Get().Finish(handle);
}

// Whether the formula table counts `packet` ("aten::mm" or "aten.mm", any
// overload). Python gives the operators of torch's register_flop_formula
// registry that it does not count to their registered formula (deferred);
// the table's formula wins over the registry's.
bool HasFormula(const std::string& packet) {
  return formulas::FindOperatorFormula(SchemaPacketName(packet)) != nullptr;
}

// The file this library was loaded from, so Python can tell whether the
// torchscan operators it calls belong to the copy it loaded.
std::string LoadedFrom() {
  Dl_info where;
  if (dladdr(reinterpret_cast<void*>(&LoadedFrom), &where) == 0 ||
      where.dli_fname == nullptr) {
    return "";
  }
  return where.dli_fname;
}

std::string BuildInfo() {
  Json info = Json::object();
  info["library_path"] = LoadedFrom();
  info["torch_version"] = TORCHSCAN_TORCH_FULL_VERSION;
  info["dispatch_key"] = c10::toString(kCountingKey);
  const absl::Status fallback = CountingFallbackStatus();
  info["counting_available"] = fallback.ok();
  info["counting_error"] = std::string(fallback.message());
  return report::DumpJson(info);
}

// This block owns the namespace (DEF); the other operators of this folder are
// fragments.
const OwnOperators registration(
    torch::Library::DEF,
    {"_begin_counting", "_stop_counting", "_take_deferred_calls",
     "_resolve_deferred", "_finish_counting", "_build_info", "_enter_layer",
     "_exit_layer", "_change_scope_label", "_end_gradient_watches",
     "_join_counting", "_leave_counting", "_unseen_thread_watches",
     "_has_formula"},
    [](torch::Library& library) {
      library.def("_begin_counting(str options) -> int", &BeginCounting);
      library.def("_stop_counting(int handle) -> ()", &StopCounting);
      library.def("_take_deferred_calls(int handle) -> Any",
                  &TakeDeferredCalls);
      library.def("_resolve_deferred(int handle, str results) -> ()",
                  &ResolveDeferred);
      library.def("_finish_counting(int handle) -> ()", &FinishCounting);
      library.def("_build_info() -> str", &BuildInfo);
      library.def("_enter_layer(int handle, int layer, str module_label) -> ()",
                  &EnterLayer);
      library.def("_exit_layer(int handle, int layer, str module_label) -> ()",
                  &ExitLayer);
      library.def(
          "_change_scope_label(int handle, int channel, str label, "
          "bool present) -> int",
          &ChangeScopeLabel);
      library.def("_end_gradient_watches(int handle) -> ()",
                  &EndGradientWatches);
      library.def("_join_counting(int handle) -> int", &JoinCounting);
      library.def("_leave_counting(int token) -> ()", &LeaveCounting);
      library.def("_unseen_thread_watches() -> int", &UnseenThreadWatches);
      library.def("_has_formula(str packet) -> bool", &HasFormula);
    },
    __FILE__, __LINE__);

}  // namespace
}  // namespace torchscan::dispatch
