// Test helper: a snapshot of everything a measurement changes on a thread,
// so tests check (rather than assume) that it is restored exactly.

#ifndef TORCHSCAN_DISPATCH_TESTING_THREAD_SNAPSHOT_H_
#define TORCHSCAN_DISPATCH_TESTING_THREAD_SNAPSHOT_H_

#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <cstdint>
#include <ostream>

#include "torchscan_dispatch/counting_session.h"

namespace torchscan::testing {

struct ThreadSnapshot {
  std::uint64_t included = 0;
  std::uint64_t excluded = 0;
  const dispatch::CountingSession* session = nullptr;
  const c10::ThreadLocalDebugInfo* debug_info = nullptr;

  static ThreadSnapshot Capture() {
    const c10::impl::LocalDispatchKeySet keys =
        c10::impl::tls_local_dispatch_key_set();
    return ThreadSnapshot{keys.included_.raw_repr(), keys.excluded_.raw_repr(),
                          dispatch::CountingSession::Current(),
                          c10::ThreadLocalDebugInfo::current().get()};
  }

  bool operator==(const ThreadSnapshot&) const = default;

  friend std::ostream& operator<<(std::ostream& out, const ThreadSnapshot& s) {
    return out << "{included=" << s.included << " excluded=" << s.excluded
               << " session=" << s.session << " debug_info=" << s.debug_info
               << "}";
  }
};

}  // namespace torchscan::testing

#endif  // TORCHSCAN_DISPATCH_TESTING_THREAD_SNAPSHOT_H_
