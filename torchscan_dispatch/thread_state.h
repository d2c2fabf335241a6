// Everything the counting fallback keeps per thread, in one thread_local.
//
// In a library loaded with dlopen (torch.ops.load_library), every access to a
// thread_local is a call to __tls_get_addr; the fallback looks this state up
// once per operator call and hands it on.

#ifndef TORCHSCAN_DISPATCH_THREAD_STATE_H_
#define TORCHSCAN_DISPATCH_THREAD_STATE_H_

#include <cstddef>
#include <cstdint>

namespace torchscan::dispatch {

struct OperatorInfo;

// A direct-mapped cache of operator facts: trivially destructible (no
// thread-exit work, no initialization guard) and a hit costs one compare.
struct OperatorCache {
  static constexpr std::size_t kSlots = 512;
  struct Slot {
    const void* key = nullptr;
    const OperatorInfo* info = nullptr;
  };
  std::uint64_t epoch = 0;
  Slot slots[kSlots];
};

// The session this thread recorded for last, and its per-thread stats.
struct SessionSlot {
  std::uint64_t serial = 0;
  void* stats = nullptr;
};

// What this thread is doing, as far as the counting rules care
// (docs/design.md, "Execution paths"). Each depth is raised and lowered by an
// RAII guard on this thread, so it is exact for the calls the thread makes.
struct ExecutionState {
  // Inside a kernel the fallback runs with the key excluded: the calls it
  // makes are its implementation, not the workload's.
  int kernel_depth = 0;
  // Inside an operator call with forward-mode AD tangents, which runs with
  // the key still active so that the tangent computations come back.
  int forward_ad_depth = 0;
  // PyTorch is compiling, tracing or autotuning on this thread.
  int compiling_depth = 0;
  // Inside a compiled graph, whose own tally records its FLOPs.
  int compiled_graph_depth = 0;
  // Compiled-graph tallies recorded by this thread so far.
  std::uint64_t tallies_recorded = 0;
  // Hidden regions open on this thread, and the RecordFunction callback
  // that counts in them (hidden_region.h).
  int hidden_depth = 0;
  std::uint64_t observer_handle = 0;
  // Inside a call the hidden-region observer counts.
  int observed_depth = 0;
  // Calls the unboxed kernels took without the fallback (unboxed_kernels.h).
  std::uint64_t unboxed_calls = 0;
  // Held UnboxedKernelsOff guards.
  int unboxed_off_depth = 0;
};

struct ThreadState {
  OperatorCache operators;
  // Keyed by the address of a schema's name, for the hidden-region observer.
  OperatorCache observed_operators;
  SessionSlot session;
  ExecutionState execution;
};

ThreadState& ThisThreadState();

// Raises one ExecutionState depth for the life of the guard.
class DepthGuard {
 public:
  explicit DepthGuard(int& depth) : depth_(depth) { ++depth_; }
  ~DepthGuard() { --depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;

 private:
  int& depth_;
};

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_THREAD_STATE_H_
