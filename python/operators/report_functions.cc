#include "python/operators/report_functions.h"  // Python.h first

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "python/operators/report_objects.h"
#include "report/analysis_report.h"
#include "report/compare.h"
#include "report/device_table.h"
#include "report/flop_report.h"
#include "report/job_merge.h"
#include "report/json_io.h"
#include "report/json_reader.h"
#include "report/render/report_documents.h"
#include "report/render/roofline_listing.h"
#include "report/render/roofline_plot.h"
#include "report/roofline.h"
#include "report/summary.h"

namespace torchscan::dispatch {
namespace {

using report::Json;
using report::JsonObject;
using report::JsonValue;

// Options: {"wrap_mode": str|null, "max_depth": int|null,
//           "receptive_field": bool, "effective_rf_stats": bool}, each
// optional (absent: SummaryOptions' default).
absl::StatusOr<report::SummaryOptions> ReadSummaryOptions(
    const Json& document) {
  TS_ASSIGN_OR_RETURN(JsonObject options,
                      JsonValue(document, "options").Object());
  TS_RETURN_IF_ERROR(options.RejectUnknownKeys(
      {"wrap_mode", "max_depth", "receptive_field", "effective_rf_stats"}));
  report::SummaryOptions summary;
  if (std::optional<JsonValue> wrap = options.OptionalMember("wrap_mode")) {
    summary.wrap_mode = std::nullopt;
    if (!wrap->is_null()) {
      TS_ASSIGN_OR_RETURN(summary.wrap_mode, wrap->String());
    }
  }
  if (std::optional<JsonValue> depth = options.OptionalMember("max_depth");
      depth && !depth->is_null()) {
    TS_ASSIGN_OR_RETURN(summary.max_depth, depth->Int64());
  }
  if (options.Contains("receptive_field")) {
    TS_ASSIGN_OR_RETURN(summary.receptive_field,
                        options.Bool("receptive_field"));
  }
  if (options.Contains("effective_rf_stats")) {
    TS_ASSIGN_OR_RETURN(summary.effective_rf_stats,
                        options.Bool("effective_rf_stats"));
  }
  return summary;
}

// A report argument as JSON; `name` starts the path of a bad value.
bool ReportArgument(PyObject* value, absl::string_view name, Json* out) {
  return ToJson(value, name, out,
                absl::StrCat(name, " is not a JSON report: "));
}

// `before` / `after`: None (nullopt) or a report.
bool OptionalReportArgument(PyObject* value, absl::string_view name,
                            std::optional<Json>* out) {
  if (value == Py_None) return true;
  return ReportArgument(value, name, &out->emplace());
}

PyObject* Text(const std::string& text) {
  return PyUnicode_FromStringAndSize(text.data(), text.size());
}

PyObject* RenderSummary(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  Json report, options;
  if (!CheckArguments(kExtensionModule, "render_summary", nargs, 2) ||
      !ReportArgument(args[0], "report", &report) ||
      !ToJson(args[1], "options", &options)) {
    return nullptr;
  }
  std::string text;
  const bool ok = WithoutGil(
      [&]() -> absl::StatusOr<std::string> {
        TS_ASSIGN_OR_RETURN(report::AnalysisReport parsed,
                            report::AnalysisReportFromJson(report));
        TS_ASSIGN_OR_RETURN(report::SummaryOptions summary,
                            ReadSummaryOptions(options));
        return report::RenderSummary(parsed, summary);
      },
      &text, RaiseValueError);
  return ok ? Text(text) : nullptr;
}

PyObject* CompareReports(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  Json before, after;
  if (!CheckArguments(kExtensionModule, "compare_reports", nargs, 2) ||
      !ReportArgument(args[0], "before", &before) ||
      !ReportArgument(args[1], "after", &after)) {
    return nullptr;
  }
  report::ReportDiff diff;
  const bool ok =
      WithoutGil([&] { return report::CompareReportDocuments(before, after); },
                 &diff, RaiseValueError);
  return ok ? ToPython(diff) : nullptr;
}

PyObject* RenderHtml(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  Json document;
  std::optional<Json> before, after;
  std::optional<Json> device;
  report::render::HtmlOptions options;
  if (!CheckArguments(kExtensionModule, "render_html", nargs, 5) ||
      !ReportArgument(args[0], "report", &document) ||
      !OptionalReportArgument(args[1], "before", &before) ||
      !OptionalReportArgument(args[2], "after", &after) ||
      !Utf8(args[3], &options.title) ||
      (args[4] != Py_None && !ToJson(args[4], "device", &device.emplace()))) {
    return nullptr;
  }
  std::string html;
  const bool ok = WithoutGil(
      [&]() -> absl::StatusOr<std::string> {
        if (device) {
          TS_ASSIGN_OR_RETURN(options.roofline,
                              report::render::RooflineDeviceFromJson(*device));
        }
        return report::render::HtmlOfDocument(
            document, before ? &*before : nullptr, after ? &*after : nullptr,
            options);
      },
      &html, RaiseValueError);
  return ok ? Text(html) : nullptr;
}

PyObject* FoldedStacks(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  Json document;
  std::optional<Json> before, after;
  if (!CheckArguments(kExtensionModule, "folded_stacks", nargs, 3) ||
      !ReportArgument(args[0], "report", &document) ||
      !OptionalReportArgument(args[1], "before", &before) ||
      !OptionalReportArgument(args[2], "after", &after)) {
    return nullptr;
  }
  report::render::FoldedStacks folded;
  const bool ok = WithoutGil(
      [&] {
        return report::render::FoldedOfDocument(
            document, before ? &*before : nullptr, after ? &*after : nullptr);
      },
      &folded, RaiseValueError);
  if (!ok) return nullptr;
  OwnedRef notes(PyList_New(0));
  if (!notes) return nullptr;
  for (const std::string& note : folded.notes) {
    OwnedRef item(Text(note));
    if (!item || PyList_Append(notes.get(), item.get()) < 0) return nullptr;
  }
  OwnedRef text(Text(folded.text));
  if (!text) return nullptr;
  return PyTuple_Pack(3, text.get(), folded.partial ? Py_True : Py_False,
                      notes.get());
}

PyObject* ListDiagnostics(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  Json document;
  std::string summary;
  if (!CheckArguments(kExtensionModule, "list_diagnostics", nargs, 2) ||
      !ReportArgument(args[0], "report", &document) ||
      !Utf8(args[1], &summary)) {
    return nullptr;
  }
  std::string listing;
  const bool ok = WithoutGil(
      [&] { return report::render::DiagnosticsOfDocument(document, summary); },
      &listing, RaiseValueError);
  return ok ? Text(listing) : nullptr;
}

// `reports` and `names`: lists of one length, of reports and of str.
PyObject* MergeRankReports(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!CheckArguments(kExtensionModule, "merge_rank_reports", nargs, 2))
    return nullptr;
  if (!PyList_Check(args[0]) || !PyList_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError,
                    "merge_rank_reports(reports, names) takes two lists");
    return nullptr;
  }
  const Py_ssize_t count = PyList_Size(args[0]);
  if (PyList_Size(args[1]) != count) {
    PyErr_SetString(PyExc_ValueError,
                    "merge_rank_reports: one name per report is needed");
    return nullptr;
  }
  std::vector<std::string> names(count);
  std::vector<Json> reports(count);
  for (Py_ssize_t i = 0; i < count; ++i) {
    if (!Utf8(PyList_GetItem(args[1], i), &names[i]) ||
        !ReportArgument(PyList_GetItem(args[0], i), names[i], &reports[i])) {
      return nullptr;
    }
  }
  report::JobReport job;
  const bool ok =
      WithoutGil([&] { return report::MergeRankReportsJson(reports, names); },
                 &job, RaiseValueError);
  return ok ? ToPython(job) : nullptr;
}

