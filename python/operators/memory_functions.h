// The peak memory functions of the library's CPython extension module
// (hooks_module.cc), through which Python's measure_peak_memory
// (python/torchscan_dispatch/process.py) drives a measurement
// (torchscan_dispatch/peak_memory.h): begin, with every device check, before
// the workload runs; then end.
//
//   begin_peak_memory(device) -> int
//       Begins a measurement of `device` (a str torch.device reads, such as
//       "cpu" or "cuda:0") on the calling thread; returns its handle. A
//       backend without a measurement is a NotImplementedError, any other
//       problem (a device string c10 cannot read, a CUDA device this build
//       of PyTorch lacks, an active profiler) a RuntimeError, each one line
//       naming the cause, as TorchScan 0.2 raises them.
//   end_peak_memory(handle) -> dict
//       Ends measurement `handle` and returns PyTorch's memory during it:
//       PeakMemoryToJson's document as Python data ({"device", "metric",
//       "baseline_bytes", "peak_bytes", "delta_bytes", and
//       "allocated_peak_bytes" on accelerators). Only the thread that began
//       a measurement may end it; an unknown handle or another thread is a
//       RuntimeError.
//
// The GIL is released while the measurement begins and ends (NOTE [The GIL
// while the library works] in python_objects.h).

#ifndef TORCHSCAN_PYTHON_OPERATORS_MEMORY_FUNCTIONS_H_
#define TORCHSCAN_PYTHON_OPERATORS_MEMORY_FUNCTIONS_H_

#include "python/operators/python_objects.h"

namespace torchscan::dispatch {

// Adds the functions above to `module`; false with a Python error set on
// failure.
bool AddMemoryFunctions(PyObject* module);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_PYTHON_OPERATORS_MEMORY_FUNCTIONS_H_
