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

}  // namespace

ActiveCounting::ActiveCounting()
    : available_(EnsureCountingAvailable()),
      thread_(std::this_thread::get_id()),
      key_was_included_(c10::impl::tls_is_dispatch_key_included(kCountingKey)),
      previous_debug_info_(c10::ThreadLocalDebugInfo::current()),
      parent_(CountingSession::Current() == nullptr
                  ? nullptr
                  : CountingSession::Current()->shared_from_this()),
      session_(std::make_shared<CountingSession>()) {
  c10::ThreadLocalDebugInfo::_push(CountingSession::DebugInfoKind(), session_);
  c10::impl::tls_set_dispatch_key_included(kCountingKey, true);
}

ActiveCounting::~ActiveCounting() {
  c10::impl::tls_set_dispatch_key_included(kCountingKey, key_was_included_);
  c10::ThreadLocalDebugInfo::_forceCurrentDebugInfo(previous_debug_info_);
  if (parent_ != nullptr) parent_->MergeFrom(*session_);
}

}  // namespace torchscan::dispatch
