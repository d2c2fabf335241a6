#include "python/operators/measurement_functions.h"  // Python.h first

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "python/operators/open_measurements.h"
#include "report/communication.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "torchscan_dispatch/call_log.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/operator_info.h"

namespace torchscan::dispatch {
namespace {

using report::Json;

absl::StatusOr<Json> FlopReportOf(std::int64_t handle) {
  const CountingSession& session = OpenMeasurements::Get().Session(handle);
  absl::StatusOr<report::FlopReport> report = session.BuildReport();
  if (!report.ok()) {
    return absl::InternalError(
        absl::StrCat("torchscan: ", report.status().ToString()));
  }
  Json json = report::FlopReportToJson(*report);
  const report::CommunicationReport communication = session.Communication();
  if (!communication.empty()) {
    json["communication"] = report::CommunicationToJson(communication);
  }
  return json;
}

const char* LoggedCallKindName(LoggedCallKind kind) {
  switch (kind) {
    case LoggedCallKind::kCounted:
      return "counted";
    case LoggedCallKind::kUncounted:
      return "uncounted";
    case LoggedCallKind::kFailed:
      return "failed";
    case LoggedCallKind::kDeferred:
      return "deferred";
  }
  return "unknown";
}

absl::StatusOr<Json> CallLogOf(std::int64_t handle) {
  const CountingSession& session = OpenMeasurements::Get().Session(handle);
  const CallLog* log = session.call_log();
  if (log == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("torchscan: measurement ", handle,
                     " keeps no per-call record (record_calls was not set)"));
  }
  Json calls = Json::array();
  Json scopes = Json::object();
  for (const LoggedCall& call : log->Calls()) {
    calls.push_back(Json::array(
        {call.record_function, call.thread,
         OperatorInfoById(call.operator_id).report_name,
         LoggedCallKindName(call.kind), report::CountToJson(call.flops),
         call.bytes_read, call.bytes_written, call.bytes_known,
         call.module_scope, call.seen_instead}));
    const std::string scope = std::to_string(call.module_scope);
    if (!scopes.contains(scope)) {
      scopes[scope] = session.ModuleScopeLabels(call.module_scope);
    }
  }
  Json document = Json::object();
  document["calls"] = std::move(calls);
  document["module_scopes"] = std::move(scopes);
  return document;
}

PyObject* FlopReport(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  std::int64_t handle = 0;
  if (!CheckArguments(kExtensionModule, "flop_report", nargs, 1) ||
      !Handle(args[0], &handle)) {
    return nullptr;
  }
  Json report;
  const bool ok =
      WithoutGil([&] { return FlopReportOf(handle); }, &report, RaiseStatus);
  return ok ? FromJson(report) : nullptr;
}

PyObject* CallLogFunction(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  std::int64_t handle = 0;
  if (!CheckArguments(kExtensionModule, "call_log", nargs, 1) ||
      !Handle(args[0], &handle)) {
    return nullptr;
  }
  Json log;
  const bool ok =
      WithoutGil([&] { return CallLogOf(handle); }, &log, RaiseStatus);
  return ok ? FromJson(log) : nullptr;
}

PyMethodDef kFunctions[] = {
    {"flop_report", AsCFunction(FlopReport), METH_FASTCALL,
     "flop_report(handle) -> dict: the measurement's FlopReport."},
    {"call_log", AsCFunction(CallLogFunction), METH_FASTCALL,
     "call_log(handle) -> dict: the measurement's per-call record."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool AddMeasurementFunctions(PyObject* module) {
  return PyModule_AddFunctions(module, kFunctions) == 0;
}

}  // namespace torchscan::dispatch