// The row of the library's device table that `name` names, as its JSON
// (the same row torchscan_dispatch.devices finds: tests/python/
// test_device_table.py), or None.
PyObject* DeviceModel(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  std::string name;
  if (!CheckArguments(kExtensionModule, "device_model", nargs, 1) ||
      !Utf8(args[0], &name)) {
    return nullptr;
  }
  const report::DeviceModel* device = report::FindDeviceModel(name);
  if (device == nullptr) Py_RETURN_NONE;
  return FromJson(report::ToJson(*device));
}

// `device`: a device table name, or a device document ({name, peak_flops,
// memory_bandwidth, source?}).
PyObject* Roofline(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  Json document, device;
  if (!CheckArguments(kExtensionModule, "roofline", nargs, 2) ||
      !ReportArgument(args[0], "report", &document) ||
      !ToJson(args[1], "device", &device)) {
    return nullptr;
  }
  Json result;
  const bool ok = WithoutGil(
      [&]() -> absl::StatusOr<Json> {
        report::RooflineDevice spec;
        if (device.is_string()) {
          TS_ASSIGN_OR_RETURN(
              spec, report::RooflineDeviceNamed(device.get<std::string>()));
        } else {
          TS_ASSIGN_OR_RETURN(spec, report::RooflineDeviceFromJson(device));
        }
        TS_ASSIGN_OR_RETURN(report::FlopReport flops,
                            report::FlopReportForRoofline(document));
        return report::ToJson(report::ComputeRoofline(flops, spec));
      },
      &result, RaiseValueError);
  return ok ? FromJson(result) : nullptr;
}

