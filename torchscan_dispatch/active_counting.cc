#include "torchscan_dispatch/active_counting.h"

#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>

#include "torchscan_dispatch/dispatch_key.h"
#include "torchscan_dispatch/fallback_registration.h"

namespace torchscan::dispatch {
namespace {

// Runs before any state is changed, so a refusal leaves nothing to restore.
bool EnsureCountingAvailable() {
  absl::Status status = CountingFallbackStatus();
  TORCH_CHECK(status.ok(), "torchscan: ", status.message());
  return true;
}

// NOTE [Nested measurements' calls] in counting_session.cc: a measurement
// nested in one that keeps a per-call record keeps one too, for its parent.
CountingOptions UnderParent(CountingOptions options,
                            const CountingSession* parent) {
  if (parent != nullptr && parent->call_log() != nullptr) {
    options.record_calls = true;
  }
  return options;
}

std::shared_ptr<CountingSession> CurrentSession() {
  CountingSession* current = CountingSession::Current();
  return current == nullptr ? nullptr : current->shared_from_this();
}

}  // namespace

ActiveCounting::ActiveCounting(CountingOptions options)
    : available_(EnsureCountingAvailable()),
      thread_(std::this_thread::get_id()),
      key_was_included_(c10::impl::tls_is_dispatch_key_included(kCountingKey)),
      previous_debug_info_(c10::ThreadLocalDebugInfo::current()),
      parent_(CurrentSession()),
      session_(std::make_shared<CountingSession>(
          UnderParent(std::move(options), parent_.get()))),
      watch_(std::make_unique<UnseenThreadWatch>()) {
  c10::ThreadLocalDebugInfo::_push(CountingSession::DebugInfoKind(), session_);
  c10::impl::tls_set_dispatch_key_included(kCountingKey, true);
}

void ActiveCounting::Stop() {
  if (stopped_) return;
  stopped_ = true;
  UpdateUnseenThreadWork();
  watch_.reset();
  // The session may outlive the counter (autograd and forked threads hold
  // it): the record's RecordFunction callback must not.
  session_->CloseCallLog();
  c10::impl::tls_set_dispatch_key_included(kCountingKey, key_was_included_);
  c10::ThreadLocalDebugInfo::_forceCurrentDebugInfo(previous_debug_info_);
}

void ActiveCounting::UpdateUnseenThreadWork() const {
  if (watch_ != nullptr) session_->SetUnseenThreadWork(watch_->WorkSince());
}

ActiveCounting::~ActiveCounting() {
  Stop();
  if (parent_ != nullptr) parent_->MergeFrom(*session_);
}

JoinedCounting::JoinedCounting(std::shared_ptr<CountingSession> session)
    : available_(EnsureCountingAvailable()),
      thread_(std::this_thread::get_id()),
      key_was_included_(c10::impl::tls_is_dispatch_key_included(kCountingKey)),
      previous_debug_info_(c10::ThreadLocalDebugInfo::current()),
      session_(std::move(session)) {
  c10::ThreadLocalDebugInfo::_push(CountingSession::DebugInfoKind(), session_);
  c10::impl::tls_set_dispatch_key_included(kCountingKey, true);
}

JoinedCounting::~JoinedCounting() {
  c10::impl::tls_set_dispatch_key_included(kCountingKey, key_was_included_);
  c10::ThreadLocalDebugInfo::_forceCurrentDebugInfo(previous_debug_info_);
}

}  // namespace torchscan::dispatch
