// The crawl functions of the library's CPython extension module
// (hooks_module.cc): the reports of the crawls Python's ExportedProgram
// crawler records (python/torchscan_dispatch/_crawl_support.py's
// finish_report), built by crawl::BuildAnalysisReport as every front end's
// are (module formulas, totals, diagnostics, report assembly).
//
// Python objects in, Python objects out, each read or written by its field
// table (report_from_objects.h, report_objects.h), never through JSON text:
// the crawl record is a dict in crawl::CrawlDocument's form
// (crawl/crawl_document.h). A bad value is a ValueError naming its field
// ("crawl.mode: must be 'full' or 'structure'", "layers[0].depth: expected
// an integer, got string").
//
//   crawl_report(crawl, context, inputs, layers) -> (report, incomplete)
//       The AnalysisReport, as Python objects, of `crawl` with the front
//       end's context, input metadata and layer records (each with its
//       `calls` metric). A full-mode record carries its operator FLOPs.
//       `incomplete` is strict mode's message for an incomplete report,
//       else None. The record's layer_count must be the number of layers.
//   measured_crawl_report(handle, crawl, context, inputs, layers)
//       The same for a full-mode crawl measured by measurement `handle`
//       (stopped, not finished): its operator FlopReport and the layer
//       calls' operator FLOPs are read from the measurement; the record
//       carries none. An unknown handle, or a measurement whose report
//       cannot be built, is a RuntimeError.
//   recover_attributes(graph) -> {"values": dict, "unrecovered": list}
//       The attributes a module call's graph shows (crawl::ModuleGraph in,
//       crawl::RecoveredAttributes out: crawl/recover_from_graph.h), by
//       their description keys, and the keys the graph does not show.
//
// The GIL is released while the crawl library works (NOTE [The GIL while
// the library works] in python_objects.h).
//
// (A TorchScript module is crawled by the _crawl_script_module operator
// instead: crawl_ops.cc says why.)

#ifndef TORCHSCAN_PYTHON_OPERATORS_CRAWL_FUNCTIONS_H_
#define TORCHSCAN_PYTHON_OPERATORS_CRAWL_FUNCTIONS_H_

#include "python/operators/python_objects.h"

namespace torchscan::dispatch {

// Adds the functions above to `module`; false with a Python error set on
// failure.
bool AddCrawlFunctions(PyObject* module);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_PYTHON_OPERATORS_CRAWL_FUNCTIONS_H_
