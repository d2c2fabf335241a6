#include "python/operators/measurement_functions.h"  // Python.h first

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "python/operators/open_measurements.h"
#include "python/operators/report_objects.h"
#include "report/communication.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "torchscan_dispatch/call_log.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/operator_info.h"

namespace torchscan::dispatch {
namespace {

using report::Json;

// A measurement's report as BuildReport made it, with its communication:
// what step_report holds for held_report (a capsule owns it).
struct HeldReport {
  report::FlopReport flops;
  report::CommunicationReport communication;
};

constexpr char kHeldReportName[] = "torchscan_dispatch.HeldReport";

absl::StatusOr<HeldReport> HeldReportOf(std::int64_t handle) {
  const CountingSession& session = OpenMeasurements::Get().Session(handle);
  absl::StatusOr<report::FlopReport> report = session.BuildReport();
  if (!report.ok()) {
    return absl::InternalError(
        absl::StrCat("torchscan: ", report.status().ToString()));
  }
  return HeldReport{*std::move(report), session.Communication()};
}

// The report flop_report gives: the FlopReport, and "communication" when
// collectives ran, written from their field tables (report_objects.h). A new
// reference, or nullptr with an error set.
PyObject* ReportObject(const report::FlopReport& flops,
                       const report::CommunicationReport& communication) {
  OwnedRef report(ToPython(flops));
  if (!report || communication.empty()) return report.release();
  static PyObject* const kCommunication =
      PyUnicode_InternFromString("communication");
  OwnedRef written(ToPython(communication));
  if (!written ||
      PyDict_SetItem(report.get(), kCommunication, written.get()) < 0) {
    return nullptr;
  }
  return report.release();
}

// NOTE [What a step reads of its report, natively]
// StepMeter reads the totals, by_precision, by_module (its phases), the
// mask-aware and byte totals with their by_module, and communication's
// totals. The summary is the held report with everything else left empty
// (by_operator and its precisions, ignored operators, diagnostics, the byte
// counts per operator), written by the same codecs, so each member it keeps
// is the full report's member, value for value; the rest, most of the
// report's size, is converted only when held_report asks for it.
report::FlopReport SummaryOf(const report::FlopReport& flops) {
  report::FlopReport summary;
  summary.schema_version = flops.schema_version;
  summary.torch_version = flops.torch_version;
  summary.method = flops.method;
  summary.total = flops.total;
  summary.by_module = flops.by_module;
  summary.by_precision = flops.by_precision;
  if (flops.mask_aware.has_value()) {
    summary.mask_aware.emplace();
    summary.mask_aware->total = flops.mask_aware->total;
    summary.mask_aware->by_module = flops.mask_aware->by_module;
  }
  if (flops.bytes.has_value()) {
    summary.bytes.emplace();
    summary.bytes->total = flops.bytes->total;
    summary.bytes->read = flops.bytes->read;
    summary.bytes->written = flops.bytes->written;
    summary.bytes->by_module = flops.bytes->by_module;
    summary.bytes->upper_bound = flops.bytes->upper_bound;
  }
  return summary;
}

void DeleteHeldReport(PyObject* capsule) {
  delete static_cast<HeldReport*>(
      PyCapsule_GetPointer(capsule, kHeldReportName));
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
  HeldReport held;
  const bool ok =
      WithoutGil([&] { return HeldReportOf(handle); }, &held, RaiseStatus);
  return ok ? ReportObject(held.flops, held.communication) : nullptr;
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

PyObject* StepReport(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  std::int64_t handle = 0;
  if (!CheckArguments(kExtensionModule, "step_report", nargs, 1) ||
      !Handle(args[0], &handle)) {
    return nullptr;
  }
  struct Built {
    std::unique_ptr<HeldReport> held;
    report::FlopReport summary;
  };
  Built built;
  const bool ok = WithoutGil(
      [&]() -> absl::StatusOr<Built> {
        TS_ASSIGN_OR_RETURN(HeldReport held, HeldReportOf(handle));
        report::FlopReport summary = SummaryOf(held.flops);
        return Built{std::make_unique<HeldReport>(std::move(held)),
                     std::move(summary)};
      },
      &built, RaiseStatus);
  if (!ok) return nullptr;
  OwnedRef summary(ReportObject(built.summary, built.held->communication));
  if (!summary) return nullptr;
  OwnedRef capsule(
      PyCapsule_New(built.held.get(), kHeldReportName, &DeleteHeldReport));
  if (!capsule) return nullptr;
  built.held.release();  // the capsule owns it now
  return PyTuple_Pack(2, summary.get(), capsule.get());
}

PyObject* HeldReportFunction(PyObject*, PyObject* const* args,
                             Py_ssize_t nargs) {
  if (!CheckArguments(kExtensionModule, "held_report", nargs, 1)) {
    return nullptr;
  }
  const auto* held = static_cast<const HeldReport*>(
      PyCapsule_GetPointer(args[0], kHeldReportName));
  if (held == nullptr) return nullptr;  // not ours: PyCapsule set the error
  return ReportObject(held->flops, held->communication);
}

PyMethodDef kFunctions[] = {
    {"flop_report", AsCFunction(FlopReport), METH_FASTCALL,
     "flop_report(handle) -> dict: the measurement's FlopReport."},
    {"step_report", AsCFunction(StepReport), METH_FASTCALL,
     "step_report(handle) -> (dict, held): what StepMeter reads of the "
     "measurement's report, and the report held for held_report."},
    {"held_report", AsCFunction(HeldReportFunction), METH_FASTCALL,
     "held_report(held) -> dict: the FlopReport step_report held, as "
     "flop_report gives it."},
    {"call_log", AsCFunction(CallLogFunction), METH_FASTCALL,
     "call_log(handle) -> dict: the measurement's per-call record."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool AddMeasurementFunctions(PyObject* module) {
  return PyModule_AddFunctions(module, kFunctions) == 0;
}

}  // namespace torchscan::dispatch
