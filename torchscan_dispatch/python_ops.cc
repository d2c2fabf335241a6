// Operators under the `torchscan` namespace through which Python drives the
// counter (loaded with torch.ops.load_library).
//
// Python's measure_flops spans many calls, so a measurement is driven by
// handle: begin, (scopes set by module hooks), stop, evaluate the deferred
// custom_mapping calls in Python with counting off, resolve them, report,
// finish.

#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "torchscan_dispatch/active_counting.h"
#include "torchscan_dispatch/counting_options.h"
#include "torchscan_dispatch/dispatch_key.h"
#include "torchscan_dispatch/fallback_registration.h"

namespace torchscan::dispatch {
namespace {

using report::Json;

Json ParseOrThrow(const std::string& text, const char* what) {
  absl::StatusOr<Json> parsed = report::ParseJson(text);
  TORCH_CHECK(parsed.ok(), "torchscan: bad ", what, ": ",
              parsed.status().message());
  return *std::move(parsed);
}

class OpenMeasurements {
 public:
  static OpenMeasurements& Get() {
    static OpenMeasurements* open = new OpenMeasurements();
    return *open;
  }

  std::int64_t Begin(CountingOptions options) {
    auto counting = std::make_unique<ActiveCounting>(std::move(options));
    absl::MutexLock lock(&mu_);
    const std::int64_t handle = next_handle_++;
    open_.emplace(handle, std::move(counting));
    return handle;
  }

  void Stop(std::int64_t handle) {
    absl::MutexLock lock(&mu_);
    ActiveCounting& counting = FindLocked(handle);
    if (counting.stopped()) return;
    TORCH_CHECK(counting.thread() == std::this_thread::get_id(),
                "torchscan: measurement ", handle,
                " must be stopped on the thread that began it");
    for (auto later = open_.upper_bound(handle); later != open_.end();
         ++later) {
      TORCH_CHECK(later->second->stopped() ||
                      later->second->thread() != std::this_thread::get_id(),
                  "torchscan: measurement ", later->first,
                  " began inside measurement ", handle,
                  " and must be stopped first");
    }
    counting.Stop();
  }

  // The session of a measurement; it stays alive until Finish.
  CountingSession& Session(std::int64_t handle) {
    absl::MutexLock lock(&mu_);
    return FindLocked(handle).session();
  }

  bool Stopped(std::int64_t handle) {
    absl::MutexLock lock(&mu_);
    return FindLocked(handle).stopped();
  }

  void Finish(std::int64_t handle) {
    Stop(handle);
    std::unique_ptr<ActiveCounting> counting;
    {
      absl::MutexLock lock(&mu_);
      auto it = open_.find(handle);
      TORCH_CHECK(it != open_.end(), "torchscan: no open measurement ", handle);
      counting = std::move(it->second);
      open_.erase(it);
    }
  }

 private:
  ActiveCounting& FindLocked(std::int64_t handle)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = open_.find(handle);
    TORCH_CHECK(it != open_.end(), "torchscan: no open measurement ", handle);
    return *it->second;
  }

