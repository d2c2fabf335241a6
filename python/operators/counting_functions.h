// The counting control functions of the library's CPython extension module
// (hooks_module.cc): how Python drives a measurement by handle
// (open_measurements.h), Python objects in and out, never JSON text.
//
// Python's measure_flops, FlopCounter and crawl_module span many calls:
// begin, scope changes (module hooks, layers, phases), stop, the deferred
// custom_mapping and registered formulas evaluated in Python with counting
// off, their results, the report (measurement_functions.h), finish.
//
//   begin_counting(options) -> int
//       Switches counting on for the calling thread; the new handle.
//       `options` is a dict, each member optional: {"deferred_packets":
//       ["aten.sin", ...] (operators whose calls are kept for Python's
//       formulas), "record_calls": bool (keep the per-call record)}.
//   stop_counting(handle)
//       Switches it off again, on the thread that began it.
//   resolve_deferred(handle, results)
//       The FLOPs of the deferred calls Python took (the
//       _take_deferred_calls operator, counting_ops.cc): a list with one
//       entry per call, in order, {"flops": int} or {"error": str}.
//   finish_counting(handle)
//       Stops (if needed) and forgets the measurement.
//   enter_layer(handle, layer, module_label)
//   exit_layer(handle, layer, module_label)
//       A crawled layer's call (a negative layer: a module without a layer
//       record) enters or leaves the layer and module scopes.
//   change_scope_label(handle, channel, label, present) -> int
//       Adds `label` to (`present`) or removes it from the scope of
//       `channel` (0: module scopes, 1: layer-call scopes); the new scope.
//   end_gradient_watches(handle)
//       Ends the measurement's gradient watches (gradient_watches.h).
//   join_counting(handle) -> int
//       The calling thread counts into the measurement (threads="follow")
//       until leave_counting of the returned token, on this thread.
//   leave_counting(token)
//   unseen_thread_watches() -> int
//       How many measurements watch for unseen threads.
//   has_formula(packet) -> bool
//       Whether the built-in formula table counts `packet` ("aten::mm" or
//       "aten.mm", any overload).
//
// A bad option or result is a ValueError, one line naming its path
// ("torchscan: options.record_calls: expected a boolean, got string"); an
// unknown handle or a misuse is a RuntimeError naming the handle, as from
// the operators these replace. The GIL is released while a measurement is
// looked up or changed (NOTE [The GIL while the library works] in
// python_objects.h), as torch.ops did.
//
// NOTE [Which control calls stay operators]
// None of these functions is called from code Dynamo traces or compiled
// code runs: module hooks are traced as empty (NOTE [Hooks under
// torch.compile] in _module_scopes.py), and the recomputation's and the
// threads' wrappers run uncompiled (NOTE [Frames Dynamo must not compile] in
// _compilation_marks.py). Two calls stay torch.ops operators
// (counting_ops.cc), for other reasons: _take_deferred_calls hands Python
// the calls' arguments and results, tensors among them, which only torch's
// own bindings turn into Python objects (this module uses the stable ABI and
// does not link them); and _build_info says which copy of the library owns
// the torchscan operators, which only the dispatcher knows (this module is
// imported from the copy _build_info names).

#ifndef TORCHSCAN_PYTHON_OPERATORS_COUNTING_FUNCTIONS_H_
#define TORCHSCAN_PYTHON_OPERATORS_COUNTING_FUNCTIONS_H_

#include "python/operators/python_objects.h"

namespace torchscan::dispatch {

// Adds the functions above to `module`; false with a Python error set on
// failure.
bool AddCountingFunctions(PyObject* module);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_PYTHON_OPERATORS_COUNTING_FUNCTIONS_H_
