// The command-line functions of the library's CPython extension module
// (hooks_module.cc), with which `python -m torchscan_dispatch` parses and
// prints as the C++ `torchscan` does: one command-line model
// (tools/cli_model.h), one writer of the views and of compare's listing
// (tools/cli_outputs.h), one reading of --input-shape and --dtype
// (tools/cli_inputs.h) and of an error's cause line (tools/cli_errors.h).
//
//   parse_command_line(front_end, argv) -> dict
//       `argv` (a list of str, without the program name) parsed for
//       `front_end`, "torchscan" or "python": CommandLine's fields by its
//       field table ({"command": "", "inputs": ["m.pt"], "help": False,
//       "input_shape": "3,8", ...}, every option with its value or
//       default). A usage error is a ValueError with the model's one line
//       ("unknown option --jsn").
//   command_line_help(front_end) -> str
//       The --help text of `front_end`.
//   command_line_options() -> list[dict]
//       The options' table as data (cli::OptionInfo): name, flag, metavar,
//       kind, choices, output, torchscan, python, help.
//   compare_listing(diff) -> str
//       What `compare` prints of a diff (compare_reports' dict).
//   write_analysis_views(report, html, folded, title) -> (out, notes, error)
//   write_compare_views(diff, before, after, html, folded, title)
//       -> (out, notes, error)
//       tools/cli_outputs.h's --html and --folded files ("" not asked for,
//       "-" standard output): what went to standard output, the notes
//       ("torchscan: note: ..." lines) and the one-line error that stopped
//       the writing, or None. A report or diff the library cannot read is a
//       ValueError.
//   parse_input_shapes(text) -> list[list[int]]
//       --input-shape's value read by tools/cli_inputs.h; a ValueError
//       with its message otherwise.
//   parse_dtypes(text) -> list[str]
//       --dtype's value read by tools/cli_inputs.h, each dtype by its name
//       in torch ("float32"); a ValueError with its message otherwise.
//   one_line_cause(message) -> str
//       tools/cli_errors.h's line of an error message.

#ifndef TORCHSCAN_PYTHON_OPERATORS_CLI_FUNCTIONS_H_
#define TORCHSCAN_PYTHON_OPERATORS_CLI_FUNCTIONS_H_

#include "python/operators/python_objects.h"

namespace torchscan::dispatch {

// Adds the functions above to `module`; false with a Python error set on
// failure.
bool AddCliFunctions(PyObject* module);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_PYTHON_OPERATORS_CLI_FUNCTIONS_H_
