// Load-time registration of the counting fallback, and whether it succeeded.
//
// Registration happens while the library is being loaded (a static
// initializer), where an exception would abort the process or leave it half
// loaded. So conflicts are recorded instead of thrown: if another library
// already owns a fallback on the counting key, counting refuses to start with
// an error that names the conflict, rather than silently counting nothing.

#ifndef TORCHSCAN_DISPATCH_FALLBACK_REGISTRATION_H_
#define TORCHSCAN_DISPATCH_FALLBACK_REGISTRATION_H_

#include "absl/status/status.h"

namespace torchscan::dispatch {

// OK when this library's fallback is the one registered on the counting key.
absl::Status CountingFallbackStatus();

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_FALLBACK_REGISTRATION_H_
