// A report as one self-contained HTML page: no network, no external file;
// the style sheet and a small dependency-free script are inline, and the
// chart data is a JSON block (<script type="application/json"
// id="torchscan-data">) that the script draws. Tables are plain HTML, so
// every number reads without the script.
//
// An analysis (crawl_module) shows
//   - a search box: matching bars and table rows are highlighted;
//   - the totals;
//   - icicle charts of FLOPs by module path, module formulas above operator
//     FLOPs, each the page's full width, on one scale: a bar's width is
//     proportional to its value, and a partial value (a lower bound) is
//     hatched and labelled "≥". A bar is labelled with its full path and
//     value, or as much as fits, or nothing (never a cut label); touching
//     siblings differ in colour. The module-formula chart names the layer
//     types without a formula; when it is empty it is one line saying so,
//     and when it is under a tenth of the scale it is folded into that line;
//   - icicle charts of parameters and of parameter + buffer bytes by module;
//   - a table of every layer call (output shape, parameters, bytes, module
//     FLOPs, MACs, operator FLOPs), sortable by any column and filterable by
//     path or type, runs of identical blocks folded (repeated_blocks.h);
//   - the operators (FLOPs and share, uncounted and ignored ones), sortable
//     and filterable;
//   - the diagnostics, grouped by code.
// A FlopReport (measure_flops) shows its operator FLOPs by module, the
// operators and the diagnostics; with bytes moved, also their total and
// upper bound (when a compiled graph ran) among the totals, their icicle by
// module, each operator's bytes and FLOPs per byte, and, given a device,
// the roofline plot. A compare (ReportDiff) shows the totals
// before and after, and every added, removed and changed layer call; given
// the two reports it was computed from, also their charts on one scale,
// with the changed, added and removed modules outlined.
//
// Clicking a bar zooms into it, with breadcrumbs back; clicking the top bar
// zooms out. Hovering a bar outlines the same module in the other charts of
// its group.

#ifndef TORCHSCAN_REPORT_RENDER_HTML_REPORT_H_
#define TORCHSCAN_REPORT_RENDER_HTML_REPORT_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "report/analysis_report.h"
#include "report/flop_report.h"
#include "report/render/roofline_plot.h"
#include "report/report_diff.h"

namespace torchscan::report::render {

struct HtmlOptions {
  // The page's title and heading; empty: the model's type (an analysis),
  // "Operator FLOPs" (a FlopReport), "Report comparison" (a diff).
  std::string title;
  // A FlopReport's page adds its operators on this device's roofline
  // (roofline_plot.h) when set; other pages ignore it.
  std::optional<RooflineDevice> roofline;
};

// Errors: values that are not integer counts where counts are expected,
// overflows.
absl::StatusOr<std::string> RenderHtml(const AnalysisReport& report,
                                       const HtmlOptions& options = {});
absl::StatusOr<std::string> RenderHtml(const FlopReport& report,
                                       const HtmlOptions& options = {});

// `before` and `after` are both null, or the two reports `diff` was computed
// from: InvalidArgument when CompareReports(*before, *after) is not `diff`
// (reports swapped or from another comparison), or when only one is given.
// OK when `diff` is CompareReports(before, after); otherwise the compare
// error, or InvalidArgument saying the reports are not the diff's.
absl::Status CheckDiffOf(const ReportDiff& diff, const AnalysisReport& before,
                         const AnalysisReport& after);

absl::StatusOr<std::string> RenderHtml(const ReportDiff& diff,
                                       const AnalysisReport* before,
                                       const AnalysisReport* after,
                                       const HtmlOptions& options = {});

}  // namespace torchscan::report::render

#endif  // TORCHSCAN_REPORT_RENDER_HTML_REPORT_H_
