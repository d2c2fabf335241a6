// The one place that names the dispatch key the counter registers on.
//
// TESTING_ONLY_GenericMode is a functionality key at the top of the dispatch
// order (above autograd, autocast and functorch), switched on per thread
// through the TLS included set, and PyTorch registers no fallback on it.
// docs/design.md explains the choice, the risks, and the load-time checks.

#ifndef TORCHSCAN_DISPATCH_DISPATCH_KEY_H_
#define TORCHSCAN_DISPATCH_DISPATCH_KEY_H_

#include <c10/core/DispatchKey.h>

namespace torchscan::dispatch {

inline constexpr c10::DispatchKey kCountingKey =
    c10::DispatchKey::TESTING_ONLY_GenericMode;

// The operator namespace of our own control operators (Python API).
inline constexpr const char kOwnNamespace[] = "torchscan";

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_DISPATCH_KEY_H_
