// What the `torchscan` command writes besides its table and JSON report: the
// HTML page (--html), folded stacks (--folded), compare's listing and, in
// the table, the diagnostics listing that replaces the summary's Python
// hint. Torch-free
// and kept apart from main(), so that another front end (the Python command
// line) writes the same files the same way.

#ifndef TORCHSCAN_TOOLS_CLI_OUTPUTS_H_
#define TORCHSCAN_TOOLS_CLI_OUTPUTS_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "report/analysis_report.h"
#include "report/json_io.h"
#include "report/report_diff.h"

namespace torchscan::cli {

// Where the views go: "" not asked for, "-" standard output, else a file.
struct ViewOutputs {
  std::string html;
  std::string folded;
  // The page's title; "" for the renderer's default (html_report.h).
  std::string title;
};

// `text` into the file `path`, or onto `out` for "-". Error: InvalidArgument
// "cannot write PATH: <reason>".
absl::Status WriteText(const std::string& path, absl::string_view text,
                       std::ostream& out);

// The --html page and --folded stacks of an analysis. What a reader of the
// folded numbers must know (lower bounds, FoldedStacks::notes) goes to
// `notes`, one "torchscan: note: ..." line each. Errors: a structure-mode
// report has no folded stacks, a file that cannot be written.
absl::Status WriteAnalysisViews(const report::AnalysisReport& report,
                                const ViewOutputs& outputs, std::ostream& out,
                                std::ostream& notes);

// The views of `torchscan compare`, given the texts of the two reports. The
// page shows the diff, and the charts of both reports when both are full
// analyses (the minimal reports compare_reports also accepts have no
// modules to draw: a note says so). The folded stacks are differential and
// need both full reports: an error names the one that is not.
absl::Status WriteCompareViews(const report::ReportDiff& diff,
                               absl::string_view before_text,
                               absl::string_view after_text,
                               const ViewOutputs& outputs, std::ostream& out,
                               std::ostream& notes);

// The --html of `torchscan roofline REPORT.json --device-model NAME`: the
// FlopReport's page (html_report.h) with its operators on the device's
// roofline plot, titled `title` ("" the renderer's default). Errors, one
// line: an unknown device, a document that is not a FlopReport with a
// roofline (report/roofline.h's FlopReportForRoofline: a job report, a crawl
// report), a file that cannot be written.
absl::Status WriteRooflinePage(const report::Json& document,
                               absl::string_view device_name,
                               const std::string& path,
                               const std::string& title, std::ostream& out);

// What `compare` prints when no output replaces it: the totals' status and
// delta after - before, then the layer calls added, removed and changed,
// with the metrics that changed. Python's command line prints this text
// too (the extension module's compare_listing).
//   Totals (after - before):
//     flops: complete, delta 24
//   Layer calls: 0 added, 0 removed, 1 changed
//     fc #0: flops, macs
std::string CompareListing(const report::ReportDiff& diff);

}  // namespace torchscan::cli

#endif  // TORCHSCAN_TOOLS_CLI_OUTPUTS_H_
