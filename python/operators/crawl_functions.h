// The crawl functions of the library's CPython extension module
// (hooks_module.cc): the evaluation of the crawls Python's ExportedProgram
// crawler records (python/torchscan_dispatch/_crawl_support.py's
// finish_report): the module formulas, totals and diagnostics, and the
// report assembly (crawl/crawl_json.h).
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
