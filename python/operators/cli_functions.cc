#include "python/operators/cli_functions.h"  // Python.h first

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "python/operators/report_objects.h"
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
