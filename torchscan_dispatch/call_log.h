// The per-call record (opt-in): every call a counting session records, in
// order, with what joins it to a torch.profiler event of the same run.
//
// NOTE [Joining calls with profiler events]
// The dispatcher opens a RecordFunction for every observed operator call
// before dispatch reaches our key (Dispatcher::callBoxed), and closes it
// after the call returns; calls our fallback makes with redispatch open
// none. So while a counted call is recorded, the innermost open
// RecordFunction of the function scope on this thread is that call's own
// (composite operators: aten::linear's decomposition calls aten::t and
// aten::addmm through the full dispatcher, each with its own RecordFunction,
// and addmm is recorded inside its own, never inside linear's).
// RecordFunction gives each one a process-unique handle when any callback
// asks for ids, and torch.profiler writes that handle into each CPU
// operator event of its Chrome trace ("Record function id"). While a call
// log exists, a global RecordFunction callback that asks for ids keeps a
// per-thread stack of open function-scope RecordFunctions; each recorded
// call takes the top's handle. The join is then by id, one to one. A call
// recorded while the top is not a RecordFunction of the same operator (an
// unobserved operator, record functions disabled, a call recorded outside
// its operator's RecordFunction) gets handle 0 and the name it saw, so the
// join can name it rather than guess.
//
// Off by default: a session without a log pays one predictable branch per
// recorded call, and no callback is installed.

#ifndef TORCHSCAN_DISPATCH_CALL_LOG_H_
#define TORCHSCAN_DISPATCH_CALL_LOG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "report/count.h"

namespace torchscan::dispatch {

enum class LoggedCallKind : std::uint8_t {
  // A formula counted it: `flops` is its count.
  kCounted = 0,
  // No formula counts it (0 FLOPs, or an operator without a formula).
  kUncounted = 1,
  // Its formula failed.
  kFailed = 2,
  // Deferred: its FLOPs are evaluated after the workload, not logged here.
  kDeferred = 3,
};

struct LoggedCall {
  // The RecordFunction handle of the call's profiler event; 0 if the call
  // was not recorded inside its own operator's RecordFunction.
  std::uint64_t record_function = 0;
  // at::RecordFunction::currentThreadId() of the recording thread.
  std::uint64_t thread = 0;
  std::uint32_t operator_id = 0;
  // The session's module scope id when the call was recorded.
  std::uint32_t module_scope = 0;
  LoggedCallKind kind = LoggedCallKind::kUncounted;
  bool bytes_known = true;
  report::Count flops = 0;
  std::int64_t bytes_read = 0;
  std::int64_t bytes_written = 0;
  // With record_function == 0: the innermost open RecordFunction's name
  // ("" if none), for the join's diagnostic.
  std::string seen_instead;
};

class CallLog {
 public:
  // Installs the RecordFunction callback (shared by all live logs).
  CallLog();
  // Removes it when the last log goes.
  ~CallLog();
  CallLog(const CallLog&) = delete;
  CallLog& operator=(const CallLog&) = delete;

  // Logs a call of the operator whose schema name is `packet` ("aten::mm"):
  // `call`'s record_function, thread and seen_instead are filled here. After
  // Close, calls are dropped.
  void Append(const char* packet, LoggedCall call);

  // Appends `calls`, logged by a nested measurement's own log, as calls of
  // this log's module scope `module_scope` (NOTE [Nested measurements'
  // calls] in counting_session.cc). After Close, calls are dropped.
  void Adopt(std::vector<LoggedCall> calls, std::uint32_t module_scope);

  // Ends the log when its counter stops: this log's share of the callback
  // goes (the last log removes it), even while something else still holds
  // the session. The calls logged so far stay readable. Idempotent.
  void Close();

  // The calls logged so far, in the order they were recorded.
  std::vector<LoggedCall> Calls() const;

 private:
  mutable absl::Mutex mu_;
  std::vector<LoggedCall> calls_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

// NOTE [Calls recorded as their RecordFunction ends]
// A hidden region (hidden_region.cc) records a call from a thread-local
// RecordFunction end callback. RecordFunction runs global end callbacks
// before thread-local ones, so the log's own callback has already popped
// that RecordFunction: the top of the stack is the enclosing one, which may
// even be of the same operator (a wrapper subclass's aten::mm around the
// dense aten::mm). While one of these is alive on a thread, the calls that
// thread logs join the RecordFunction it names instead of the stack's top.
class FinishingRecordFunction {
 public:
  // `name` must outlive this object (a RecordFunction's, while it runs).
  FinishingRecordFunction(std::uint64_t handle, const char* name);
  ~FinishingRecordFunction();
  FinishingRecordFunction(const FinishingRecordFunction&) = delete;
  FinishingRecordFunction& operator=(const FinishingRecordFunction&) = delete;

  std::uint64_t handle() const { return handle_; }
  const char* name() const { return name_; }

 private:
  const FinishingRecordFunction* const previous_;
  const std::uint64_t handle_;
  const char* const name_;
};

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_CALL_LOG_H_
