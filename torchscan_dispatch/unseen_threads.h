// UnseenThreadWatch: notices operator calls that threads outside every
// measurement run while a measurement is open, so that a report is never
// `complete` while other threads ran work it did not count.
//
// A thread is *unseen* when it runs an operator call with no counting
// session of its own: the counting key is not in its included set and no
// session is found through c10::ThreadLocalDebugInfo. Threads that measure
// for themselves, the autograd engine's threads and at::launch tasks that
// inherit a session, and threads that joined one (JoinedCounting) are not
// unseen. Neither are calls made inside an at::parallel_for region (a
// kernel's own workers) nor calls that carry no FLOPs: operators on the
// ignore list (views, allocation) and composite operators, whose
// decomposition is seen call by call.
//
// While at least one watch is alive, one global RecordFunction callback
// (needsInputs false, so no argument is boxed) is installed; the first watch
// installs it and the last one removes it. Its early-out for a measured
// thread is one thread-local key-set test; an unseen thread notes a call
// in its own counters without a lock. Work is kept per unseen thread (by
// native thread id, as threading.get_native_id() reports it) for the life
// of the process, and each watch reports the difference between what it
// finds when it ends and what it found when it began, so any number of
// watches, on any threads, share one callback.
//
// Cost: while a watch is alive, every operator call of every thread in the
// process takes PyTorch's RecordFunction path in Dispatcher::call (a
// RecordFunction built per call), the measuring thread's included; no
// per-thread opt-out exists that keeps other RecordFunction users (the
// profiler) whole. docs/performance.md, section 2a, has the figures.
//
// The watch cannot tell whose work an unseen call is: while two
// measurements are open, a third thread's work is reported by both.

#ifndef TORCHSCAN_DISPATCH_UNSEEN_THREADS_H_
#define TORCHSCAN_DISPATCH_UNSEEN_THREADS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace torchscan::dispatch {

// What one unseen thread ran during a watch.
struct UnseenThreadWork {
  // The kernel's thread id (gettid), as threading.get_native_id() gives it.
  std::int64_t native_id = 0;
  // The thread's name as the kernel knows it (pthread_setname_np); Python
  // threads keep the process's name unless their code set one.
  std::string name;
  // Operator id (OperatorInfoById) to calls.
  std::map<std::uint32_t, std::int64_t> calls;

  bool operator==(const UnseenThreadWork&) const = default;
};

class UnseenThreadWatch {
 public:
  UnseenThreadWatch();
  ~UnseenThreadWatch();

  UnseenThreadWatch(const UnseenThreadWatch&) = delete;
  UnseenThreadWatch& operator=(const UnseenThreadWatch&) = delete;

  // What unseen threads ran since this watch began, by native id.
  std::vector<UnseenThreadWork> WorkSince() const;

 private:
  // Calls per operator per native id when the watch began.
  std::map<std::int64_t, std::map<std::uint32_t, std::int64_t>> start_;
};

// How many watches are alive in the process (0: no callback is installed).
int OpenUnseenThreadWatches();

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_UNSEEN_THREADS_H_
