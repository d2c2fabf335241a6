#include "tools/cli_outputs.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "report/json_io.h"
#include "report/metric_result.h"
#include "report/render/folded_stacks.h"
#include "report/render/html_report.h"
#include "report/roofline.h"

namespace torchscan::cli {
namespace {

using report::render::FoldedStacks;

absl::Status WriteFolded(const absl::StatusOr<FoldedStacks>& folded,
                         const std::string& path, std::ostream& out,
                         std::ostream& notes) {
  if (!folded.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--folded: ", folded.status().message()));
  }
  if (folded->partial) {
    notes << "torchscan: note: folded stacks: the operator FLOPs are "
             "partial, each value is a lower bound (see the diagnostics)\n";
  }
  for (const std::string& note : folded->notes) {
    notes << "torchscan: note: folded stacks: " << note << "\n";
  }
  return WriteText(path, folded->text, out);
}

absl::Status WriteHtml(const absl::StatusOr<std::string>& html,
                       const std::string& path, std::ostream& out) {
  if (!html.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--html: ", html.status().message()));
  }
  return WriteText(path, *html, out);
}

}  // namespace

absl::Status WriteRooflinePage(const report::Json& document,
                               absl::string_view device_name,
                               const std::string& path,
                               const std::string& title, std::ostream& out) {
  report::render::HtmlOptions options;
  options.title = title;
  TS_ASSIGN_OR_RETURN(options.roofline,
                      report::RooflineDeviceNamed(device_name));
  TS_ASSIGN_OR_RETURN(const report::FlopReport report,
                      report::FlopReportForRoofline(document));
  return WriteHtml(report::render::RenderHtml(report, options), path, out);
}

absl::Status WriteText(const std::string& path, absl::string_view text,
                       std::ostream& out) {
  if (path == "-") {
    out << text;
    return absl::OkStatus();
  }
  std::ofstream file(path, std::ios::binary);
  if (file) file << text;
  if (file) file.close();
  if (!file) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status WriteAnalysisViews(const report::AnalysisReport& report,
                                const ViewOutputs& outputs, std::ostream& out,
                                std::ostream& notes) {
  if (!outputs.html.empty()) {
    TS_RETURN_IF_ERROR(
        WriteHtml(report::render::RenderHtml(report, {outputs.title}),
                  outputs.html, out));
  }
  if (!outputs.folded.empty()) {
    return WriteFolded(report::render::FoldedOperatorFlops(report),
                       outputs.folded, out, notes);
  }
  return absl::OkStatus();
}

absl::Status WriteCompareViews(const report::ReportDiff& diff,
                               absl::string_view before_text,
                               absl::string_view after_text,
                               const ViewOutputs& outputs, std::ostream& out,
                               std::ostream& notes) {
  if (outputs.html.empty() && outputs.folded.empty()) return absl::OkStatus();
  absl::StatusOr<report::AnalysisReport> before =
      report::ParseAnalysisReport(before_text, "before");
  absl::StatusOr<report::AnalysisReport> after =
      report::ParseAnalysisReport(after_text, "after");
  const absl::Status sides = before.ok() ? after.status() : before.status();
  if (!outputs.html.empty()) {
    if (!sides.ok()) {
      notes << "torchscan: note: --html shows the diff only, without charts: "
            << sides.message() << "\n";
    }
    TS_RETURN_IF_ERROR(WriteHtml(
        report::render::RenderHtml(diff, sides.ok() ? &*before : nullptr,
                                   sides.ok() ? &*after : nullptr,
                                   {outputs.title}),
        outputs.html, out));
  }
  if (!outputs.folded.empty()) {
    if (!sides.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--folded needs two full analysis reports: ", sides.message()));
    }
    return WriteFolded(report::render::FoldedOperatorFlopsDiff(*before, *after),
                       outputs.folded, out, notes);
  }
  return absl::OkStatus();
}

std::string CompareListing(const report::ReportDiff& diff) {
  std::string text = "Totals (after - before):\n";
  for (const auto& [name, metric] : diff.totals) {
    absl::StrAppend(&text, "  ", name, ": ",
                    report::MetricStatusName(metric.status));
    if (metric.delta) {
      absl::StrAppend(&text, ", delta ",
                      report::DumpJson(report::ToJson(*metric.delta)));
    }
    absl::StrAppend(&text, "\n");
  }
  absl::StrAppend(&text, "Layer calls: ", diff.added.size(), " added, ",
                  diff.removed.size(), " removed, ", diff.changed.size(),
                  " changed\n");
  for (const report::LayerDiff& change : diff.changed) {
    std::vector<std::string> names;
    for (const auto& [name, unused] : change.metrics) names.push_back(name);
    absl::StrAppend(&text, "  ", change.path.empty() ? "<root>" : change.path,
                    " #", change.call_index, ": ", absl::StrJoin(names, ", "),
                    "\n");
  }
  return text;
}

}  // namespace torchscan::cli
