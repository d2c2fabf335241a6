#include "torchscan_dispatch/call_log.h"

#include <ATen/record_function.h>

#include <cstring>
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
  if (installation.logs++ == 0) {
    installation.handle =
        at::addGlobalCallback(at::RecordFunctionCallback(&OnStart, &OnEnd)
                                  .needsIds(true)
                                  .scopes({at::RecordScope::FUNCTION}));
  }
}

CallLog::~CallLog() {
  Installation& installation = TheInstallation();
  absl::MutexLock lock(&installation.mu);
  if (--installation.logs == 0) {
    at::removeCallback(installation.handle);
    installation.handle = 0;
  }
}

void CallLog::Append(const char* packet, LoggedCall call) {
  call.thread = at::RecordFunction::currentThreadId();
  if (!open_record_functions.empty() &&
      open_record_functions.back().name != nullptr &&
      std::strcmp(open_record_functions.back().name, packet) == 0) {
    call.record_function = open_record_functions.back().handle;
  } else {
    call.record_function = 0;
    call.seen_instead =
        open_record_functions.empty() ? "" : open_record_functions.back().name;
  }
  absl::MutexLock lock(&mu_);
  calls_.push_back(std::move(call));
}

std::vector<LoggedCall> CallLog::Calls() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

}  // namespace torchscan::dispatch