// `torchscan roofline`'s output for python -m torchscan_dispatch, so that
// both command lines print the same bytes.
PyObject* RooflineListing(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  Json document;
  std::string device;
  if (!CheckArguments(kExtensionModule, "roofline_listing", nargs, 2) ||
      !ReportArgument(args[0], "report", &document) ||
      !Utf8(args[1], &device)) {
    return nullptr;
  }
  report::render::RooflineOutput output;
  const bool ok = WithoutGil(
      [&] { return report::render::RooflineOfDocument(document, device); },
      &output, RaiseValueError);
  if (!ok) return nullptr;
  OwnedRef listing(Text(output.listing));
  OwnedRef json(Text(output.json));
  if (!listing || !json) return nullptr;
  return PyTuple_Pack(2, listing.get(), json.get());
}

PyMethodDef kFunctions[] = {
    {"render_summary", AsCFunction(RenderSummary), METH_FASTCALL,
     "render_summary(report, options) -> str: what summary() prints."},
    {"compare_reports", AsCFunction(CompareReports), METH_FASTCALL,
     "compare_reports(before, after) -> dict: the diff of two reports."},
    {"render_html", AsCFunction(RenderHtml), METH_FASTCALL,
     "render_html(report, before, after, title, device) -> str: the HTML "
     "page; device None or {name, peak_flops, memory_bandwidth}."},
    {"folded_stacks", AsCFunction(FoldedStacks), METH_FASTCALL,
     "folded_stacks(report, before, after) -> (text, partial, notes)."},
    {"list_diagnostics", AsCFunction(ListDiagnostics), METH_FASTCALL,
     "list_diagnostics(report, summary) -> str: the diagnostics listing."},
    {"merge_rank_reports", AsCFunction(MergeRankReports), METH_FASTCALL,
     "merge_rank_reports(reports, names) -> dict: one job report."},
    {"device_model", AsCFunction(DeviceModel), METH_FASTCALL,
     "device_model(name) -> dict | None: the device table's row of name."},
    {"roofline", AsCFunction(Roofline), METH_FASTCALL,
     "roofline(report, device) -> dict: report/roofline.h's roofline of a "
     "FlopReport; device a table name or {name, peak_flops, "
     "memory_bandwidth}."},
    {"roofline_listing", AsCFunction(RooflineListing), METH_FASTCALL,
     "roofline_listing(report, device_name) -> (listing, json): what "
     "`torchscan roofline` prints and writes."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool AddReportFunctions(PyObject* module) {
  return PyModule_AddFunctions(module, kFunctions) == 0;
}

}  // namespace torchscan::dispatch
