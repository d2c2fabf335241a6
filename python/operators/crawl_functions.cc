#include "python/operators/crawl_functions.h"  // Python.h first

#include <c10/util/Exception.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "crawl/crawl_document.h"
#include "crawl/crawl_record.h"
#include "crawl/recover_from_graph.h"
#include "python/operators/open_measurements.h"
#include "python/operators/report_from_objects.h"
#include "python/operators/report_objects.h"
#include "report/aggregate.h"
#include "report/analysis_report.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "report/layer_report.h"
#include "report/strict.h"
#include "torchscan/layer_call_flops.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/layer_call_flops.h"

namespace torchscan::dispatch {
namespace {

// What measurement `handle` counted: its operator FlopReport and each layer
// call's operator FLOPs. The measurement's own failures (an unknown handle,
// a report that cannot be built) are c10::Errors, RuntimeErrors in Python
// as the operator raised them; the record's are ValueErrors.
struct MeasuredFlops {
  report::FlopReport operator_flops;
  std::map<std::size_t, report::LayerOperatorFlops> layer_calls;
};

MeasuredFlops ReadMeasuredFlops(std::int64_t handle) {
  CountingSession& session = OpenMeasurements::Get().Session(handle);
  absl::StatusOr<report::FlopReport> flops = session.BuildReport();
  TORCH_CHECK(flops.ok(), "torchscan: ", flops.status().ToString());
  absl::StatusOr<std::map<std::size_t, LayerCallFlops>> layer_call_flops =
      session.BuildLayerCallFlops();
  TORCH_CHECK(layer_call_flops.ok(),
              "torchscan: ", layer_call_flops.status().ToString());
  return {*std::move(flops),
          ToLayerOperatorFlops(*std::move(layer_call_flops))};
}

// NOTE [The front end's parts cross as objects]
// The ExportedProgram crawler keeps its crawl record, its layer records,
// the context and the input metadata as Python objects while it walks the
// graph. They are read here by their field tables (report_from_objects.h),
// so the report is assembled by BuildAnalysisReport, as every other front
// end's is, and handed back as Python objects made from its table.

// The crawl record argument, checked as JSON data (report_from_objects.h's
// precondition), then read by its table.
bool CrawlArgument(PyObject* value, crawl::CrawlDocument* out) {
  if (!CheckJsonData(value, "crawl", "crawl is not a JSON crawl record: ")) {
    return false;
  }
  absl::StatusOr<crawl::CrawlDocument> document =
      FromPython<crawl::CrawlDocument>(value, "crawl");
  if (!document.ok()) return RaiseValueError(document.status());
  *out = *std::move(document);
  return true;
}

// The record's front-end parts from `context`, `inputs` and `layers`, each
// checked as JSON data first.
bool ReadFrontEndParts(PyObject* const* args, report::AnalysisParts* parts) {
  constexpr const char* kNames[] = {"context", "inputs", "layers"};
  for (int i = 0; i < 3; ++i) {
    if (!CheckJsonData(args[i], kNames[i],
                       absl::StrCat(kNames[i], " is not JSON data: "))) {
      return false;
    }
  }
  absl::StatusOr<report::ReportContext> context =
      FromPython<report::ReportContext>(args[0], "context");
  if (!context.ok()) return RaiseValueError(context.status());
  absl::StatusOr<report::InputsMetadata> inputs =
      FromPython<report::InputsMetadata>(args[1], "inputs");
  if (!inputs.ok()) return RaiseValueError(inputs.status());
  absl::StatusOr<std::vector<report::LayerReport>> layers =
      FromPython<std::vector<report::LayerReport>>(args[2], "layers");
  if (!layers.ok()) return RaiseValueError(layers.status());
  parts->context = *std::move(context);
  parts->inputs = *std::move(inputs);
  parts->layers = *std::move(layers);
  return true;
}

// The report of `record` with the front end's parts, as Python's
// (report, incomplete) pair: incomplete is strict mode's message or None.
PyObject* ReportOf(absl::StatusOr<crawl::CrawlRecord> record,
                   report::AnalysisParts front_end) {
  report::AnalysisReport built;
  const bool ok = WithoutGil(
      [&]() -> absl::StatusOr<report::AnalysisReport> {
        TS_RETURN_IF_ERROR(record.status());
        if (record->parts.layers.size() != front_end.layers.size()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "crawl.layer_count: ", record->parts.layers.size(),
              ", but the crawl has ", front_end.layers.size(), " layers"));
        }
        record->parts.context = std::move(front_end.context);
        record->parts.inputs = std::move(front_end.inputs);
        record->parts.layers = std::move(front_end.layers);
        return crawl::BuildAnalysisReport(*std::move(record));
      },
      &built, RaiseValueError);
  if (!ok) return nullptr;
  OwnedRef report(ToPython(built));
  if (!report) return nullptr;
  OwnedRef incomplete(
      report::IsIncomplete(built)
          ? FromJson(report::Json(report::IncompleteAnalysisMessage(built)))
          : Py_NewRef(Py_None));
  if (!incomplete) return nullptr;
  return PyTuple_Pack(2, report.get(), incomplete.get());
}

