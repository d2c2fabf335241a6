// The measurement functions of the library's CPython extension module
// (hooks_module.cc): what Python reads of a measurement it drives by handle
// (counting_ops.cc begins, stops and finishes it; open_measurements.h holds
// it), as Python data, never through JSON text.
//
//   flop_report(handle) -> dict
//       The measurement's FlopReport (docs/report-schema.md), with its
//       "communication" when collectives ran: what measure_flops returns.
//   step_report(handle) -> (dict, held)
//       What StepMeter reads of that report (NOTE [What a step reads of its
//       report, natively] in measurement_functions.cc): the report with
//       by_operator, by_operator_precision, ignored_operators, diagnostics
//       and the byte counts per operator and diagnostics left empty, each
//       member it keeps equal to flop_report's; and `held`, a capsule
//       holding the built report, independent of the measurement (which may
//       finish).
//   held_report(held) -> dict
//       The report `held` holds, exactly as flop_report gave it then: the
//       full report is converted only when asked for.
//   call_log(handle) -> dict
//       The per-call record (call_log.h) of a measurement begun with
//       record_calls: {"calls": [[record_function, thread, operator, kind,
//       flops, bytes_read, bytes_written, bytes_known, module_scope,
//       seen_instead], ...], "module_scopes": {"<id>": [labels]}}, operator
//       as reports print it ("aten.mm"), kind one of "counted",
//       "uncounted", "failed", "deferred".
//
// An unknown handle, a report that cannot be built, or a call_log of a
// measurement without a record is a RuntimeError, as from the operators
// these replace. The GIL is released while the report is built (NOTE [The
// GIL while the library works] in python_objects.h).

#ifndef TORCHSCAN_PYTHON_OPERATORS_MEASUREMENT_FUNCTIONS_H_
#define TORCHSCAN_PYTHON_OPERATORS_MEASUREMENT_FUNCTIONS_H_

#include "python/operators/python_objects.h"

namespace torchscan::dispatch {

// Adds the functions above to `module`; false with a Python error set on
// failure.
bool AddMeasurementFunctions(PyObject* module);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_PYTHON_OPERATORS_MEASUREMENT_FUNCTIONS_H_
