// CountingSession: what one measurement saw, from every thread that worked
// for it.
//
// A session is found through c10::ThreadLocalDebugInfo, which PyTorch copies
// into the autograd engine's threads, at::launch tasks and JIT forks together
// with the dispatch-key TLS. So a backward pass run by the engine on another
// thread is counted by the session of the thread that called backward(),
// which a plain thread_local could not do.

#ifndef TORCHSCAN_DISPATCH_COUNTING_SESSION_H_
#define TORCHSCAN_DISPATCH_COUNTING_SESSION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <c10/util/ThreadLocalDebugInfo.h>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "report/flop_report.h"
#include "torchscan_dispatch/operator_info.h"

namespace torchscan::dispatch {

using report::Count;

class CountingSession : public c10::DebugInfoBase,
                        public std::enable_shared_from_this<CountingSession> {
 public:
  CountingSession();
  ~CountingSession() override;

  CountingSession(const CountingSession&) = delete;
  CountingSession& operator=(const CountingSession&) = delete;

  // The innermost session active on this thread, or nullptr.
  static CountingSession* Current();
  // The slot in c10::ThreadLocalDebugInfo that holds sessions.
  static const c10::DebugInfoKind& DebugInfoKind();

  // A call of `op` that no formula counts.
  void RecordCall(const OperatorInfo& op);
  // A call of `op` whose formula gave `flops`.
  void RecordCounted(const OperatorInfo& op, Count flops);
  // A call of `op` whose formula could not be evaluated.
  void RecordFailed(const OperatorInfo& op, const absl::Status& error);

  // Adds everything `inner` saw. A nested measurement's work also belongs to
  // the enclosing one, as with nested FlopCounterModes.
  void MergeFrom(const CountingSession& inner);

  // What the session saw so far, merged over threads.
  absl::StatusOr<report::FlopReport> BuildReport() const;

 private:
  struct OperatorStats {
    std::int64_t calls = 0;
    std::int64_t counted_calls = 0;
    Count flops = 0;
    std::int64_t failed_calls = 0;
    std::string first_failure;
  };
  // Written by one thread; read by BuildReport under its lock.
  struct ThreadStats {
    std::thread::id owner;
    mutable absl::Mutex mu;
    absl::flat_hash_map<std::uint32_t, OperatorStats> by_operator
        ABSL_GUARDED_BY(mu);
  };

  static void Add(OperatorStats& into, const OperatorStats& from);
  ThreadStats& ThisThread();

  // Distinguishes sessions in per-thread caches (addresses get reused).
  const std::uint64_t serial_;
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<ThreadStats>> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_COUNTING_SESSION_H_
