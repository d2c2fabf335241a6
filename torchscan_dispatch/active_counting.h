// ActiveCounting: switches counting on for the calling thread and, when
// stopped, restores exactly the thread state it found.

#ifndef TORCHSCAN_DISPATCH_ACTIVE_COUNTING_H_
#define TORCHSCAN_DISPATCH_ACTIVE_COUNTING_H_

#include <c10/util/ThreadLocalDebugInfo.h>

#include <memory>
#include <thread>

#include "torchscan_dispatch/counting_options.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/unseen_threads.h"

namespace torchscan::dispatch {

class ActiveCounting {
 public:
  // Throws c10::Error if the counting fallback could not be registered.
  explicit ActiveCounting(CountingOptions options = {});
  // Stops counting if still running, then hands what the session saw to the
  // enclosing session, if any. Must run on the constructing thread.
  ~ActiveCounting();

  ActiveCounting(const ActiveCounting&) = delete;
  ActiveCounting& operator=(const ActiveCounting&) = delete;

  // Switches counting off on this thread and restores its previous state;
  // what threads without a session ran meanwhile goes to the session
  // (unseen_threads.h). The session stays readable. Idempotent; must run on
  // the constructing thread.
  void Stop();
  bool stopped() const { return stopped_; }
  // Hands the session what threads without a session ran so far, for a
  // report taken before Stop (Stop does it too).
  void UpdateUnseenThreadWork() const;

  CountingSession& session() const { return *session_; }
  std::thread::id thread() const { return thread_; }

 private:
  const bool available_;
  const std::thread::id thread_;
  const bool key_was_included_;
  const std::shared_ptr<c10::ThreadLocalDebugInfo> previous_debug_info_;
  // The enclosing measurement on this thread, if any.
  const std::shared_ptr<CountingSession> parent_;
  const std::shared_ptr<CountingSession> session_;
  std::unique_ptr<UnseenThreadWatch> watch_;
  bool stopped_ = false;
};

// Counts the calling thread's operator calls into `session`, a measurement
// begun on another thread (a task the workload hands to a thread pool, a
// thread it starts), until destroyed; restores exactly the thread state it
// found. The thread is then not unseen for any watch. Work the thread does
// after the measurement stopped is counted into a session nobody reads
// again, so join for the length of one task, not a thread's life.
class JoinedCounting {
 public:
  // Throws c10::Error if the counting fallback could not be registered.
  explicit JoinedCounting(std::shared_ptr<CountingSession> session);
  // Must run on the constructing thread.
  ~JoinedCounting();

  JoinedCounting(const JoinedCounting&) = delete;
  JoinedCounting& operator=(const JoinedCounting&) = delete;

  std::thread::id thread() const { return thread_; }

 private:
  const bool available_;
  const std::thread::id thread_;
  const bool key_was_included_;
  const std::shared_ptr<c10::ThreadLocalDebugInfo> previous_debug_info_;
  const std::shared_ptr<CountingSession> session_;
};

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_ACTIVE_COUNTING_H_
