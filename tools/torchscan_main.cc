// The `torchscan` command line.
//
//   torchscan --example mlp     operator FLOPs of a built-in example model

#include <torch/torch.h>

#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "report/json_io.h"
#include "tools/examples/example_models.h"
#include "torchscan_dispatch/flop_counting_guard.h"

ABSL_FLAG(std::string, example, "",
          "Name of a built-in example model to measure.");
ABSL_FLAG(bool, json, false,
          "Print the JSON report instead of the text summary.");

namespace {

void PrintText(const std::string& name, const std::string& description,
               const torchscan::report::FlopReport& report) {
  using torchscan::report::CountToString;
  std::cout << "Operator FLOPs of example '" << name << "' (" << description
            << "), one forward call, batch 1\n\n";
  std::size_t width = 8;
  for (const auto& [op, flops] : report.by_operator)
    width = std::max(width, op.size());
  for (const auto& [op, flops] : report.by_operator) {
    std::cout << "  " << op << std::string(width - op.size() + 2, ' ')
              << CountToString(flops) << "\n";
  }
  const auto& total = report.total;
  std::cout << "\nTotal: " << (total.is_complete() ? "" : "at least ")
            << torchscan::report::DumpJson(
                   torchscan::report::MetricValueToJson(*total.known_value()))
            << " FLOPs (" << torchscan::report::MetricStatusName(total.status())
            << ")\n";
  for (const auto& diagnostic : report.diagnostics) {
    std::cout << "  " << diagnostic.code << ": " << diagnostic.message << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Reports what a PyTorch model costs.\n  torchscan --example NAME "
      "[--json]");
  absl::ParseCommandLine(argc, argv);
  const std::string name = absl::GetFlag(FLAGS_example);
  if (name.empty()) {
    std::cerr << "torchscan: pass --example NAME (one of: "
              << absl::StrJoin(torchscan::examples::ExampleNames(), ", ")
              << ")\n";
    return 2;
  }
  absl::StatusOr<torchscan::examples::ExampleModel> example =
      torchscan::examples::MakeExample(name);
  if (!example.ok()) {
    std::cerr << "torchscan: " << example.status().message() << "\n";
    return 2;
  }
  example->module->eval();
  torch::NoGradGuard no_grad;
  absl::StatusOr<torchscan::report::FlopReport> report =
      torchscan::MeasureFlops([&] { example->forward(); });
  if (!report.ok()) {
    std::cerr << "torchscan: " << report.status() << "\n";
    return 1;
  }
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << torchscan::report::DumpJson(
                     torchscan::report::FlopReportToJson(*report), 2)
              << "\n";
  } else {
    PrintText(example->name, example->description, *report);
  }
  return 0;
}
