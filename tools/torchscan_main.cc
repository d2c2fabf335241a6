// The `torchscan` command line.
//
//   torchscan MODEL.pt --input-shape 3,224,224 [options]
//       analyse a TorchScript file
//   torchscan --example NAME [options]
//       analyse a built-in model
//   torchscan compare BEFORE.json AFTER.json [--json -|PATH]
//       compare two reports
//   torchscan merge RANK0.json RANK1.json ... [--json -|PATH]
//                   [--device-model NAME]
//       merge per-rank reports of a distributed job into one job report
//       (with --device-model, each rank's roofline lower bound and the job's)
//   torchscan roofline REPORT.json --device-model NAME [--json -|PATH]
//                      [--html -|PATH]
//       a FlopReport's (or a job report's) roofline on a device of the
//       device table, one you need not have; --html: a FlopReport's page
//       with its operators on that roofline
//   torchscan --list-examples
// Analyses and compare also take --html PATH (a self-contained page) and
// --folded PATH (folded stacks of operator FLOPs, for flame-graph tools);
// '-' writes to standard output instead of the table. The commands and
// options, their parsing, --help and usage errors are tools/cli_model.h's
// one declaration, which python -m torchscan_dispatch parses with too.
//
// Exit codes: 0 success; 1 the analysis is incomplete under --strict (the
// report is still printed/written); 2 bad usage or input (flags, shapes,
// missing or unreadable files, not a TorchScript file, bad report JSON, an
// unknown --device-model, a report roofline cannot read: a crawl's); 3 the
// model raised on the input (a shape it rejects); 4 merge: ranks of the
// job have no report (unless --allow-missing).

#include <c10/util/Exception.h>
#include <torch/csrc/jit/serialization/import.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "report/count.h"
#include "report/job_merge.h"
#include "report/json_io.h"
#include "report/render/diagnostic_listing.h"
#include "report/render/roofline_listing.h"
#include "report/roofline.h"
#include "tools/cli_errors.h"
#include "tools/cli_inputs.h"
#include "tools/cli_model.h"
#include "tools/cli_outputs.h"
#include "tools/examples/example_models.h"
#include "torchscan/crawl.h"
#include "torchscan/report.h"

