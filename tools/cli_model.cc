#include "tools/cli_model.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"

namespace torchscan::cli {
namespace {

// NOTE [Options a command does not read]
// Every option parses on every command, so without a list per command an
// option a command does not read (roofline --folded, compare --max-depth)
// was silently ignored: the user believed a file was written or a setting
// applied. Each command names the options it reads.
constexpr char kAnalysisOptions[] =
    "input-shape dtype device mode strict json html folded max-depth "
    "receptive-field effective-rf-stats example list-examples kwarg "
    "trust-file import verbose";

constexpr CommandRow kCommands[] = {
    {"", kTorchscan, "MODEL.pt --input-shape 3,224,224 [options]", 0, 1, "", "",
     "analyse a TorchScript file (or, with --example NAME, a built-in "
     "model)",
     kAnalysisOptions},
    {"", kPythonModule,
     "MODEL.pt|MODEL.pt2|package.module:factory --input-shape 3,224,224 "
     "[options]",
     1, 1, "", "",
     "analyse a TorchScript file, a torch.export program (.pt2: "
     "--input-shape may be left out) or the module a factory returns",
     kAnalysisOptions},
    {"compare", kBoth,
     "BEFORE.json AFTER.json [--json -|PATH] [--html -|PATH] [--folded -|PATH]",
     2, 2, "", "", "compare two reports", "json html folded"},
    {"merge", kTorchscan,
     "RANK0.json RANK1.json ... [--json -|PATH] [--device-model NAME] "
     "[--allow-missing]",
     1, -1, "", "",
     "merge per-rank reports of a distributed job into one job report",
     "json device-model allow-missing"},
    {"roofline", kBoth,
     "REPORT.json --device-model NAME [--json -|PATH] [--html -|PATH]", 1, 1,
     "device-model", "a device table name, such as \"H100 SXM\"",
     "a FlopReport's (or a job report's) roofline on a device of the device "
     "table; --html: the report's page with its roofline plot",
     "json html device-model"},
};

bool Takes(unsigned front_ends, FrontEnd front_end) {
  return (front_ends & front_end) != 0;
}

// What one option word says: its flag ('_' as '-', dashes and value
// removed) and its value after '=', if any.
struct OptionWord {
  std::string flag;
  std::optional<std::string> value;
};

OptionWord SplitOptionWord(absl::string_view word) {
  word.remove_prefix(absl::StartsWith(word, "--") ? 2 : 1);
  OptionWord split;
  const std::size_t equals = word.find('=');
  if (equals != absl::string_view::npos) {
    split.value = std::string(word.substr(equals + 1));
    word = word.substr(0, equals);
  }
  split.flag = absl::StrReplaceAll(word, {{"_", "-"}});
  return split;
}

// Whether `word` is an option (not an input, a value or '-').
bool IsOptionWord(absl::string_view word) {
  return word.size() > 1 && word[0] == '-';
}

absl::Status ReadSwitch(absl::string_view flag, const OptionWord& word,
                        bool negated, bool& member) {
  if (!word.value) {
    member = !negated;
    return absl::OkStatus();
  }
  const std::string value = absl::AsciiStrToLower(*word.value);
  bool parsed = false;
  if (negated || !absl::SimpleAtob(value, &parsed)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad --", flag, " '", *word.value, "': expected true or false"));
  }
  member = parsed;
  return absl::OkStatus();
}

template <typename M>
absl::Status ReadValue(const OptionRow<M>& row, const std::string& value,
                       M& member) {
  if constexpr (std::is_same_v<M, std::int64_t>) {
    if (!absl::SimpleAtoi(value, &member)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bad --", row.flag, " '", value, "': expected an integer"));
    }
  } else if constexpr (std::is_same_v<M, std::vector<std::string>>) {
    member.push_back(value);
  } else {
    static_assert(std::is_same_v<M, std::string>);
    member = value;
  }
  return absl::OkStatus();
}

// Reads the option `word` (argv[*index]) of `row` into `args`, taking its
// value from the next word when it has no '='.
template <typename M>
absl::Status ReadOption(const OptionRow<M>& row, const OptionWord& word,
                        bool negated, absl::Span<const std::string> argv,
                        std::size_t* index, CommandLine& args) {
  M& member = args.*(row.member);
  if constexpr (std::is_same_v<M, bool>) {
    return ReadSwitch(row.flag, word, negated, member);
  } else {
    if (negated) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option --no", row.flag));
    }
    std::string value;
    if (word.value) {
      value = *word.value;
    } else if (*index + 1 < argv.size() &&
               !absl::StartsWith(argv[*index + 1], "--")) {
      value = argv[++*index];
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--", row.flag, " needs a value (", row.metavar, ")"));
    }
    return ReadValue(row, value, member);
  }
}

// Finds the row of `flag` ("nostrict": the switch strict, negated) and
// reads it; NotFound when no row has it.
absl::Status Dispatch(FrontEnd front_end, const OptionWord& word,
                      absl::Span<const std::string> argv, std::size_t* index,
                      CommandLine& args, const char** matched) {
  absl::Status status = absl::NotFoundError(word.flag);
  auto try_row = [&](const auto& row) {
    if (!absl::IsNotFound(status)) return;
    using M = std::remove_cvref_t<decltype(args.*(row.member))>;
    bool negated = false;
    if (word.flag != row.flag) {
      if (!std::is_same_v<M, bool> || word.flag != absl::StrCat("no", row.flag))
        return;
      negated = true;
    }
    if (!Takes(row.front_ends, front_end)) {
      const FrontEnd other =
          front_end == kTorchscan ? kPythonModule : kTorchscan;
      status = absl::InvalidArgumentError(
          absl::StrCat("--", row.flag, " is an option of ", ProgramName(other),
                       ", not of ", ProgramName(front_end)));
      return;
    }
    status = ReadOption(row, word, negated, argv, index, args);
    *matched = row.flag;
  };
  std::apply([&](const auto&... row) { (try_row(row), ...); },
             CommandLine::kOptions);
  return status;
}

// Checks a value against its row's choices.
template <typename M>
absl::Status CheckChoices(const OptionRow<M>& row, const CommandLine& args) {
  if constexpr (std::is_same_v<M, std::string>) {
    if (*row.choices == '\0') return absl::OkStatus();
    const std::vector<absl::string_view> words =
        absl::StrSplit(row.choices, '|');
    const std::string& value = args.*(row.member);
    if (std::find(words.begin(), words.end(), value) != words.end()) {
      return absl::OkStatus();
    }
    std::vector<std::string> quoted;
    for (absl::string_view choice : words) {
      quoted.push_back(absl::StrCat("'", choice, "'"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("--", row.flag, " must be ",
                     absl::StrJoin(quoted.begin(), quoted.end() - 1, ", "),
                     " or ", quoted.back(), ", got '", value, "'"));
  }
  return absl::OkStatus();
}

// The output options (Role::kOutput): at most one writes to standard
// output.
absl::Status CheckOutputs(const CommandLine& args) {
  std::vector<std::string> flags;
  int to_stdout = 0;
  std::apply(
      [&](const auto&... row) {
        auto visit = [&](const auto& one) {
          using M = std::remove_cvref_t<decltype(args.*(one.member))>;
          if constexpr (std::is_same_v<M, std::string>) {
            if (one.role != Role::kOutput) return;
            flags.push_back(absl::StrCat("--", one.flag));
            to_stdout += args.*(one.member) == "-";
          }
        };
        (visit(row), ...);
      },
      CommandLine::kOptions);
  if (to_stdout <= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "only one of ", absl::StrJoin(flags.begin(), flags.end() - 1, ", "),
      " and ", flags.back(), " can be '-' (standard output)"));
}

// The value of the text option `flag` ("" when unset or not text).
std::string ValueOfFlag(const CommandLine& args, absl::string_view flag) {
  std::string value;
  std::apply(
      [&](const auto&... row) {
        auto visit = [&](const auto& one) {
          using M = std::remove_cvref_t<decltype(args.*(one.member))>;
          if constexpr (std::is_same_v<M, std::string>) {
            if (flag == one.flag) value = args.*(one.member);
          }
        };
        (visit(row), ...);
      },
      CommandLine::kOptions);
  return value;
}

// "  --flag METAVAR  help", or "  --flag  help" for a switch.
template <typename M>
std::string HelpLine(const OptionRow<M>& row) {
  return absl::StrCat("  --", row.flag, *row.metavar ? " " : "", row.metavar,
                      "  ", row.help, "\n");
}

// "roofline does not take --folded (only an analysis and compare do)": the
// commands of `front_end` that read the option.
absl::Status NotTaken(FrontEnd front_end, const CommandRow& command,
                      absl::string_view flag) {
  std::vector<std::string> readers;
  for (const CommandRow& other : kCommands) {
    if (!Takes(other.front_ends, front_end) || !CommandTakes(other, flag)) {
      continue;
    }
    readers.push_back(*other.name ? other.name : "an analysis");
  }
  std::string who = "no command does";
  if (readers.size() == 1) who = absl::StrCat("only ", readers[0], " does");
  if (readers.size() > 1) {
    who = absl::StrCat(
        "only ", absl::StrJoin(readers.begin(), readers.end() - 1, ", "),
        " and ", readers.back(), " do");
  }
  return absl::InvalidArgumentError(
      absl::StrCat(*command.name ? command.name : "an analysis",
                   " does not take --", flag, " (", who, ")"));
}

}  // namespace

bool CommandTakes(const CommandRow& command, absl::string_view flag) {
  for (absl::string_view one :
       absl::StrSplit(command.options, ' ', absl::SkipEmpty())) {
    if (one == flag) return true;
  }
  return false;
}

absl::string_view ProgramName(FrontEnd front_end) {
  return front_end == kTorchscan ? "torchscan" : "python -m torchscan_dispatch";
}

absl::Span<const CommandRow> Commands() { return kCommands; }

const CommandRow& CommandOf(const CommandLine& args, FrontEnd front_end) {
  for (const CommandRow& command : kCommands) {
    if (args.command == command.name && Takes(command.front_ends, front_end)) {
      return command;
    }
  }
  return kCommands[0];  // unreachable: ParseCommandLine sets a known command
}

absl::StatusOr<CommandLine> ParseCommandLine(
    FrontEnd front_end, absl::Span<const std::string> argv) {
  CommandLine args;
  std::vector<absl::string_view> given;  // the flags read, in order
  bool options_ended = false;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& word = argv[i];
    if (options_ended || !IsOptionWord(word)) {
      args.inputs.push_back(word);
      continue;
    }
    if (word == "--") {
      options_ended = true;
      continue;
    }
    const OptionWord option = SplitOptionWord(word);
    if (option.flag == "help" || option.flag == "h") {
      args.help = true;
      return args;
    }
    const char* matched = nullptr;
    const absl::Status read =
        Dispatch(front_end, option, argv, &i, args, &matched);
    if (absl::IsNotFound(read)) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option --", option.flag));
    }
    TS_RETURN_IF_ERROR(read);
    given.push_back(matched);
  }
  TS_RETURN_IF_ERROR(CheckOutputs(args));
  absl::Status choices;
  std::apply(
      [&](const auto&... row) {
        ((choices.ok() ? (void)(choices = CheckChoices(row, args)) : (void)0),
         ...);
      },
      CommandLine::kOptions);
  TS_RETURN_IF_ERROR(choices);
  // The first input names a command when one of this front end has it.
  for (const CommandRow& command : kCommands) {
    if (*command.name != '\0' && Takes(command.front_ends, front_end) &&
        !args.inputs.empty() && args.inputs.front() == command.name) {
      args.command = command.name;
      args.inputs.erase(args.inputs.begin());
    }
  }
  const CommandRow& command = CommandOf(args, front_end);
  const int inputs = static_cast<int>(args.inputs.size());
  if (inputs < command.min_inputs ||
      (command.max_inputs >= 0 && inputs > command.max_inputs)) {
    return absl::InvalidArgumentError(*command.name == '\0'
                                          ? AnalysisUsage(front_end)
                                          : UsageLine(front_end, command));
  }
  for (const absl::string_view flag : given) {
    if (!CommandTakes(command, flag)) return NotTaken(front_end, command, flag);
  }
  if (*command.needs_flag != '\0' &&
      ValueOfFlag(args, command.needs_flag).empty()) {
    std::string metavar;
    std::apply(
        [&](const auto&... row) {
          ((metavar = row.flag == absl::string_view(command.needs_flag)
                          ? row.metavar
                          : metavar),
           ...);
        },
        CommandLine::kOptions);
    return absl::InvalidArgumentError(
        absl::StrCat(command.name, " needs --", command.needs_flag, " ",
                     metavar, " (", command.needs_note, ")"));
  }
  return args;
}

