#include "torchscan_dispatch/call_log.h"

#include <ATen/record_function.h>

#include <cstring>
#include <iterator>
#include <memory>
#include <utility>

namespace torchscan::dispatch {
namespace {

struct OpenRecordFunction {
  std::uint64_t handle = 0;
  // RecordFunction::name(): for an operator, its schema's name, which the
  // dispatcher keeps alive; read only while the RecordFunction is open.
  const char* name = nullptr;
};

// This thread's open function-scope RecordFunctions, innermost last. Kept
// while any log exists; a RecordFunction opened before the callback was
// installed never reaches it, and one that ends after the callback went
// pops its own entry only (by handle).
thread_local std::vector<OpenRecordFunction> open_record_functions;

// NOTE [Calls recorded as their RecordFunction ends] in call_log.h.
thread_local const FinishingRecordFunction* finishing = nullptr;

// The RecordFunction a call logged now belongs to, if any.
OpenRecordFunction Enclosing() {
  if (finishing != nullptr) return {finishing->handle(), finishing->name()};
  if (open_record_functions.empty()) return {};
  return open_record_functions.back();
}

std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction& fn) {
  open_record_functions.push_back({fn.handle(), fn.name()});
  return nullptr;
}

void OnEnd(const at::RecordFunction& fn, at::ObserverContext*) {
  if (!open_record_functions.empty() &&
      open_record_functions.back().handle == fn.handle()) {
    open_record_functions.pop_back();
  }
}

// One callback for all live logs.
struct Installation {
  absl::Mutex mu;
  int logs ABSL_GUARDED_BY(mu) = 0;
  at::CallbackHandle handle ABSL_GUARDED_BY(mu) = 0;
};

Installation& TheInstallation() {
  static Installation* installation = new Installation();
  return *installation;
}

// Amortised storage: a log starts with room for this many calls.
constexpr std::size_t kInitialCalls = 4096;

}  // namespace

CallLog::CallLog() {
  calls_.reserve(kInitialCalls);
  Installation& installation = TheInstallation();
  absl::MutexLock lock(&installation.mu);
  // Counted only once installed: a failed install leaves nothing to undo.
  if (installation.logs == 0) {
    installation.handle =
        at::addGlobalCallback(at::RecordFunctionCallback(&OnStart, &OnEnd)
                                  .needsIds(true)
                                  .scopes({at::RecordScope::FUNCTION}));
  }
  ++installation.logs;
}

CallLog::~CallLog() { Close(); }

void CallLog::Close() {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
  }
  Installation& installation = TheInstallation();
  absl::MutexLock lock(&installation.mu);
  if (--installation.logs == 0) {
    at::removeCallback(installation.handle);
    installation.handle = 0;
  }
}

FinishingRecordFunction::FinishingRecordFunction(std::uint64_t handle,
                                                 const char* name)
    : previous_(finishing), handle_(handle), name_(name) {
  finishing = this;
}

FinishingRecordFunction::~FinishingRecordFunction() { finishing = previous_; }

void CallLog::Append(const char* packet, LoggedCall call) {
  call.thread = at::RecordFunction::currentThreadId();
  const OpenRecordFunction enclosing = Enclosing();
  if (enclosing.name != nullptr && std::strcmp(enclosing.name, packet) == 0) {
    call.record_function = enclosing.handle;
  } else {
    call.record_function = 0;
    call.seen_instead = enclosing.name == nullptr ? "" : enclosing.name;
  }
  absl::MutexLock lock(&mu_);
  if (!closed_) calls_.push_back(std::move(call));
}

void CallLog::Adopt(std::vector<LoggedCall> calls, std::uint32_t module_scope) {
  for (LoggedCall& call : calls) call.module_scope = module_scope;
  absl::MutexLock lock(&mu_);
  if (closed_) return;
  calls_.insert(calls_.end(), std::make_move_iterator(calls.begin()),
                std::make_move_iterator(calls.end()));
}

std::vector<LoggedCall> CallLog::Calls() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

}  // namespace torchscan::dispatch