namespace {

constexpr int kOk = 0;
constexpr int kIncomplete = 1;
constexpr int kBadInput = 2;
constexpr int kModelFailed = 3;
constexpr int kMissingRanks = 4;

int Fail(int code, absl::string_view message) {
  std::cerr << "torchscan: " << message << "\n";
  return code;
}

// The commands below (Merge, Compare, Report, Analyse) return their exit
// code, or an error that is bad usage or input, which main prints before
// exiting with kBadInput. This is the error of an output file not written.
absl::Status CannotWrite(absl::string_view path) {
  return absl::InvalidArgumentError(absl::StrCat("cannot write ", path));
}

// The --html and --folded outputs; the title names what was analysed.
torchscan::cli::ViewOutputs Views(const torchscan::cli::CommandLine& args,
                                  std::string title) {
  return {args.html, args.folded, std::move(title)};
}

// A metric's known value: its value when complete, else its lower bound.
const torchscan::report::Json& KnownValue(
    const torchscan::report::Json& metric) {
  return metric["value"].is_null() ? metric["known_value"] : metric["value"];
}

// The known value of `metric` as a double, or nothing where it has none (an
// unavailable metric). NOTE: a count beyond 64 bits is JSON's big-integer
// form, which nlohmann's get<double>() refuses, so every count is read as one.
std::optional<double> KnownDouble(const torchscan::report::Json& metric) {
  const torchscan::report::Json& value = KnownValue(metric);
  if (value.is_null()) return std::nullopt;
  const absl::StatusOr<torchscan::report::Count> count =
      torchscan::report::JsonToCount(value, "known_value");
  if (!count.ok()) return std::nullopt;
  return static_cast<double>(*count);
}

// The job's bytes moved, their upper bound when a compiled graph ran on a
// rank, and the arithmetic intensity of the known FLOPs and bytes.
void PrintJobBytes(const torchscan::report::Json& job, std::ostream& out) {
  using torchscan::report::DumpJson;
  const torchscan::report::Json& bytes = job["bytes"];
  out << "bytes moved: " << DumpJson(KnownValue(bytes)) << " ("
      << bytes["status"].get<std::string>() << ")\n";
  if (bytes.contains("upper_bound")) {
    const torchscan::report::Json& upper = bytes["upper_bound"];
    out << "bytes upper bound: " << DumpJson(KnownValue(upper)) << " ("
        << upper["status"].get<std::string>() << "; compiled graphs unfused)\n";
  }
  const std::optional<double> moved = KnownDouble(bytes);
  const std::optional<double> flops = KnownDouble(job["total"]);
  if (moved && flops && *moved > 0) {
    const bool known =
        bytes["status"] == "complete" && job["total"]["status"] == "complete";
    out << "arithmetic intensity: " << absl::StrFormat("%.3f", *flops / *moved)
        << " FLOPs per byte" << (known ? "" : " (of the known work)") << "\n";
  }
}

// One line per fact of the job report; --json writes the report itself.
void PrintJobReport(const torchscan::report::Json& job, std::ostream& out) {
  using torchscan::report::DumpJson;
  out << "job " << job["job_id"].get<std::string>() << ": "
      << job["ranks"].size() << " of " << job["world_size"] << " ranks ("
      << job["backend"].get<std::string>() << ")\n";
  if (!job["missing_ranks"].empty()) {
    out << "missing ranks: " << DumpJson(job["missing_ranks"]) << "\n";
  }
  const torchscan::report::Json& total = job["total"];
  out << "total FLOPs: "
      << DumpJson(total["value"].is_null() ? total["known_value"]
                                           : total["value"])
      << " (" << total["status"].get<std::string>() << ")\n";
  if (job.contains("bytes")) PrintJobBytes(job, out);
  out << "per rank: min " << DumpJson(job["rank_min"]) << ", max "
      << DumpJson(job["rank_max"]) << ", imbalance (max/mean) "
      << DumpJson(job["imbalance"]) << "\n";
  for (const auto& [kind, entry] : job["communication"]["by_kind"].items()) {
    out << kind << ": " << DumpJson(entry["calls"]) << " calls, "
        << DumpJson(entry["payload_bytes"]) << " payload bytes, "
        << DumpJson(entry["bus_bytes"]) << " bus bytes\n";
  }
  // One line per process group that carried collectives, with its ranks
  // and mesh dimension from the job's group list.
  const torchscan::report::Json& by_group =
      job["communication"].value("by_group", torchscan::report::Json::object());
  for (const auto& [name, entry] : by_group.items()) {
    out << "group " << DumpJson(torchscan::report::Json(name));
    for (const torchscan::report::Json& group : job["groups"]) {
      if (group["name"] != name) continue;
      out << " ranks " << DumpJson(group["ranks"]);
      if (group.contains("mesh_dim")) {
        out << " mesh dimension "
            << group["mesh_dim"]["name"].get<std::string>() << " (index "
            << DumpJson(group["mesh_dim"]["index"]) << ")";
      }
    }
    out << ": " << DumpJson(entry["calls"]) << " calls, "
        << DumpJson(entry["payload_bytes"]) << " payload bytes, "
        << DumpJson(entry["bus_bytes"]) << " bus bytes\n";
  }
}

// `torchscan merge RANK.json ...` (the model checked the inputs' count).
absl::StatusOr<int> Merge(const torchscan::cli::CommandLine& args) {
  // An unknown device name fails before anything is printed.
  std::optional<torchscan::report::RooflineDevice> device;
  if (!args.device_model.empty()) {
    TS_ASSIGN_OR_RETURN(
        device, torchscan::report::RooflineDeviceNamed(args.device_model));
  }
  std::vector<torchscan::report::Json> reports;
  std::vector<std::string> names;
  for (const std::string& path : args.inputs) {
    TS_ASSIGN_OR_RETURN(const std::string text, torchscan::cli::ReadFile(path));
    absl::StatusOr<torchscan::report::Json> parsed =
        torchscan::report::ParseJson(text);
    if (!parsed.ok()) {
      // The parser's message does not say which file it read.
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": ", parsed.status().message()));
    }
    reports.push_back(*std::move(parsed));
    names.push_back(path);
  }
  TS_ASSIGN_OR_RETURN(const torchscan::report::JobReport job,
                      torchscan::report::MergeRankReportsJson(reports, names));
  const torchscan::report::Json json = torchscan::report::JobReportToJson(job);
  const std::string& json_path = args.json;
  if (json_path != "-") {
    PrintJobReport(json, std::cout);
    if (device) {
      std::cout << torchscan::report::render::JobRooflineLine(
          torchscan::report::render::ComputeJobRoofline(job, *device));
    }
  }
  if (!json_path.empty()) {
    const std::string text = torchscan::report::DumpJson(json, 2) + "\n";
    if (json_path == "-") {
      std::cout << text;
    } else {
      std::ofstream file(json_path);
      file << text;
      if (!file) return CannotWrite(json_path);
    }
  }
  // NOTE [A job with missing ranks]
  // A merge is usually the last step of a job's script, so a rank whose
  // report never arrived must fail the script, not pass as a smaller total:
  // the report is still printed and written, then the exit says what is
  // missing. --allow-missing accepts a partial job.
  if (!job.missing_ranks.empty() && !args.allow_missing) {
    return Fail(kMissingRanks,
                absl::StrCat("merge: no report for rank",
                             job.missing_ranks.size() == 1 ? " " : "s ",
                             absl::StrJoin(job.missing_ranks, ", "), " of ",
                             job.world_size,
                             " (--allow-missing merges the ranks present)"));
  }
  return kOk;
}

