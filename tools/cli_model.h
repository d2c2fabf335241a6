// The command-line model: every command and option of both command lines,
// `torchscan` (tools/torchscan_main.cc) and `python -m torchscan_dispatch`
// (python/torchscan_dispatch/cli.py), declared once, and the one parser,
// help text and usage errors derived from that declaration.
//
// A row of CommandLine::kOptions names the parse result's member, the flag
// (`--input-shape`; `--input_shape` is the same flag), the value's name in
// the help, which command lines take it, and its help. Everything else is
// derived from the member's type and initializer:
//
//   bool                      a switch: --strict, --strict=true|false,
//                             --nostrict
//   std::string               a value: --json PATH or --json=PATH; with
//                             Choices("full|structure") one of those words
//   std::int64_t              an integer value (--max-depth 2)
//   std::vector<std::string>  a value that may be repeated, in order
//                             (--kwarg a=1 --kwarg b=2)
//   default                   the member's initializer
//
// Adding an option is one row (and its member): both command lines parse
// it, both helps list it, and Python reads it as an attribute of the parse
// result (the extension module's parse_command_line, which converts
// CommandLine by the field table kFields, itself derived from kOptions).
//
//   const std::vector<std::string> words(argv + 1, argv + argc);
//   absl::StatusOr<CommandLine> args = ParseCommandLine(kTorchscan, words);
//   if (!args.ok()) ...  // one line: "unknown option --jsn", ...
//
// Parsing rules, the same on both command lines: an option is `--name`,
// `--name=value` or `--name value` (one dash also works, as abseil's flags
// allowed; a next word starting with "--" is no value); '-' and '_' in
// names are the same; `--` ends the options; the
// last of a repeated non-repeatable option wins; words that are not options
// are inputs, the first of which may name a command (compare, merge,
// roofline). `--help` (or `-h`) asks for the help, which the caller prints
// (Help) before checking anything else.
//
// Errors (InvalidArgument, one line, naming the option and the cause), the
// words first, then the values, then the command's inputs:
//   unknown option --jsn
//   --kwarg is an option of python -m torchscan_dispatch, not of torchscan
//   --json needs a value (PATH)
//   bad --max-depth 'x': expected an integer
//   bad --strict 'maybe': expected true or false
//   --mode must be 'full' or 'structure', got 'fast'
//   only one of --json, --html and --folded can be '-' (standard output)
//   usage: torchscan compare BEFORE.json AFTER.json [--json -|PATH]
//   roofline needs --device-model NAME (a device table name, such as "H100
//   SXM")
//   roofline does not take --folded (only an analysis and compare do)
// Torch-free.

#ifndef TORCHSCAN_TOOLS_CLI_MODEL_H_
#define TORCHSCAN_TOOLS_CLI_MODEL_H_

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "report/field_table.h"

namespace torchscan::cli {

// The command lines an option or a command belongs to (a bit set).
enum FrontEnd : unsigned {
  kTorchscan = 1,     // the C++ `torchscan`
  kPythonModule = 2,  // `python -m torchscan_dispatch`
  kBoth = kTorchscan | kPythonModule,
};

// The program name of a front end, as its help and usage errors write it.
absl::string_view ProgramName(FrontEnd front_end);

// What an option's value selects besides its own member.
enum class Role {
  kPlain,
  // An output file of the command (--json, --html, --folded): '-' writes
  // it to standard output instead of the table, and only one can.
  kOutput,
};

struct CommandLine;

// One row of CommandLine::kOptions: `member` of CommandLine, as its field
// table writes it (name) and as the command lines spell it (flag).
template <typename M>
struct OptionRow {
  const char* name;
  M CommandLine::*member;
  const char* flag;
  const char* metavar;
  unsigned front_ends;
  const char* help;
  const char* choices = "";
  Role role = Role::kPlain;

  // This row, whose value is one of `words` ("a|b").
  constexpr OptionRow Choices(const char* words) const {
    OptionRow row = *this;
    row.choices = words;
    return row;
  }
  // This row, an output file (Role::kOutput).
  constexpr OptionRow Output() const {
    OptionRow row = *this;
    row.role = Role::kOutput;
    return row;
  }
};

template <typename M>
constexpr OptionRow<M> Opt(const char* name, M CommandLine::*member,
                           const char* flag, const char* metavar,
                           unsigned front_ends, const char* help) {
  return OptionRow<M>{name, member, flag, metavar, front_ends, help};
}

// The typed parse result: the command, its inputs, and one member per
// option (its default when the option is absent).
struct CommandLine {
  // "" (an analysis), "compare", "merge" or "roofline".
  std::string command;
  // The words that are not options, the command's name left out.
  std::vector<std::string> inputs;
  // --help or -h.
  bool help = false;

