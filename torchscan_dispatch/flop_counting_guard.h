// The C++ entry points: count the operator FLOPs of a workload.
//
//   torchscan::FlopCountingGuard guard;
//   model->forward(input).sum().backward();
//   absl::StatusOr<torchscan::report::FlopReport> report = guard.Report();
//
// While a guard is alive, every ATen operator the calling thread runs, and the
// backward pass the autograd engine runs for it (on any thread), is counted.
// Other threads are not: operators that carry FLOPs run meanwhile by a thread
// without a guard of its own make the report partial, with an unseen_work
// diagnostic naming the thread and the operator. Work the workload hands to
// other threads is counted when it runs through Follow (or under an
// at::ThreadLocalStateGuard of state captured on the guarded thread). Guards
// nest: an inner guard's work also counts for the enclosing one once the
// inner guard is gone.

#ifndef TORCHSCAN_DISPATCH_FLOP_COUNTING_GUARD_H_
#define TORCHSCAN_DISPATCH_FLOP_COUNTING_GUARD_H_

#include <functional>
#include <utility>

#include "absl/status/statusor.h"
#include "report/communication.h"
#include "report/flop_report.h"
#include "torchscan_dispatch/active_counting.h"
#include "torchscan_dispatch/counting_options.h"

namespace torchscan {

class FlopCountingGuard {
 public:
  explicit FlopCountingGuard(CountingOptions options = {})
      : counting_(std::move(options)) {}
  // Restores the thread's dispatch state; must run on the constructing thread.
  ~FlopCountingGuard() = default;

  FlopCountingGuard(const FlopCountingGuard&) = delete;
  FlopCountingGuard& operator=(const FlopCountingGuard&) = delete;

  // What was counted so far. Fails only if a total overflows 128 bits.
  absl::StatusOr<report::FlopReport> Report() const;
  // `task` wrapped to run, on any thread, with its operator calls counted by
  // this guard:
  //
  //   pool.Submit(guard.Follow([&] { worker_output = at::mm(a, b); }));
  //
  // Calls made after the guard's report was taken are not in it.
  std::function<void()> Follow(std::function<void()> task) const;
  // The collectives (c10d, functional collectives) seen so far: kinds,
  // group sizes, payload and bus bytes (docs/distributed.md).
  report::CommunicationReport Communication() const;

 private:
  dispatch::ActiveCounting counting_;
};

// Calls `workload` exactly once under a guard. Exceptions thrown by the
// workload propagate unchanged, with the thread state restored.
absl::StatusOr<report::FlopReport> MeasureFlops(
    const std::function<void()>& workload, CountingOptions options = {});

}  // namespace torchscan

#endif  // TORCHSCAN_DISPATCH_FLOP_COUNTING_GUARD_H_
