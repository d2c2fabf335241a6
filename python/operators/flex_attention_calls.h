// What the Python package's flex attention hook
// (python/torchscan_dispatch/_flex_attention.py) calls for each eager call
// of flex attention's dense kernel, functions of the library's CPython
// extension module (hooks_module.cc): whether a measurement counts here, a
// region whose operator calls are our own work (the evaluation of the block
// mask's mask_mod), and the record of the call's mask exclusion
// (RecordFlexAttentionMask, attention_masks.h). These are not torchscan
// operators: nothing of them enters the dispatcher, so nothing of them can
// be counted. None raises for the state it finds: a failing call answers
// -1 (or None) as below; a wrong argument type is a TypeError.
//
//   counting_here() -> int
//       1 when a measurement counts on this thread and PyTorch is not
//       compiling here (a call's mask is worth evaluating), else 0.
//   stream_capturing(device) -> int
//       1 when the current stream of `device` (bytes, b"cuda:0") is being
//       captured into a graph (reading a value there would break the user's
//       capture), 0 when not or for the CPU, -1 for a device this build
//       cannot ask.
//   enter_not_counted() -> int
//       Operator calls from now until exit_not_counted of the returned
//       token (on this thread, innermost first) are our own work: neither
//       the counting key nor a hidden region's observer sees them (NOTE
//       [Reading values without being counted], call_recording.h). None on
//       failure.
//   exit_not_counted(token)
//   record_flex_attention_mask(packet, executed, all_pairs, allowed_pairs,
//                              unread_reason) -> int
//       Records the mask of one eager flex attention call of `packet`
//       (b"higher_order::flex_attention" or
//       b"higher_order::flex_attention_backward") in the measurement
//       counting on this thread: `executed` product FLOPs over `all_pairs`
//       pairs, `allowed_pairs` of them allowed; or, with `unread_reason`
//       (bytes, else None), the mask was not read and the whole products
//       are left out of the mask-aware count. 0 on success, -1 when nothing
//       is counting here, for another name or on error.

#ifndef TORCHSCAN_PYTHON_OPERATORS_FLEX_ATTENTION_CALLS_H_
#define TORCHSCAN_PYTHON_OPERATORS_FLEX_ATTENTION_CALLS_H_

#include "python/operators/python_objects.h"

namespace torchscan::dispatch {

// Adds the functions above to `module`; false with a Python error set on
// failure.
bool AddFlexAttentionFunctions(PyObject* module);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_PYTHON_OPERATORS_FLEX_ATTENTION_CALLS_H_
