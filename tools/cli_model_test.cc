#include "tools/cli_model.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "report/field_table.h"
#include "report/json_io.h"

namespace torchscan::cli {
namespace {

absl::StatusOr<CommandLine> Parse(FrontEnd front_end,
                                  std::vector<std::string> argv) {
  return ParseCommandLine(front_end, argv);
}

std::string ErrorOf(FrontEnd front_end, std::vector<std::string> argv) {
  absl::StatusOr<CommandLine> args = Parse(front_end, std::move(argv));
  return args.ok() ? "" : std::string(args.status().message());
}

TEST(ParseCommandLineTest, AnAnalysisWithOptions) {
  const absl::StatusOr<CommandLine> args =
      Parse(kTorchscan, {"m.pt", "--input-shape", "3,8", "--json=-", "--strict",
                         "--max_depth", "2"});
  ASSERT_TRUE(args.ok()) << args.status();
  CommandLine expected;
  expected.inputs = {"m.pt"};
  expected.input_shape = "3,8";
  expected.json = "-";
  expected.strict = true;
  expected.max_depth = 2;
  EXPECT_EQ(expected, *args);
}

TEST(ParseCommandLineTest, TheFirstInputNamesTheCommand) {
  const absl::StatusOr<CommandLine> args =
      Parse(kPythonModule, {"compare", "a.json", "b.json"});
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ("compare", args->command);
  EXPECT_EQ((std::vector<std::string>{"a.json", "b.json"}), args->inputs);
}

TEST(ParseCommandLineTest, MergeIsTorchscansOwnCommand) {
  const absl::StatusOr<CommandLine> args = Parse(kPythonModule, {"merge"});
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ("", args->command);
  EXPECT_EQ(std::vector<std::string>{"merge"}, args->inputs);
}

TEST(ParseCommandLineTest, RepeatableOptionsKeepEveryValueInOrder) {
  const absl::StatusOr<CommandLine> args = Parse(
      kPythonModule, {"f:g", "--kwarg", "a=1", "--kwarg=b=2", "--import", "x"});
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ((std::vector<std::string>{"a=1", "b=2"}), args->kwarg);
  EXPECT_EQ(std::vector<std::string>{"x"}, args->imports);
}

TEST(ParseCommandLineTest, TheLastOfARepeatedValueWins) {
  EXPECT_EQ("b", Parse(kTorchscan, {"--json", "a", "--json", "b"})->json);
}

TEST(ParseCommandLineTest, SwitchesTakeTrueFalseAndNo) {
  EXPECT_FALSE(Parse(kTorchscan, {"--strict", "--nostrict"})->strict);
  EXPECT_FALSE(Parse(kTorchscan, {"--strict=false"})->strict);
  EXPECT_TRUE(Parse(kTorchscan, {"-strict=TRUE"})->strict);
}

TEST(ParseCommandLineTest, DoubleDashEndsTheOptions) {
  EXPECT_EQ((std::vector<std::string>{"--json", "x"}),
            Parse(kTorchscan, {"compare", "--", "--json", "x"})->inputs);
}

TEST(ParseCommandLineTest, ADashIsAValue) {
  EXPECT_EQ("-", Parse(kTorchscan, {"--folded", "-"})->folded);
}

TEST(ParseCommandLineTest, HelpStopsTheParse) {
  const absl::StatusOr<CommandLine> args =
      Parse(kPythonModule, {"-h", "--no-such-option"});
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_TRUE(args->help);
}

TEST(ParseCommandLineTest, AnUnknownOption) {
  EXPECT_EQ("unknown option --jsn", ErrorOf(kTorchscan, {"--jsn", "x"}));
}

TEST(ParseCommandLineTest, AnOptionOfTheOtherCommandLine) {
  EXPECT_EQ(
      "--kwarg is an option of python -m torchscan_dispatch, not of torchscan",
      ErrorOf(kTorchscan, {"--kwarg", "a=1"}));
  EXPECT_EQ(
      "--example is an option of torchscan, not of python -m "
      "torchscan_dispatch",
      ErrorOf(kPythonModule, {"--example", "mlp"}));
}

TEST(ParseCommandLineTest, AMissingValue) {
  EXPECT_EQ("--json needs a value (PATH)", ErrorOf(kTorchscan, {"--json"}));
  EXPECT_EQ("--json needs a value (PATH)",
            ErrorOf(kTorchscan, {"--json", "--strict"}));
}

TEST(ParseCommandLineTest, ABadInteger) {
  EXPECT_EQ("bad --max-depth 'two': expected an integer",
            ErrorOf(kTorchscan, {"--max-depth", "two"}));
}

TEST(ParseCommandLineTest, ABadSwitchValue) {
  EXPECT_EQ("bad --strict 'maybe': expected true or false",
            ErrorOf(kPythonModule, {"--strict=maybe"}));
}

TEST(ParseCommandLineTest, AValueOutsideTheChoices) {
  EXPECT_EQ("--mode must be 'full' or 'structure', got 'fast'",
            ErrorOf(kTorchscan, {"m.pt", "--mode", "fast"}));
}

TEST(ParseCommandLineTest, TwoOutputsToStandardOutput) {
  EXPECT_EQ(
      "only one of --json, --html and --folded can be '-' (standard output)",
      ErrorOf(kPythonModule, {"m.pt", "--json", "-", "--html=-"}));
}

TEST(ParseCommandLineTest, ACommandsInputs) {
  EXPECT_EQ(
      "usage: torchscan compare BEFORE.json AFTER.json [--json -|PATH] "
      "[--html -|PATH] [--folded -|PATH]",
      ErrorOf(kTorchscan, {"compare", "a.json"}));
  EXPECT_EQ(
      "usage: python -m torchscan_dispatch roofline REPORT.json "
      "--device-model NAME [--json -|PATH] [--html -|PATH]",
      ErrorOf(kPythonModule, {"roofline"}));
  EXPECT_EQ(
      "usage: torchscan merge RANK0.json RANK1.json ... [--json -|PATH] "
      "[--device-model NAME] [--allow-missing]",
      ErrorOf(kTorchscan, {"merge"}));
}

TEST(ParseCommandLineTest, AnOptionTheCommandDoesNotRead) {
  EXPECT_EQ(
      "roofline does not take --folded (only an analysis and compare do)",
      ErrorOf(kTorchscan,
              {"roofline", "r.json", "--device-model", "B200", "--folded=-"}));
  EXPECT_EQ(
      "compare does not take --max-depth (only an analysis does)",
      ErrorOf(kPythonModule, {"--max-depth", "2", "compare", "a", "b"}));
  EXPECT_EQ("an analysis does not take --allow-missing (only merge does)",
            ErrorOf(kTorchscan, {"m.pt", "--allow-missing"}));
  EXPECT_EQ(
      "an analysis does not take --device-model (only roofline does)",
      ErrorOf(kPythonModule, {"m.pt", "--device-model", "B200"}));
}

TEST(ParseCommandLineTest, RooflineTakesHtml) {
  const absl::StatusOr<CommandLine> args =
      Parse(kPythonModule,
            {"roofline", "r.json", "--device-model", "B200", "--html", "-"});
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ("-", args->html);
}

TEST(ParseCommandLineTest, AnAnalysisOfTwoModels) {
  EXPECT_EQ(
      "usage: python -m torchscan_dispatch "
      "MODEL.pt|MODEL.pt2|package.module:factory --input-shape 3,224,224 "
      "[options] (--help lists the other commands)",
      ErrorOf(kPythonModule, {"a.pt", "b.pt"}));
  EXPECT_TRUE(Parse(kTorchscan, {"--example", "mlp"}).ok());
}

TEST(ParseCommandLineTest, AnOptionACommandNeeds) {
  EXPECT_EQ(
      "roofline needs --device-model NAME (a device table name, such as "
      "\"H100 SXM\")",
      ErrorOf(kTorchscan, {"roofline", "r.json"}));
}

TEST(ParseCommandLineTest, AnOptionACommandNeedsGiven) {
  EXPECT_EQ("L4",
            Parse(kTorchscan, {"roofline", "r.json", "--device-model", "L4"})
                ->device_model);
}

TEST(HelpTest, ListsEachOptionOfTheFrontEndOnce) {
  const std::string help = Help(kTorchscan);
  EXPECT_TRUE(absl::StrContains(help, "\n  --input-shape SHAPES  input shape"));
  EXPECT_TRUE(absl::StrContains(help, "\n  --list-examples  list the"));
  EXPECT_FALSE(absl::StrContains(help, "--kwarg"));
  EXPECT_TRUE(absl::StrContains(Help(kPythonModule), "\n  --kwarg NAME=VALUE"));
}

TEST(HelpTest, SharedOptionsHaveTheSameLineOnBothCommandLines) {
  const std::string torchscan = Help(kTorchscan);
  const std::string python = Help(kPythonModule);
  const std::string line =
      "\n  --device-model NAME  roofline, merge: the device table's row";
  EXPECT_TRUE(absl::StrContains(torchscan, line));
  EXPECT_TRUE(absl::StrContains(python, line));
}

TEST(WritesStdoutTest, AnOutputToADash) {
  EXPECT_TRUE(WritesStdout(*Parse(kTorchscan, {"--html", "-"})));
  EXPECT_FALSE(WritesStdout(*Parse(kTorchscan, {"--html", "page.html"})));
}

TEST(FieldTableTest, TheParseResultIsWrittenWithEveryOption) {
  const report::Json json = report::ToJson(CommandLine{});
  EXPECT_EQ(3 + std::tuple_size_v<decltype(CommandLine::kOptions)>,
            json.size());
  EXPECT_EQ("full", json["mode"]);
  EXPECT_EQ(-1, json["max_depth"]);
}

// NOTE [Command lines generated from the table]
// Every row, on every command line that takes it, in each spelling the
// parsing rules allow, must read back into its member and nowhere else;
// a row a command line does not take must be refused naming it. The rows
// are the table's, so a new option is covered without a new test.
template <typename M>
std::string SampleValue(const OptionRow<M>& row) {
  if constexpr (std::is_same_v<M, std::int64_t>) return "7";
  if (*row.choices != '\0') return "structure";
  return absl::StrCat("value-of-", row.flag);
}

// The command and inputs of a command line on which `flag` is read: an
// analysis of m.pt when the analysis reads it, else the first command that
// does.
std::pair<std::string, std::vector<std::string>> ReaderOf(
    absl::string_view flag, FrontEnd front_end) {
  for (const CommandRow& command : Commands()) {
    if ((command.front_ends & front_end) == 0 || !CommandTakes(command, flag)) {
      continue;
    }
    std::vector<std::string> inputs(std::max(command.min_inputs, 1), "a.json");
    if (*command.name == '\0') return {"", {"m.pt"}};
    return {command.name, inputs};
  }
  return {"", {"m.pt"}};
}

template <typename M>
void CheckRow(const OptionRow<M>& row, FrontEnd front_end) {
  const std::string underscored = absl::StrReplaceAll(row.flag, {{"-", "_"}});
  std::vector<std::vector<std::string>> spellings;
  if constexpr (std::is_same_v<M, bool>) {
    spellings = {{absl::StrCat("--", row.flag)},
                 {absl::StrCat("--", underscored)},
                 {absl::StrCat("-", row.flag, "=true")}};
  } else {
    const std::string value = SampleValue(row);
    spellings = {{absl::StrCat("--", row.flag), value},
                 {absl::StrCat("--", underscored, "=", value)},
                 {absl::StrCat("-", row.flag), value}};
  }
  const auto [command, inputs] = ReaderOf(row.flag, front_end);
  for (std::vector<std::string> argv : spellings) {
    argv.insert(argv.begin(), inputs.begin(), inputs.end());
    if (!command.empty()) argv.insert(argv.begin(), command);
    // A command that needs an option (roofline's --device-model) gets it.
    if (command == "roofline" &&
        row.flag != absl::string_view("device-model")) {
      argv.insert(argv.end(), {"--device-model", "B200"});
    }
    const absl::StatusOr<CommandLine> args = ParseCommandLine(front_end, argv);
    if ((row.front_ends & front_end) == 0) {
      ASSERT_FALSE(args.ok()) << argv[1];
      EXPECT_TRUE(absl::StartsWith(args.status().message(),
                                   absl::StrCat("--", row.flag, " is an")))
          << args.status();
      continue;
    }
    ASSERT_TRUE(args.ok()) << argv[1] << ": " << args.status();
    CommandLine expected;
    expected.command = command;
    expected.inputs = inputs;
    if (command == "roofline") expected.device_model = "B200";
    if constexpr (std::is_same_v<M, bool>) {
      expected.*(row.member) = true;
    } else if constexpr (std::is_same_v<M, std::int64_t>) {
      expected.*(row.member) = 7;
    } else if constexpr (std::is_same_v<M, std::vector<std::string>>) {
      expected.*(row.member) = {SampleValue(row)};
    } else {
      expected.*(row.member) = SampleValue(row);
    }
    EXPECT_EQ(report::ToJson(expected), report::ToJson(*args)) << argv[1];
  }
}

TEST(GeneratedTest, EveryRowInEverySpellingOnBothCommandLines) {
  for (FrontEnd front_end : {kTorchscan, kPythonModule}) {
    std::apply([&](const auto&... row) { (CheckRow(row, front_end), ...); },
               CommandLine::kOptions);
  }
}

// Every option of a command line, on every command of it: parsed when the
// command reads it, else refused naming the command and the option.
TEST(GeneratedTest, EachCommandReadsItsOptionsAndRefusesTheOthers) {
  for (FrontEnd front_end : {kTorchscan, kPythonModule}) {
    for (const CommandRow& command : Commands()) {
      if ((command.front_ends & front_end) == 0) continue;
      for (const OptionInfo& option : OptionTable()) {
        if (!(front_end == kTorchscan ? option.torchscan : option.python)) {
          continue;
        }
        std::vector<std::string> argv(std::max(command.min_inputs, 1), "a");
        if (*command.name != '\0') argv.insert(argv.begin(), command.name);
        if (command.needs_flag[0] != '\0') {
          argv.insert(argv.end(),
                      {absl::StrCat("--", command.needs_flag), "x"});
        }
        argv.push_back(absl::StrCat("--", option.flag));
        if (option.kind != "switch") {
          argv.push_back(!option.choices.empty()    ? "structure"
                         : option.kind == "integer" ? "7"
                                                    : "v");
        }
        const absl::StatusOr<CommandLine> args =
            ParseCommandLine(front_end, argv);
        EXPECT_EQ(CommandTakes(command, option.flag), args.ok())
            << command.name << " --" << option.flag << ": " << args.status();
        if (!args.ok()) {
          EXPECT_TRUE(absl::StrContains(
              args.status().message(),
              absl::StrCat(" does not take --", option.flag, " (")))
              << args.status();
        }
      }
    }
  }
}

TEST(GeneratedTest, EveryRowIsInItsCommandLinesHelp) {
  std::apply(
      [](const auto&... row) {
        auto check = [](const auto& one) {
          for (FrontEnd front_end : {kTorchscan, kPythonModule}) {
            EXPECT_EQ((one.front_ends & front_end) != 0,
                      absl::StrContains(Help(front_end),
                                        absl::StrCat("\n  --", one.flag, " ")))
                << one.flag;
          }
        };
        (check(row), ...);
      },
      CommandLine::kOptions);
}

// Random command lines of the table's words and some that are not: the
// parse never fails without one line naming what is wrong, and succeeds
// alike on both command lines for options both take.
TEST(GeneratedTest, RandomCommandLinesParseOrFailWithOneLine) {
  std::vector<std::string> words = {"m.pt", "compare",   "roofline", "merge",
                                    "-",    "--",        "=",        "7",
                                    "x",    "--no-such", "full",     "-1"};
  std::apply(
      [&](const auto&... row) {
        ((words.push_back(absl::StrCat("--", row.flag)),
          words.push_back(absl::StrCat("--", row.flag, "=1"))),
         ...);
      },
      CommandLine::kOptions);
  std::mt19937 random(29);
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<std::string> argv(random() % 7);
    for (std::string& word : argv) word = words[random() % words.size()];
    for (FrontEnd front_end : {kTorchscan, kPythonModule}) {
      const absl::StatusOr<CommandLine> args =
          ParseCommandLine(front_end, argv);
      if (args.ok()) continue;
      const absl::string_view message = args.status().message();
      EXPECT_FALSE(message.empty());
      EXPECT_FALSE(absl::StrContains(message, "\n")) << message;
      EXPECT_TRUE(absl::StrContains(message, "--") ||
                  absl::StartsWith(message, "usage: "))
          << message;
    }
  }
}

}  // namespace
}  // namespace torchscan::cli