// `torchscan roofline REPORT.json --device-model NAME`: the listing, or
// with --json the structure (report/render/roofline_listing.h); --html
// writes the report's page with its roofline plot (cli_outputs.h). The model
// checked the input's count and that --device-model is given.
absl::StatusOr<int> Roofline(const torchscan::cli::CommandLine& args) {
  const std::string& path = args.inputs[0];
  TS_ASSIGN_OR_RETURN(const std::string text, torchscan::cli::ReadFile(path));
  absl::StatusOr<torchscan::report::Json> document =
      torchscan::report::ParseJson(text);
  if (!document.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", document.status().message()));
  }
  TS_ASSIGN_OR_RETURN(const torchscan::report::render::RooflineOutput output,
                      torchscan::report::render::RooflineOfDocument(
                          *document, args.device_model));
  if (!args.html.empty()) {
    TS_RETURN_IF_ERROR(torchscan::cli::WriteRooflinePage(
        *document, args.device_model, args.html,
        absl::StrCat(path, " on ", args.device_model), std::cout));
  }
  const std::string& json_path = args.json;
  if (!torchscan::cli::WritesStdout(args)) std::cout << output.listing;
  if (json_path == "-") {
    std::cout << output.json;
  } else if (!json_path.empty()) {
    std::ofstream file(json_path);
    file << output.json;
    if (!file) return CannotWrite(json_path);
  }
  return kOk;
}

// `torchscan compare BEFORE.json AFTER.json` (the model checked the count).
absl::StatusOr<int> Compare(const torchscan::cli::CommandLine& args) {
  TS_ASSIGN_OR_RETURN(const std::string before,
                      torchscan::cli::ReadFile(args.inputs[0]));
  TS_ASSIGN_OR_RETURN(const std::string after,
                      torchscan::cli::ReadFile(args.inputs[1]));
  TS_ASSIGN_OR_RETURN(const torchscan::report::ReportDiff diff,
                      torchscan::report::CompareReportTexts(before, after));
  TS_RETURN_IF_ERROR(torchscan::cli::WriteCompareViews(
      diff, before, after,
      Views(args,
            absl::StrCat(
                std::filesystem::path(args.inputs[0]).filename().string(),
                " \u2192 ",
                std::filesystem::path(args.inputs[1]).filename().string())),
      std::cout, std::cerr));
  const std::string& json_path = args.json;
  if (!json_path.empty()) {
    const std::string text = torchscan::report::DumpPythonJson(
        torchscan::report::ReportDiffToJson(diff), 2);
    if (json_path == "-") {
      std::cout << text << "\n";
      return kOk;
    }
    std::ofstream file(json_path);
    file << text << "\n";
    if (!file) return CannotWrite(json_path);
  }
  if (torchscan::cli::WritesStdout(args)) return kOk;
  std::cout << torchscan::cli::CompareListing(diff);
  return kOk;
}

absl::StatusOr<int> Report(const torchscan::cli::CommandLine& args,
                           const torchscan::report::AnalysisReport& report,
                           bool incomplete, std::string title) {
  const std::string& json_path = args.json;
  if (!torchscan::cli::WritesStdout(args)) {
    torchscan::report::SummaryOptions options;
    if (args.max_depth >= 0) options.max_depth = args.max_depth;
    options.receptive_field = args.receptive_field;
    options.effective_rf_stats = args.effective_rf_stats;
    TS_ASSIGN_OR_RETURN(const std::string table,
                        torchscan::report::RenderSummary(report, options));
    // A command line lists the diagnostics where Python's summary points at
    // report['diagnostics'].
    std::cout << torchscan::report::render::SummaryWithDiagnosticsListed(
        table, report.diagnostics);
  }
  if (!json_path.empty()) {
    const std::string text = torchscan::report::DumpPythonJson(
        torchscan::report::AnalysisReportToJson(report), 2);
    if (json_path == "-") {
      std::cout << text << "\n";
    } else {
      std::ofstream file(json_path);
      file << text << "\n";
      if (!file) return CannotWrite(json_path);
    }
  }
  TS_RETURN_IF_ERROR(torchscan::cli::WriteAnalysisViews(
      report, Views(args, std::move(title)), std::cout, std::cerr));
  if (incomplete) {
    std::cerr << "torchscan: "
              << torchscan::report::IncompleteAnalysisMessage(report) << "\n";
    return kIncomplete;
  }
  return kOk;
}