  std::string input_shape;
  std::string dtype;
  std::string device;
  std::string mode = "full";
  bool strict = false;
  std::string json;
  std::string html;
  std::string folded;
  std::int64_t max_depth = -1;
  bool receptive_field = false;
  bool effective_rf_stats = false;
  std::string device_model;
  bool allow_missing = false;
  std::string example;
  bool list_examples = false;
  std::vector<std::string> kwarg;
  bool trust_file = false;
  std::vector<std::string> imports;
  bool verbose = false;

  bool operator==(const CommandLine&) const = default;

  // NOTE [One declaration of the command line]
  // Both command lines used to declare their options apart (abseil flags in
  // torchscan_main.cc, argparse in cli.py) and agreed only because tests
  // compared them: a new option was six edits in two languages, and the two
  // helps, parsing rules and usage errors had drifted. This table is the
  // one declaration; the parser, the help, the usage errors, the field
  // table (hence the Python objects) and the tests' generated command lines
  // are derived from it.
  static constexpr auto kOptions = std::make_tuple(
      Opt("input_shape", &CommandLine::input_shape, "input-shape", "SHAPES",
          kBoth,
          "input shape(s) without the batch dimension: 3,224,224; several "
          "inputs separated by ';' (3,32,32;10)"),
      Opt("dtype", &CommandLine::dtype, "dtype", "DTYPES", kBoth,
          "dtype(s) of the generated inputs: float32, float64, float16, "
          "bfloat16, int64, int32, int16, int8, uint8, bool; one for all "
          "inputs or one per input, ';'-separated"),
      Opt("device", &CommandLine::device, "device", "DEVICE", kBoth,
          "device of the generated inputs (and of a .pt2 program's or a "
          "factory's tensors): cpu, cuda:0, meta, ..."),
      Opt("mode", &CommandLine::mode, "mode", "MODE", kBoth,
          "full, or structure (shapes and parameters only)")
          .Choices("full|structure"),
      Opt("strict", &CommandLine::strict, "strict", "", kBoth,
          "exit with status 1 when the analysis is incomplete"),
      Opt("json", &CommandLine::json, "json", "PATH", kBoth,
          "write the JSON report to this file ('-': standard output, "
          "instead of the table)")
          .Output(),
      Opt("html", &CommandLine::html, "html", "PATH", kBoth,
          "write the report as one self-contained HTML page to this file "
          "('-': standard output)")
          .Output(),
      Opt("folded", &CommandLine::folded, "folded", "PATH", kBoth,
          "write folded stacks of operator FLOPs by module path (for "
          "flamegraph.pl, speedscope) to this file ('-': standard output)")
          .Output(),
      Opt("max_depth", &CommandLine::max_depth, "max-depth", "N", kBoth,
          "show layers down to this depth only"),
      Opt("receptive_field", &CommandLine::receptive_field, "receptive-field",
          "", kBoth, "add the receptive-field column"),
      Opt("effective_rf_stats", &CommandLine::effective_rf_stats,
          "effective-rf-stats", "", kBoth,
          "with --receptive-field: effective stride and padding"),
      Opt("device_model", &CommandLine::device_model, "device-model", "NAME",
          kBoth,
          "roofline, merge: the device table's row to bound the time on "
          "(\"H100 SXM\", \"NVIDIA H100 80GB HBM3\"; exact names only)"),
      Opt("allow_missing", &CommandLine::allow_missing, "allow-missing", "",
          kTorchscan,
          "merge: exit 0 even when ranks of the job have no report (the job "
          "report lists them and its total is partial)"),
      Opt("example", &CommandLine::example, "example", "NAME", kTorchscan,
          "analyse a built-in example model"),
      Opt("list_examples", &CommandLine::list_examples, "list-examples", "",
          kTorchscan, "list the built-in example models"),
      Opt("kwarg", &CommandLine::kwarg, "kwarg", "NAME=VALUE", kPythonModule,
          "passed to a factory (a Python literal, else a string); repeatable"),
      Opt("trust_file", &CommandLine::trust_file, "trust-file", "",
          kPythonModule,
          "load a .pt2 with torch.export.load, which runs code the file "
          "holds (pickles, packaged libraries): only for files you would run "
          "as code (docs/cli.md, 'Model files are data')"),
      Opt("imports", &CommandLine::imports, "import", "MODULE", kPythonModule,
          "import MODULE before reading the model (a package that registers "
          "the pytree types of a .pt2's inputs or outputs, such as "
          "transformers); repeatable"),
      Opt("verbose", &CommandLine::verbose, "verbose", "", kPythonModule,
          "also print what torch printed while loading the model"));

