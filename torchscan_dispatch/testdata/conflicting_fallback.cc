// Test-only stand-in for another tool that already owns a fallback on the
// dispatch key TorchScan Dispatch counts on (torchscan_dispatch/dispatch_key.h
// names it; this library must not link the plugin, whose own registration
// would then run too). Loaded before the plugin, it makes the plugin's
// load-time registration find the key taken (docs/reliability.md).

#include <torch/library.h>

TORCH_LIBRARY_IMPL(_, TESTING_ONLY_GenericMode, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}