std::string UsageLine(FrontEnd front_end, const CommandRow& command) {
  return absl::StrCat("usage: ", ProgramName(front_end), " ", command.name,
                      *command.name ? " " : "", command.synopsis);
}

std::string AnalysisUsage(FrontEnd front_end) {
  CommandLine analysis;
  return absl::StrCat(UsageLine(front_end, CommandOf(analysis, front_end)),
                      " (--help lists the other commands)");
}

std::string Help(FrontEnd front_end) {
  std::string help = "reports what a PyTorch model costs.\n\ncommands:\n";
  for (const CommandRow& command : kCommands) {
    if (!Takes(command.front_ends, front_end)) continue;
    absl::StrAppend(&help, "  ", UsageLine(front_end, command).substr(7),
                    "\n      ", command.help, "\n");
  }
  absl::StrAppend(&help, "\noptions (--input_shape is --input-shape):\n");
  std::apply(
      [&](const auto&... row) {
        ((Takes(row.front_ends, front_end)
              ? absl::StrAppend(&help, HelpLine(row))
              : void()),
         ...);
      },
      CommandLine::kOptions);
  return help;
}

std::vector<OptionInfo> OptionTable() {
  std::vector<OptionInfo> table;
  std::apply(
      [&](const auto&... row) {
        auto add = [&](const auto& one) {
          using M = std::remove_cvref_t<decltype(CommandLine{}.*(one.member))>;
          const char* kind = std::is_same_v<M, bool>           ? "switch"
                             : std::is_same_v<M, std::int64_t> ? "integer"
                             : std::is_same_v<M, std::string>  ? "text"
                                                               : "repeated";
          std::vector<std::string> commands;
          for (const CommandRow& command : kCommands) {
            if (CommandTakes(command, one.flag) &&
                std::find(commands.begin(), commands.end(), command.name) ==
                    commands.end()) {
              commands.push_back(command.name);
            }
          }
          table.push_back({one.name, one.flag, one.metavar, kind, one.choices,
                           one.role == Role::kOutput,
                           Takes(one.front_ends, kTorchscan),
                           Takes(one.front_ends, kPythonModule), one.help,
                           std::move(commands)});
        };
        (add(row), ...);
      },
      CommandLine::kOptions);
  return table;
}

bool WritesStdout(const CommandLine& args) {
  bool writes = false;
  std::apply(
      [&](const auto&... row) {
        auto visit = [&](const auto& one) {
          using M = std::remove_cvref_t<decltype(args.*(one.member))>;
          if constexpr (std::is_same_v<M, std::string>) {
            writes |= one.role == Role::kOutput && args.*(one.member) == "-";
          }
        };
        (visit(row), ...);
      },
      CommandLine::kOptions);
  return writes;
}

}  // namespace torchscan::cli
