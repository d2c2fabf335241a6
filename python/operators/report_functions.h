// The report functions of the library's CPython extension module
// (hooks_module.cc): the summary table, the comparison of two reports, the
// HTML page, folded stacks, the diagnostics listing and the merge of rank
// reports, which Python's format_summary, compare_reports, to_html,
// to_folded, list_diagnostics, merge_rank_reports and the command line call.
// Each runs in the report library (report/summary.h, report/compare.h,
// report/render/report_documents.h).
//
// Python data in, Python data out: a report is the dict crawl_module,
// measure_flops or compare_reports returned (or json.load read), never
// JSON text. The summary's, compare's, the merge's and the roofline's
// reports are read straight from their objects as their records
// (report_from_objects.h, NOTE [Report arguments read from their objects]
// in report_functions.cc); the documents of the HTML page, folded stacks
// and the diagnostics listing, whose kind is told from their keys, are
// converted to report::Json (ToJson in python_objects.h) and read there.
// Either way the errors are the same. A value no JSON report can hold is a
// ValueError naming its path
// ("report is not a JSON report: report.layers[3].extra: a value of type
// Tensor is not JSON data"); a report the report library cannot read is a
// ValueError with that library's message, which names the field
// ("report.layers[2].metrics.macs.status: status must be ..."). Ints are
// exact over the reports' 128 bits, both ways.
//
//   render_summary(report, options) -> str
//       What summary() prints, its final newline included. `options` is a
//       dict of "wrap_mode" (str or None), "max_depth" (int or None),
//       "receptive_field" and "effective_rf_stats" (bool), each optional
//       (report::SummaryOptions' default), read as JSON: a bad option is a
//       ValueError "options.max_depth: expected an integer, got string".
//   compare_reports(before, after) -> dict
//       The diff of two reports, ours or TorchScan 0.2's.
//   render_html(report, before, after, title, device) -> str
//       The page of an analysis, a FLOP report or a diff; `before` and
//       `after` are None or, with a diff, the reports it was computed from;
//       `title` "" is the renderer's default.
//   folded_stacks(report, before, after) -> (str, bool, list[str])
//       The folded lines, whether the FLOPs are partial (lower bounds), and
//       the notes on paths whose children hold more than the path.
//   list_diagnostics(report, summary) -> str
//       The diagnostics listing; with a `summary` text (not ""), that text
//       with its Python hint replaced by the listing.
//   merge_rank_reports(reports, names) -> dict
//       One job report of per-rank FLOP reports (report/job_merge.h);
//       `names` (a list of str, one per report) start the paths of bad
//       values and name the reports in the merge's errors.
//
// The GIL is released while the report library works (NOTE [The GIL
// while the library works] in python_objects.h).

#ifndef TORCHSCAN_PYTHON_OPERATORS_REPORT_FUNCTIONS_H_
#define TORCHSCAN_PYTHON_OPERATORS_REPORT_FUNCTIONS_H_

#include "python/operators/python_objects.h"

namespace torchscan::dispatch {

// Adds the functions above to `module`; false with a Python error set on
// failure.
bool AddReportFunctions(PyObject* module);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_PYTHON_OPERATORS_REPORT_FUNCTIONS_H_
