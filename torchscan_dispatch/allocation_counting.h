// Counting a thread's heap allocations in a test.
//
// A test binary that links this library has every global operator new
// replaced (plain, array, aligned and nothrow forms) by one that counts its
// calls while the calling thread is counting, and otherwise allocates as the
// standard one does. Other threads' allocations, and this thread's outside
// `OperatorNewCallsOf`, are not counted. Link it only into a test binary of
// its own: the replacement applies to the whole program.

#ifndef TORCHSCAN_DISPATCH_ALLOCATION_COUNTING_H_
#define TORCHSCAN_DISPATCH_ALLOCATION_COUNTING_H_

#include <cstdint>

namespace torchscan::dispatch {

// Starts counting this thread's operator-new calls from zero.
void StartCountingAllocations();

// Stops counting on this thread and returns the calls since the start.
std::int64_t StopCountingAllocations();

// The operator-new calls `body()` makes on this thread.
template <typename Body>
std::int64_t OperatorNewCallsOf(Body&& body) {
  StartCountingAllocations();
  body();
  return StopCountingAllocations();
}

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_ALLOCATION_COUNTING_H_