// An analysis of a TorchScript file or a built-in example.
absl::StatusOr<int> Analyse(const torchscan::cli::CommandLine& args) {
  torchscan::CrawlOptions options;
  // The model checked --mode's choices.
  if (args.mode == "structure") options.mode = torchscan::CrawlMode::kStructure;
  options.strict = args.strict;
  TS_ASSIGN_OR_RETURN(options.dtypes, torchscan::cli::ParseDtypes(args.dtype));
  if (!args.device.empty()) {
    TS_ASSIGN_OR_RETURN(options.device,
                        torchscan::cli::ParseDevice(args.device));
  }

  torch::jit::Module module;
  const std::string& example = args.example;
  // What the HTML page is titled: the file or the example analysed.
  std::string title;
  if (!example.empty()) {
    if (!args.inputs.empty()) {
      return absl::InvalidArgumentError(
          "pass either MODEL.pt or --example, not both");
    }
    TS_ASSIGN_OR_RETURN(const torchscan::examples::ExampleModel model,
                        torchscan::examples::MakeExample(example));
    module = model.module;
    options.input_shapes = model.input_shapes;
    title = example;
  } else {
    if (args.inputs.size() != 1) {
      return absl::InvalidArgumentError(
          torchscan::cli::AnalysisUsage(torchscan::cli::kTorchscan));
    }
    TS_ASSIGN_OR_RETURN(module,
                        torchscan::cli::LoadScriptModuleFile(args.inputs[0]));
    title = std::filesystem::path(args.inputs[0]).filename().string();
  }
  if (!args.input_shape.empty()) {
    TS_ASSIGN_OR_RETURN(options.input_shapes,
                        torchscan::cli::ParseInputShapes(args.input_shape));
  }
  if (options.input_shapes.empty()) {
    return absl::InvalidArgumentError(
        "pass --input-shape (without the batch dimension, e.g. 3,224,224)");
  }

  absl::StatusOr<torchscan::report::AnalysisReport> report;
  try {
    report = torchscan::CrawlScriptModule(module, options);
  } catch (const c10::Error& error) {
    return Fail(kModelFailed,
                absl::StrCat("the model raised on the input: ",
                             torchscan::cli::OneLineCause(
                                 error.what_without_backtrace())));
  } catch (const std::exception& error) {
    return Fail(kModelFailed,
                absl::StrCat("the model raised on the input: ",
                             torchscan::cli::OneLineCause(error.what())));
  }
  if (!report.ok()) {
    // A strict failure carries the incomplete report, which is still shown.
    if (std::optional<torchscan::report::AnalysisReport> incomplete =
            torchscan::IncompleteAnalysisReport(report.status())) {
      return Report(args, *incomplete, /*incomplete=*/true, title);
    }
  }
  TS_ASSIGN_OR_RETURN(const torchscan::report::AnalysisReport complete,
                      std::move(report));
  return Report(args, complete, /*incomplete=*/false, title);
}

absl::StatusOr<int> Run(const torchscan::cli::CommandLine& args) {
  if (args.list_examples) {
    for (const std::string& name : torchscan::examples::ExampleNames()) {
      std::cout << name << ": "
                << torchscan::examples::MakeExample(name)->description << "\n";
    }
    return kOk;
  }
  if (args.command == "compare") return Compare(args);
  if (args.command == "merge") return Merge(args);
  if (args.command == "roofline") return Roofline(args);
  return Analyse(args);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> words(argv + std::min(argc, 1), argv + argc);
  const absl::StatusOr<torchscan::cli::CommandLine> args =
      torchscan::cli::ParseCommandLine(torchscan::cli::kTorchscan, words);
  if (!args.ok()) return Fail(kBadInput, args.status().message());
  if (args->help) {
    std::cout << torchscan::cli::Help(torchscan::cli::kTorchscan);
    return kOk;
  }
  const absl::StatusOr<int> code = Run(*args);
  return code.ok() ? *code : Fail(kBadInput, code.status().message());
}
