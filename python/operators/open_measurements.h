// The measurements Python has begun and not finished, by handle, and the
// deferred calls handed to Python for evaluation.
//
// Python's measure_flops and crawl_module span many calls into the library
// (begin, scope changes from module hooks, stop, deferred formulas, report,
// finish), so a measurement is named by an integer handle. The registry owns
// each measurement's ActiveCounting until Finish.

#ifndef TORCHSCAN_PYTHON_OPERATORS_OPEN_MEASUREMENTS_H_
#define TORCHSCAN_PYTHON_OPERATORS_OPEN_MEASUREMENTS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "torchscan_dispatch/active_counting.h"
#include "torchscan_dispatch/counting_options.h"
#include "torchscan_dispatch/counting_session.h"

namespace torchscan::dispatch {

// Every method throws c10::Error (a Python RuntimeError) for an unknown
// handle or a misuse, naming the handle.
class OpenMeasurements {
 public:
  static OpenMeasurements& Get();

  // Switches counting on for the calling thread; returns the new handle.
  std::int64_t Begin(CountingOptions options);
  // Switches counting off again; only the thread that began it may, and
  // only after the measurements it began later on that thread.
  void Stop(std::int64_t handle);
  // The session of a measurement; it stays alive until Finish.
  CountingSession& Session(std::int64_t handle);
  bool Stopped(std::int64_t handle);
  // Stops (if needed) and forgets the measurement.
  void Finish(std::int64_t handle);

 private:
  ActiveCounting& FindLocked(std::int64_t handle)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::int64_t next_handle_ ABSL_GUARDED_BY(mu_) = 1;
  // Ordered by handle, so later entries were begun later.
  std::map<std::int64_t, std::unique_ptr<ActiveCounting>> open_
      ABSL_GUARDED_BY(mu_);
};

// The deferred calls of each measurement that Python took (the
// _take_deferred_calls operator, counting_ops.cc) and has not resolved yet
// (resolve_deferred, counting_functions.h): their arguments and results
// stay alive here until then.
class HandedOutCalls {
 public:
  static HandedOutCalls& Get();

  // Appends `calls` to those of `handle`.
  void Add(std::int64_t handle, std::vector<DeferredCall> calls);
  // The calls of `handle`, in the order they were added, and forgets them.
  // The caller destroys them, outside the lock.
  std::vector<DeferredCall> Take(std::int64_t handle);

 private:
  absl::Mutex mu_;
  std::map<std::int64_t, std::vector<DeferredCall>> calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_PYTHON_OPERATORS_OPEN_MEASUREMENTS_H_