PyObject* CrawlReport(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  crawl::CrawlDocument crawl;
  report::AnalysisParts front_end;
  if (!CheckArguments(kExtensionModule, "crawl_report", nargs, 4) ||
      !CrawlArgument(args[0], &crawl) ||
      !ReadFrontEndParts(args + 1, &front_end)) {
    return nullptr;
  }
  return ReportOf(crawl::CrawlRecordOf(std::move(crawl)), std::move(front_end));
}

PyObject* MeasuredCrawlReport(PyObject*, PyObject* const* args,
                              Py_ssize_t nargs) {
  std::int64_t handle = 0;
  crawl::CrawlDocument crawl;
  report::AnalysisParts front_end;
  if (!CheckArguments(kExtensionModule, "measured_crawl_report", nargs, 5) ||
      !Handle(args[0], &handle) || !CrawlArgument(args[1], &crawl) ||
      !ReadFrontEndParts(args + 2, &front_end)) {
    return nullptr;
  }
  // The record's own errors first: the measurement is read only for a
  // record that can take its FLOPs.
  if (absl::Status checked = crawl::CheckMeasuredDocument(crawl);
      !checked.ok()) {
    RaiseValueError(checked);
    return nullptr;
  }
  crawl::CrawlRecord record;
  const bool ok = WithoutGil(
      [&]() -> absl::StatusOr<crawl::CrawlRecord> {
        MeasuredFlops measured = ReadMeasuredFlops(handle);
        return crawl::MeasuredCrawlRecordOf(std::move(crawl),
                                            std::move(measured.operator_flops),
                                            std::move(measured.layer_calls));
      },
      &record, RaiseValueError);
  if (!ok) return nullptr;
  return ReportOf(std::move(record), std::move(front_end));
}

PyObject* RecoverAttributes(PyObject*, PyObject* const* args,
                            Py_ssize_t nargs) {
  if (!CheckArguments(kExtensionModule, "recover_attributes", nargs, 1)) {
    return nullptr;
  }
  if (!CheckJsonData(args[0], "graph", "graph is not JSON data: ")) {
    return nullptr;
  }
  absl::StatusOr<crawl::ModuleGraph> graph =
      FromPython<crawl::ModuleGraph>(args[0], "graph");
  if (!graph.ok()) {
    RaiseValueError(graph.status());
    return nullptr;
  }
  return ToPython(crawl::RecoverAttributes(*graph));
}

PyMethodDef kFunctions[] = {
    {"crawl_report", AsCFunction(CrawlReport), METH_FASTCALL,
     "crawl_report(crawl, context, inputs, layers) -> (report, incomplete): "
     "the AnalysisReport of a crawl record and the front end's parts; "
     "incomplete is strict mode's message, or None."},
    {"measured_crawl_report", AsCFunction(MeasuredCrawlReport), METH_FASTCALL,
     "measured_crawl_report(handle, crawl, context, inputs, layers) -> "
     "(report, incomplete): the same, operator FLOPs from the measurement."},
    {"recover_attributes", AsCFunction(RecoverAttributes), METH_FASTCALL,
     "recover_attributes(graph) -> {values, unrecovered}: a module "
     "family's attributes that its call's graph shows, and those it does "
     "not."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool AddCrawlFunctions(PyObject* module) {
  return PyModule_AddFunctions(module, kFunctions) == 0;
}

}  // namespace torchscan::dispatch