  // The field table (report/field_table.h): command, inputs, help and one
  // field per option, every one always written.
  static constexpr auto kFields = std::tuple_cat(
      std::make_tuple(report::Field("command", &CommandLine::command),
                      report::Field("inputs", &CommandLine::inputs),
                      report::Field("help", &CommandLine::help)),
      std::apply(
          [](const auto&... row) {
            return std::make_tuple(report::Field(row.name, row.member)...);
          },
          kOptions));
};

// One command: the first input word that names it, what follows it, and
// what it needs.
struct CommandRow {
  const char* name;  // "" for an analysis (no command word)
  unsigned front_ends;
  // The inputs and options, as usage errors and the help write them.
  const char* synopsis;
  // How many inputs it takes; max_inputs -1: no limit. torchscan's
  // analysis takes none with --example, which its main checks.
  int min_inputs;
  int max_inputs;
  // The flag of an option the command needs ("" none), and what to say of
  // it.
  const char* needs_flag;
  const char* needs_note;
  const char* help;
  // The flags of the options the command reads, space-separated. Any other
  // option of its command line is a usage error, never silently ignored.
  const char* options;
};

// Whether `command` reads the option `flag` ("json").
bool CommandTakes(const CommandRow& command, absl::string_view flag);

// Every command of either command line, analyses first.
absl::Span<const CommandRow> Commands();

// The command `args` ran (its row of Commands()) for `front_end`.
const CommandRow& CommandOf(const CommandLine& args, FrontEnd front_end);

// `argv` without the program name, parsed for `front_end` (see the file
// comment); with --help, only the options before it need be right.
absl::StatusOr<CommandLine> ParseCommandLine(
    FrontEnd front_end, absl::Span<const std::string> argv);

// "usage: PROGRAM SYNOPSIS", of `command` on `front_end`.
std::string UsageLine(FrontEnd front_end, const CommandRow& command);

// The usage error of an analysis given no model or several: its usage
// line, pointing at --help for the other commands.
std::string AnalysisUsage(FrontEnd front_end);

// The --help text of `front_end`: its commands, then its options, one line
// per option that both command lines take, word for word the same on both.
std::string Help(FrontEnd front_end);

// One row of CommandLine::kOptions as data, for what lists the table (the
// Python tests that generate command lines from it).
struct OptionInfo {
  std::string name;
  std::string flag;
  std::string metavar;
  // "switch", "text", "integer" or "repeated" (the member's type).
  std::string kind;
  std::string choices;  // "full|structure", or ""
  bool output = false;  // Role::kOutput
  bool torchscan = false;
  bool python = false;
  std::string help;
  // The commands that read it ("" the analysis), on either command line.
  std::vector<std::string> commands;

  static constexpr auto kFields =
      std::make_tuple(report::Field("name", &OptionInfo::name),
                      report::Field("flag", &OptionInfo::flag),
                      report::Field("metavar", &OptionInfo::metavar),
                      report::Field("kind", &OptionInfo::kind),
                      report::Field("choices", &OptionInfo::choices),
                      report::Field("output", &OptionInfo::output),
                      report::Field("torchscan", &OptionInfo::torchscan),
                      report::Field("python", &OptionInfo::python),
                      report::Field("help", &OptionInfo::help),
                      report::Field("commands", &OptionInfo::commands));
};

// Every row of CommandLine::kOptions, in order.
std::vector<OptionInfo> OptionTable();

// Whether an output option (Role::kOutput) of `args` writes to standard
// output, in place of the table.
bool WritesStdout(const CommandLine& args);

}  // namespace torchscan::cli

#endif  // TORCHSCAN_TOOLS_CLI_MODEL_H_
