// HiddenRegion: counts the operator calls our dispatch key cannot see.
//
// Two places keep the key away from calls that are still the workload's:
// a tensor subclass's __torch_dispatch__ (the Python key's fallback excludes
// every key above Python while it runs) and a torch.compile'd call (the key
// is taken out of the thread-local set so that Dynamo's guards never see it,
// compiled_region.h). While a HiddenRegion is alive on a thread, a
// thread-local RecordFunction observer counts the calls made there with the
// fallback's rules: composite and functorch-logical calls are transparent,
// calls on subclasses are transparent (their dense calls come back), and a
// counted call's own internal calls are not counted again.
//
// RecordFunction runs its callbacks in Dispatcher::call, for every call that
// enters the dispatcher whatever its key set, and PyTorch copies thread-local
// callbacks into the autograd engine's threads with the rest of the
// thread-local state. Registering it only inside hidden regions keeps its
// cost (arguments boxed and copied for every call) off ordinary eager code.

#ifndef TORCHSCAN_DISPATCH_HIDDEN_REGION_H_
#define TORCHSCAN_DISPATCH_HIDDEN_REGION_H_

namespace torchscan::dispatch {

class HiddenRegion {
 public:
  HiddenRegion();
  ~HiddenRegion();

  HiddenRegion(const HiddenRegion&) = delete;
  HiddenRegion& operator=(const HiddenRegion&) = delete;
};

// Opens and closes a hidden region on this thread without an RAII scope (for
// regions whose ends are Python calls). Calls must pair on the same thread.
void EnterHiddenRegion();
void ExitHiddenRegion();

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_HIDDEN_REGION_H_
