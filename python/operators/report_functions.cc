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
#include "python/operators/report_from_objects.h"
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

// NOTE [Report arguments read from their objects]
// A report argument whose record is known (a summary's AnalysisReport,
// compare's ComparableReports, a merge's RankReports, a roofline's
// FlopReport) is read straight from its Python objects by its field table
// (report_from_objects.h), not converted to JSON first. Every argument is
// checked as JSON data before any is read, so a value no JSON report can
// hold is the ValueError it was, whichever argument holds it; the reading
// errors then come in the order the JSON path gave them. The reading needs
// the GIL; the library's work after it runs without.

// `value` checked as JSON data, its bad values named from `name`.
bool CheckReportArgument(PyObject* value, absl::string_view name) {
  return CheckJsonData(value, name,
                       absl::StrCat(name, " is not a JSON report: "));
}

// `value` (checked) read as T; a ValueError with the reader's message.
template <typename T>
bool ReadReport(PyObject* value, absl::string_view name,
                std::optional<T>* out) {
  absl::StatusOr<T> record = FromPython<T>(value, name);
  if (!record.ok()) return RaiseValueError(record.status());
  out->emplace(*std::move(record));
  return true;
}

// A report's schema_version, read before anything else (compare.h's
// CompareReportDocuments): "<name>: expected an object, got list",
// "<name>.schema_version: is missing".
absl::StatusOr<report::Count> SchemaVersionOf(PyObject* value,
                                              absl::string_view name) {
  const PythonValue report(value, name);
  if (!report.is_dict()) return report.Expected("an object");
  static constexpr char kKey[] = "schema_version";
  PyObject* version = report_from_objects_internal::MemberOf(report, kKey);
  if (version == nullptr) {
    if (PyErr_Occurred())
      return report_from_objects_internal::TakePythonError();
    return report::FieldError(report::MemberPath(name, kKey), "is missing");
  }
  return PythonValue(version, report, kKey).Integer();
}

// What report::CheckRooflineDocument and report::render::CheckDocument
// ask of a document (checked): an object of its keys, each null but "kind"
// (its value) and "layers" (an empty array or object when it is one); for
// anything else, a value of its JSON type.
Json ShapeOf(PyObject* value) {
  const PythonValue document(value, "report");
  if (document.is_array()) return Json::array();
  if (!document.is_dict()) {
    Json scalar;
    if (!document.ToJsonStatus(&scalar).ok()) PyErr_Clear();
    return scalar;
  }
  Json shape = report_from_objects_internal::KeysOf(document);
  if (PyObject* kind =
          report_from_objects_internal::MemberOf(document, "kind")) {
    Json converted;
    if (ToJson(kind, "report.kind", &converted)) shape["kind"] = converted;
  }
  if (PyObject* layers =
          report_from_objects_internal::MemberOf(document, "layers")) {
    const PythonValue list(layers, document, "layers");
    if (list.is_array()) shape["layers"] = Json::array();
    if (list.is_dict()) shape["layers"] = Json::object();
  }
  PyErr_Clear();
  return shape;
}

// report/render/report_documents.h's ParseDocument on Python objects: the
// document (checked) read as the record of its kind, and `before` and
// `after` (nullptr when None) as the reports a diff was computed from.
bool ReadDocument(PyObject* document, PyObject* before, PyObject* after,
                  std::optional<report::render::ParsedDocument>* out) {
  using report::render::DocumentKind;
  absl::StatusOr<DocumentKind> kind = report::render::CheckDocument(
      ShapeOf(document), before != nullptr, after != nullptr);
  if (!kind.ok()) return RaiseValueError(kind.status());
  report::render::ParsedDocument parsed;
  switch (*kind) {
    case DocumentKind::kAnalysis: {
      std::optional<report::AnalysisReport> report;
      if (!ReadReport(document, "report", &report)) return false;
      parsed.report = *std::move(report);
      break;
    }
    case DocumentKind::kFlops: {
      std::optional<report::FlopReport> report;
      if (!ReadReport(document, "flop_report", &report)) return false;
      parsed.report = *std::move(report);
      break;
    }
    case DocumentKind::kDiff: {
      std::optional<report::ReportDiff> diff;
      if (!ReadReport(document, "diff", &diff)) return false;
      parsed.report = *std::move(diff);
      break;
    }
  }
  if (before != nullptr && (!ReadReport(before, "before", &parsed.before) ||
                            !ReadReport(after, "after", &parsed.after))) {
    return false;
  }
  out->emplace(std::move(parsed));
  return true;
}