  absl::Mutex mu_;
  std::int64_t next_handle_ ABSL_GUARDED_BY(mu_) = 1;
  // Ordered by handle, so later entries were begun later.
  std::map<std::int64_t, std::unique_ptr<ActiveCounting>> open_
      ABSL_GUARDED_BY(mu_);
};

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

// Options JSON: {"deferred_packets": ["aten.sin", ...]}.
std::int64_t BeginCounting(std::string options_json) {
  const Json options = ParseOrThrow(options_json, "options");
  CountingOptions counting_options;
  if (auto it = options.find("deferred_packets"); it != options.end()) {
    TORCH_CHECK(it->is_array(), "torchscan: deferred_packets must be a list");
    for (const Json& packet : *it) {
      TORCH_CHECK(packet.is_string(),
                  "torchscan: deferred_packets must hold names");
      counting_options.deferred_packets.push_back(packet.get<std::string>());
    }
  }
  return OpenMeasurements::Get().Begin(std::move(counting_options));
}

void SetScope(std::int64_t handle, std::int64_t channel,
              std::vector<std::string> labels) {
  TORCH_CHECK(channel >= 0 && channel < kScopeChannels,
              "torchscan: unknown scope channel ", channel);
  OpenMeasurements::Get().Session(handle).SetScope(
      static_cast<ScopeChannel>(channel), std::move(labels));
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
void ResolveDeferred(std::int64_t handle, std::string results_json) {
  const Json results = ParseOrThrow(results_json, "deferred results");
  std::vector<DeferredCall> calls = PendingCalls::Get().Take(handle);
  TORCH_CHECK(results.is_array() && results.size() == calls.size(),
              "torchscan: expected ", calls.size(), " deferred results");
  CountingSession& session = OpenMeasurements::Get().Session(handle);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const Json& result = results[i];
    if (result.contains("flops")) {
      absl::StatusOr<report::Count> flops =
          report::JsonToCount(result["flops"], "deferred result");
      TORCH_CHECK(flops.ok(), "torchscan: ", flops.status().message());
      session.ResolveDeferred(calls[i], *flops);
    } else {
      session.ResolveDeferred(calls[i], absl::InvalidArgumentError(
                                            result.value("error", "failed")));
    }
  }
}

std::string FlopReportJson(std::int64_t handle) {
  absl::StatusOr<report::FlopReport> report =
      OpenMeasurements::Get().Session(handle).BuildReport();
  TORCH_CHECK(report.ok(), "torchscan: ", report.status().ToString());
  return report::DumpJson(report::FlopReportToJson(*report));
}

// {label: {"total": MetricResult, "by_operator": {op: flops}}}
std::string LayerCallReportJson(std::int64_t handle) {
  absl::StatusOr<std::map<std::string, ScopedFlops>> scopes =
      OpenMeasurements::Get().Session(handle).BuildLayerCallReport();
  TORCH_CHECK(scopes.ok(), "torchscan: ", scopes.status().ToString());
  Json out = Json::object();
  for (const auto& [label, scope] : *scopes) {
    Json entry = Json::object();
    entry["total"] = report::MetricResultToJson(scope.total);
    entry["by_operator"] = Json::object();
    for (const auto& [op, flops] : scope.by_operator) {
      entry["by_operator"][op] = report::CountToJson(flops);
    }
    out[label] = std::move(entry);
  }
  return report::DumpJson(out);
}

void FinishCounting(std::int64_t handle) {
  PendingCalls::Get().Take(handle);
  OpenMeasurements::Get().Finish(handle);
}

std::string BuildInfo() {
  Json info = Json::object();
  info["torch_version"] = TORCHSCAN_TORCH_FULL_VERSION;
  info["dispatch_key"] = c10::toString(kCountingKey);
  const absl::Status fallback = CountingFallbackStatus();
  info["counting_available"] = fallback.ok();
  info["counting_error"] = std::string(fallback.message());
  return report::DumpJson(info);
}

constexpr const char* kOperators[] = {
    "_begin_counting(str options) -> int",
    "_set_scope(int handle, int channel, str[] labels) -> ()",
    "_stop_counting(int handle) -> ()",
    "_take_deferred_calls(int handle) -> Any",
    "_resolve_deferred(int handle, str results) -> ()",
    "_flop_report(int handle) -> str",
    "_layer_call_report(int handle) -> str",
    "_finish_counting(int handle) -> ()",
    "_build_info() -> str",
};

// Defines the operators while the library loads. A second copy of the library
// in the same process cannot define the namespace again; it keeps the first
// copy's operators instead of failing inside the dynamic loader.
class OperatorRegistration {
 public:
  OperatorRegistration() {
    try {
      definitions_.emplace(torch::Library::DEF, kOwnNamespace, std::nullopt,
                           __FILE__, __LINE__);
      definitions_->def(kOperators[0], &BeginCounting);
      definitions_->def(kOperators[1], &SetScope);
      definitions_->def(kOperators[2], &StopCounting);
      definitions_->def(kOperators[3], &TakeDeferredCalls);
      definitions_->def(kOperators[4], &ResolveDeferred);
      definitions_->def(kOperators[5], &FlopReportJson);
      definitions_->def(kOperators[6], &LayerCallReportJson);
      definitions_->def(kOperators[7], &FinishCounting);
      definitions_->def(kOperators[8], &BuildInfo);
      // Our own control operators pass the counting key untouched.
      passthrough_.emplace(torch::Library::IMPL, kOwnNamespace, kCountingKey,
                           __FILE__, __LINE__);
      for (const char* schema : kOperators) {
        const std::string text(schema);
        const std::string name = text.substr(0, text.find('('));
        passthrough_->impl(name.c_str(), torch::CppFunction::makeFallthrough());
      }
    } catch (const c10::Error&) {
      passthrough_.reset();
      definitions_.reset();
    }
  }

 private:
  std::optional<torch::Library> definitions_;
  std::optional<torch::Library> passthrough_;
};

const OperatorRegistration registration;

}  // namespace
}  // namespace torchscan::dispatch
