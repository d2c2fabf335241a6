#include "python/operators/cli_functions.h"  // Python.h first

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "python/operators/report_objects.h"
#include "report/analysis_report.h"
#include "report/json_io.h"
#include "report/report_diff.h"
#include "tools/cli_errors.h"
#include "tools/cli_inputs.h"
#include "tools/cli_model.h"
#include "tools/cli_outputs.h"

namespace torchscan::dispatch {
namespace {

// "torchscan" or "python"; a ValueError otherwise.
bool FrontEndArgument(PyObject* value, cli::FrontEnd* out) {
  std::string name;
  if (!Utf8(value, &name)) return false;
  if (name == "torchscan" || name == "python") {
    *out = name == "torchscan" ? cli::kTorchscan : cli::kPythonModule;
    return true;
  }
  PyErr_SetString(PyExc_ValueError,
                  absl::StrCat("front_end must be 'torchscan' or 'python', "
                               "got '",
                               name, "'")
                      .c_str());
  return false;
}

PyObject* ParseCommandLine(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  cli::FrontEnd front_end;
  if (!CheckArguments(kExtensionModule, "parse_command_line", nargs, 2) ||
      !FrontEndArgument(args[0], &front_end)) {
    return nullptr;
  }
  if (!PyList_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError,
                    "parse_command_line(front_end, argv): argv is a list");
    return nullptr;
  }
  std::vector<std::string> argv(PyList_Size(args[1]));
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (!Utf8(PyList_GetItem(args[1], i), &argv[i])) return nullptr;
  }
  const absl::StatusOr<cli::CommandLine> parsed =
      cli::ParseCommandLine(front_end, argv);
  if (!parsed.ok()) {
    RaiseValueError(parsed.status());
    return nullptr;
  }
  return ToPython(*parsed);
}

PyObject* CommandLineHelp(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  cli::FrontEnd front_end;
  if (!CheckArguments(kExtensionModule, "command_line_help", nargs, 1) ||
      !FrontEndArgument(args[0], &front_end)) {
    return nullptr;
  }
  return PythonText(cli::Help(front_end));
}

PyObject* CommandLineOptions(PyObject*, PyObject* const*, Py_ssize_t nargs) {
  if (!CheckArguments(kExtensionModule, "command_line_options", nargs, 0)) {
    return nullptr;
  }
  return ToPython(cli::OptionTable());
}

PyObject* CompareListing(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  report::Json document;
  if (!CheckArguments(kExtensionModule, "compare_listing", nargs, 1) ||
      !ToJson(args[0], "diff", &document)) {
    return nullptr;
  }
  const absl::StatusOr<report::ReportDiff> diff =
      report::ReportDiffFromJson(document);
  if (!diff.ok()) {
    RaiseValueError(diff.status());
    return nullptr;
  }
  return PythonText(cli::CompareListing(*diff));
}

PyObject* ParseInputShapes(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  std::string text;
  if (!CheckArguments(kExtensionModule, "parse_input_shapes", nargs, 1) ||
      !Utf8(args[0], &text)) {
    return nullptr;
  }
  const absl::StatusOr<std::vector<std::vector<std::int64_t>>> shapes =
      cli::ParseInputShapes(text);
  if (!shapes.ok()) {
    RaiseValueError(shapes.status());
    return nullptr;
  }
  return ToPython(*shapes);
}

// Each dtype by its Python name (torch.float32 is "float32").
PyObject* ParseDtypes(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  std::string text;
  if (!CheckArguments(kExtensionModule, "parse_dtypes", nargs, 1) ||
      !Utf8(args[0], &text)) {
    return nullptr;
  }
  const absl::StatusOr<std::vector<c10::ScalarType>> dtypes =
      cli::ParseDtypes(text);
  if (!dtypes.ok()) {
    RaiseValueError(dtypes.status());
    return nullptr;
  }
  std::vector<std::string> names;
  for (c10::ScalarType dtype : *dtypes) {
    names.emplace_back(c10::getDtypeNames(dtype).first);
  }
  return ToPython(names);
}

PyObject* OneLineCause(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  std::string message;
  if (!CheckArguments(kExtensionModule, "one_line_cause", nargs, 1) ||
      !Utf8(args[0], &message)) {
    return nullptr;
  }
  return PythonText(cli::OneLineCause(message));
}

// (out, notes, error): what the views wrote to standard output, their
// notes, and the one-line error that stopped them (None when none did).
PyObject* ViewsResult(const std::ostringstream& out,
                      const std::ostringstream& notes,
                      const absl::Status& status) {
  OwnedRef out_text(PythonText(out.str()));
  OwnedRef notes_text(PythonText(notes.str()));
  OwnedRef error(status.ok() ? Py_NewRef(Py_None)
                             : PythonText(status.message()));
  if (!out_text || !notes_text || !error) return nullptr;
  return PyTuple_Pack(3, out_text.get(), notes_text.get(), error.get());
}

