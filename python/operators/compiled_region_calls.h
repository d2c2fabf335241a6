// What the Python package's torch.compile integration calls
// (python/torchscan_dispatch/_compiler_integration.py, _compiled_calls.py,
// _compilation_marks.py): the operator every compiled graph calls to record
// its tally (torchscan::compiled_graph_flops, registered in
// compiled_region_calls.cc; a compiled graph can only call an operator),
// and functions of the library's CPython extension module (hooks_module.cc)
// for the calls made around every compiled call and graph. Those run on hot
// paths, so each is a plain METH_NOARGS / METH_O call (about a tenth of a
// torch.ops call) with int and bytes arguments, and none raises for the
// state it finds: a failing call answers 0 or -1 as below. A wrong argument
// type is a TypeError. docs/design.md ("torch.compile") has the whole
// design.
//
//   counting_key_bits() -> int
//       The raw DispatchKeySet bits of the counting key, which compiled
//       calls take out of the thread-local included set.
//   counting_here() -> bool
//       Whether a measurement's session is current on this thread
//       (counting, or in a hidden region of it). When it is not, and no
//       module hooks of ours are installed, a compiled call or graph needs
//       nothing of ours (NOTE [Idle compiled calls] in _compiled_calls.py).
//   enter_compiled_call(root_label) -> int
//       A compiled call begins on this thread. When a measurement is
//       counting here, opens a hidden region (its eager calls are counted by
//       the observer) with `root_label` (bytes; None: module tracking off)
//       as the label of the module the compiled frame belongs to, and
//       returns 1; otherwise does nothing and returns 0. Pass the result to
//       exit_compiled_call.
//   exit_compiled_call(entered)
//   change_compiling(delta)
//       PyTorch starts (+1) or ends (-1) compiling on this thread.
//   enter_compiled_graph() -> int
//       A compiled graph starts running on this thread; returns the count
//       of tallies recorded so far, for exit_compiled_graph.
//   exit_compiled_graph(tallies_before) -> int
//       The graph ended: 1 when a measurement is counting on this thread and
//       the graph recorded no tally (its work went unseen), else 0.
//   record_unseen(what, reason) -> int
//       Records work that ran where no operator call shows it: `what`
//       (bytes) names it ("inductor.compiled_graph",
//       "cuda.CUDAGraph.replay"), `reason` says why its FLOPs are missing.
//       0 on success, -1 when nothing is counting or on error.

#ifndef TORCHSCAN_PYTHON_OPERATORS_COMPILED_REGION_CALLS_H_
#define TORCHSCAN_PYTHON_OPERATORS_COMPILED_REGION_CALLS_H_

#include "python/operators/python_objects.h"

namespace torchscan::dispatch {

// Adds the functions above to `module`; false with a Python error set on
// failure.
bool AddCompiledRegionFunctions(PyObject* module);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_PYTHON_OPERATORS_COMPILED_REGION_CALLS_H_