// An optional report argument (checked): nullptr for None.
bool CheckOptionalReportArgument(PyObject* value, absl::string_view name) {
  return value == Py_None || CheckReportArgument(value, name);
}

PyObject* NoneToNull(PyObject* value) {
  return value == Py_None ? nullptr : value;
}

PyObject* Text(const std::string& text) {
  return PyUnicode_FromStringAndSize(text.data(), text.size());
}

PyObject* RenderSummary(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  Json options;
  std::optional<report::AnalysisReport> parsed;
  if (!CheckArguments(kExtensionModule, "render_summary", nargs, 2) ||
      !CheckReportArgument(args[0], "report") ||
      !ToJson(args[1], "options", &options) ||
      !ReadReport(args[0], "report", &parsed)) {
    return nullptr;
  }
  std::string text;
  const bool ok = WithoutGil(
      [&]() -> absl::StatusOr<std::string> {
        TS_ASSIGN_OR_RETURN(report::SummaryOptions summary,
                            ReadSummaryOptions(options));
        return report::RenderSummary(*parsed, summary);
      },
      &text, RaiseValueError);
  return ok ? Text(text) : nullptr;
}

// report::CompareReportDocuments' steps: both versions, their check, both
// reports.
PyObject* CompareReports(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!CheckArguments(kExtensionModule, "compare_reports", nargs, 2) ||
      !CheckReportArgument(args[0], "before") ||
      !CheckReportArgument(args[1], "after")) {
    return nullptr;
  }
  absl::StatusOr<report::Count> before_version =
      SchemaVersionOf(args[0], "before");
  if (!before_version.ok()) {
    return NoneOrRaise(RaiseValueError(before_version.status()));
  }
  absl::StatusOr<report::Count> after_version =
      SchemaVersionOf(args[1], "after");
  if (!after_version.ok()) {
    return NoneOrRaise(RaiseValueError(after_version.status()));
  }
  if (absl::Status versions =
          report::CheckSchemaVersions(*before_version, *after_version);
      !versions.ok()) {
    return NoneOrRaise(RaiseValueError(versions));
  }
  std::optional<report::ComparableReport> before, after;
  if (!ReadReport(args[0], "before", &before) ||
      !ReadReport(args[1], "after", &after)) {
    return nullptr;
  }
  report::ReportDiff diff;
  const bool ok =
      WithoutGil([&] { return report::CompareReports(*before, *after); }, &diff,
                 RaiseValueError);
  return ok ? ToPython(diff) : nullptr;
}

PyObject* RenderHtml(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  std::optional<Json> device;
  report::render::HtmlOptions options;
  if (!CheckArguments(kExtensionModule, "render_html", nargs, 5) ||
      !CheckReportArgument(args[0], "report") ||
      !CheckOptionalReportArgument(args[1], "before") ||
      !CheckOptionalReportArgument(args[2], "after") ||
      !Utf8(args[3], &options.title) ||
      (args[4] != Py_None && !ToJson(args[4], "device", &device.emplace()))) {
    return nullptr;
  }
  // The device first, then the document, as HtmlOfDocument's caller did.
  if (device) {
    absl::StatusOr<report::render::RooflineDevice> roofline =
        report::render::RooflineDeviceFromJson(*device);
    if (!roofline.ok()) return NoneOrRaise(RaiseValueError(roofline.status()));
    options.roofline = *std::move(roofline);
  }
  std::optional<report::render::ParsedDocument> parsed;
  if (!ReadDocument(args[0], NoneToNull(args[1]), NoneToNull(args[2]),
                    &parsed)) {
    return nullptr;
  }
  std::string html;
  const bool ok =
      WithoutGil([&] { return report::render::HtmlOfParsed(*parsed, options); },
                 &html, RaiseValueError);
  return ok ? Text(html) : nullptr;
}

