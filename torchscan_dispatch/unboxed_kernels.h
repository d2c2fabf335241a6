// Unboxed kernels on the counting key for a few hot operators (mm, addmm,
// bmm, conv2d and convolution, the CPU flash attention kernel, add and mul),
// registered next to the one boxed fallback (counting_fallback.cc).
//
// Each counts a plain call of its operator from the typed arguments, with
// the same formula, bytes rule and precision rule as the fallback, without
// boxing it; every other call it hands to the fallback boxed, unchanged.
// docs/design.md ("One fallback, and unboxed kernels for hot operators")
// says why and which calls are plain.

#ifndef TORCHSCAN_DISPATCH_UNBOXED_KERNELS_H_
#define TORCHSCAN_DISPATCH_UNBOXED_KERNELS_H_

#include <torch/library.h>

#include <cstdint>

namespace torchscan::dispatch {

// Registers the kernels in `aten`, an IMPL library of the aten namespace on
// the counting key. Called once, after the fallback registered.
void RegisterUnboxedKernels(torch::Library& aten);

// The calls the unboxed kernels counted (or passed on, for a composite
// operator) on this thread without the fallback: what tests read to tell
// the two paths apart.
std::uint64_t UnboxedCallsOnThisThread();

// While one is held, the unboxed kernels on this thread hand every call to
// the fallback boxed, as when they did not exist: the tests' and the
// benchmark's reference path.
class UnboxedKernelsOff {
 public:
  UnboxedKernelsOff();
  ~UnboxedKernelsOff();
  UnboxedKernelsOff(const UnboxedKernelsOff&) = delete;
  UnboxedKernelsOff& operator=(const UnboxedKernelsOff&) = delete;
};

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_UNBOXED_KERNELS_H_
