// The crawl functions of the library's CPython extension module
// (hooks_module.cc): the reports of the crawls Python's ExportedProgram
// crawler records (python/torchscan_dispatch/_crawl_support.py's
// finish_report), built by crawl::BuildAnalysisReport as every front end's
// are (module formulas, totals, diagnostics, report assembly), and the
// evaluation of a bare crawl record (crawl/crawl_json.h).
//
// Python data in, Python data out: the crawl record is a dict in
// crawl/crawl_json.h's form, converted to report::Json directly (ToJson in
// python_objects.h), never through JSON text; the result is the dict of the
// report's computed parts described there. A value no JSON document can
// hold is a ValueError naming its path ("crawl is not a JSON crawl record:
// crawl.leaf_calls[0].call: a value of type Tensor is not JSON data"); a
// record the crawl library cannot read is a ValueError with its message,
// which names the field ("crawl.mode: must be 'full' or 'structure'").
//
//   crawl_report(crawl, context, inputs, layers) -> (report, incomplete)
//       The AnalysisReport, as Python objects, of `crawl` with the front
//       end's context, input metadata and layer records (each with its
//       `calls` metric), read by their field tables (report_from_objects.h;
//       a bad one is a ValueError naming its field). `incomplete` is strict
//       mode's message for an incomplete report, else None. The record's
//       layer_count must be the number of layers.
//   measured_crawl_report(handle, crawl, context, inputs, layers)
//       The same for a full-mode crawl measured by measurement `handle`, as
//       evaluate_measured_crawl reads it.
//   evaluate_crawl(crawl) -> dict
//       The computed parts of the report of `crawl`, whose operator FLOPs
//       (full mode) come in the record.
//   evaluate_measured_crawl(handle, crawl) -> dict
//       The same for a full-mode crawl measured by measurement `handle`
//       (stopped, not finished): its operator FlopReport and the layer
//       calls' operator FLOPs are read from the measurement, not from the
//       record. An unknown handle, or a measurement whose report cannot be
//       built, is a RuntimeError.
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