PyObject* FoldedStacks(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  std::optional<report::render::ParsedDocument> parsed;
  if (!CheckArguments(kExtensionModule, "folded_stacks", nargs, 3) ||
      !CheckReportArgument(args[0], "report") ||
      !CheckOptionalReportArgument(args[1], "before") ||
      !CheckOptionalReportArgument(args[2], "after") ||
      !ReadDocument(args[0], NoneToNull(args[1]), NoneToNull(args[2]),
                    &parsed)) {
    return nullptr;
  }
  report::render::FoldedStacks folded;
  const bool ok =
      WithoutGil([&] { return report::render::FoldedOfParsed(*parsed); },
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
  std::string summary;
  std::optional<report::render::ParsedDocument> parsed;
  if (!CheckArguments(kExtensionModule, "list_diagnostics", nargs, 2) ||
      !CheckReportArgument(args[0], "report") || !Utf8(args[1], &summary) ||
      !ReadDocument(args[0], nullptr, nullptr, &parsed)) {
    return nullptr;
  }
  std::string listing;
  const bool ok = WithoutGil(
      [&] { return report::render::DiagnosticsOfParsed(*parsed, summary); },
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
  for (Py_ssize_t i = 0; i < count; ++i) {
    if (!Utf8(PyList_GetItem(args[1], i), &names[i]) ||
        !CheckReportArgument(PyList_GetItem(args[0], i), names[i])) {
      return nullptr;
    }
  }
  std::vector<report::RankReport> ranks;
  ranks.reserve(count);
  for (Py_ssize_t i = 0; i < count; ++i) {
    std::optional<report::RankReport> rank;
    if (!ReadReport(PyList_GetItem(args[0], i), names[i], &rank)) {
      return nullptr;
    }
    ranks.push_back(*std::move(rank));
  }
  report::JobReport job;
  const bool ok =
      WithoutGil([&] { return report::MergeRankReportsNamed(ranks, names); },
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
  Json device;
  if (!CheckArguments(kExtensionModule, "roofline", nargs, 2) ||
      !CheckReportArgument(args[0], "report") ||
      !ToJson(args[1], "device", &device)) {
    return nullptr;
  }
  // report::FlopReportForRoofline's steps, after the device's.
  absl::StatusOr<report::RooflineDevice> spec =
      device.is_string()
          ? report::RooflineDeviceNamed(device.get<std::string>())
          : report::RooflineDeviceFromJson(device);
  if (!spec.ok()) return NoneOrRaise(RaiseValueError(spec.status()));
  if (absl::Status shape = report::CheckRooflineDocument(ShapeOf(args[0]));
      !shape.ok()) {
    return NoneOrRaise(RaiseValueError(shape));
  }
  std::optional<report::FlopReport> flops;
  if (!ReadReport(args[0], "report", &flops)) return nullptr;
  Json result;
  const bool ok = WithoutGil(
      [&]() -> absl::StatusOr<Json> {
        return report::ToJson(report::ComputeRoofline(*flops, *spec));
      },
      &result, RaiseValueError);
  return ok ? FromJson(result) : nullptr;
}

// `torchscan roofline`'s output for python -m torchscan_dispatch, so that
// both command lines print the same bytes.
// report::render::RooflineOfDocument's steps: the device, then a job report
// or a FlopReport.
PyObject* RooflineListing(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  std::string device;
  if (!CheckArguments(kExtensionModule, "roofline_listing", nargs, 2) ||
      !CheckReportArgument(args[0], "report") || !Utf8(args[1], &device)) {
    return nullptr;
  }
  absl::StatusOr<report::RooflineDevice> spec =
      report::RooflineDeviceNamed(device);
  if (!spec.ok()) return NoneOrRaise(RaiseValueError(spec.status()));
  const Json shape = ShapeOf(args[0]);
  std::optional<report::JobReport> job;
  std::optional<report::FlopReport> flops;
  if (shape.is_object() && shape.value("kind", Json()) == "job_report") {
    if (!ReadReport(args[0], "job", &job)) return nullptr;
  } else {
    if (absl::Status checked = report::CheckRooflineDocument(shape);
        !checked.ok()) {
      return NoneOrRaise(RaiseValueError(checked));
    }
    if (!ReadReport(args[0], "report", &flops)) return nullptr;
  }
  report::render::RooflineOutput output;
  const bool ok = WithoutGil(
      [&]() -> absl::StatusOr<report::render::RooflineOutput> {
        return job ? report::render::RooflineOutputOf(*job, *spec)
                   : report::render::RooflineOutputOf(*flops, *spec);
      },
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
