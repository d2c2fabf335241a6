#include "torchscan_dispatch/active_counting.h"

#include <c10/core/impl/LocalDispatchKeySet.h>

#include "torchscan_dispatch/dispatch_key.h"

namespace torchscan::dispatch {

ActiveCounting::ActiveCounting()
    : thread_(std::this_thread::get_id()),
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
