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

struct ThreadState {
  OperatorCache operators;
  SessionSlot session;
};

ThreadState& ThisThreadState();

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_THREAD_STATE_H_