// `outputs` from the str arguments html, folded and title.
bool ViewArguments(PyObject* const* args, cli::ViewOutputs* outputs) {
  return Utf8(args[0], &outputs->html) && Utf8(args[1], &outputs->folded) &&
         Utf8(args[2], &outputs->title);
}

PyObject* WriteAnalysisViews(PyObject*, PyObject* const* args,
                             Py_ssize_t nargs) {
  report::Json document;
  cli::ViewOutputs outputs;
  if (!CheckArguments(kExtensionModule, "write_analysis_views", nargs, 4) ||
      !ToJson(args[0], "report", &document) ||
      !ViewArguments(args + 1, &outputs)) {
    return nullptr;
  }
  const absl::StatusOr<report::AnalysisReport> parsed =
      report::AnalysisReportFromJson(document);
  if (!parsed.ok()) {
    RaiseValueError(parsed.status());
    return nullptr;
  }
  std::ostringstream out, notes;
  const absl::Status status =
      cli::WriteAnalysisViews(*parsed, outputs, out, notes);
  return ViewsResult(out, notes, status);
}

PyObject* WriteCompareViews(PyObject*, PyObject* const* args,
                            Py_ssize_t nargs) {
  report::Json diff_document, before, after;
  cli::ViewOutputs outputs;
  if (!CheckArguments(kExtensionModule, "write_compare_views", nargs, 6) ||
      !ToJson(args[0], "diff", &diff_document) ||
      !ToJson(args[1], "before", &before) ||
      !ToJson(args[2], "after", &after) || !ViewArguments(args + 3, &outputs)) {
    return nullptr;
  }
  const absl::StatusOr<report::ReportDiff> diff =
      report::ReportDiffFromJson(diff_document);
  if (!diff.ok()) {
    RaiseValueError(diff.status());
    return nullptr;
  }
  std::ostringstream out, notes;
  const absl::Status status =
      cli::WriteCompareViews(*diff, report::DumpJson(before),
                             report::DumpJson(after), outputs, out, notes);
  return ViewsResult(out, notes, status);
}

PyObject* WriteRooflinePage(PyObject*, PyObject* const* args,
                            Py_ssize_t nargs) {
  report::Json document;
  std::string device, html, title;
  if (!CheckArguments(kExtensionModule, "write_roofline_page", nargs, 4) ||
      !ToJson(args[0], "report", &document) || !Utf8(args[1], &device) ||
      !Utf8(args[2], &html) || !Utf8(args[3], &title)) {
    return nullptr;
  }
  std::ostringstream out, notes;
  const absl::Status status =
      cli::WriteRooflinePage(document, device, html, title, out);
  return ViewsResult(out, notes, status);
}

PyMethodDef kFunctions[] = {
    {"parse_command_line", AsCFunction(ParseCommandLine), METH_FASTCALL,
     "parse_command_line(front_end, argv) -> dict: tools/cli_model.h's "
     "parse result; front_end 'torchscan' or 'python'."},
    {"command_line_help", AsCFunction(CommandLineHelp), METH_FASTCALL,
     "command_line_help(front_end) -> str: the --help text."},
    {"command_line_options", AsCFunction(CommandLineOptions), METH_FASTCALL,
     "command_line_options() -> list[dict]: the options' table as data."},
    {"compare_listing", AsCFunction(CompareListing), METH_FASTCALL,
     "compare_listing(diff) -> str: what `compare` prints of a diff."},
    {"write_analysis_views", AsCFunction(WriteAnalysisViews), METH_FASTCALL,
     "write_analysis_views(report, html, folded, title) -> (out, notes, "
     "error): tools/cli_outputs.h's --html and --folded of an analysis."},
    {"write_compare_views", AsCFunction(WriteCompareViews), METH_FASTCALL,
     "write_compare_views(diff, before, after, html, folded, title) -> (out, "
     "notes, error): the --html and --folded of compare."},
    {"write_roofline_page", AsCFunction(WriteRooflinePage), METH_FASTCALL,
     "write_roofline_page(report, device_model, html, title) -> (out, notes, "
     "error): the --html of roofline, the report's page on the device's "
     "roofline."},
    {"parse_input_shapes", AsCFunction(ParseInputShapes), METH_FASTCALL,
     "parse_input_shapes(text) -> list[list[int]]: --input-shape's value."},
    {"parse_dtypes", AsCFunction(ParseDtypes), METH_FASTCALL,
     "parse_dtypes(text) -> list[str]: --dtype's value, Python's names."},
    {"one_line_cause", AsCFunction(OneLineCause), METH_FASTCALL,
     "one_line_cause(message) -> str: the line of an error that says what "
     "went wrong."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool AddCliFunctions(PyObject* module) {
  return PyModule_AddFunctions(module, kFunctions) == 0;
}

}  // namespace torchscan::dispatch
