// What the Python package's torch.compile integration calls
// (python/torchscan_dispatch/_compiler_integration.py): the operator every
// compiled graph calls to record its tally, and C functions for the calls
// made around every compiled call, through ctypes: through torch.ops a call
// costs about a microsecond (arguments parsed against the schema and boxed),
// through ctypes a fifth of that. Errors cannot cross a C boundary: a
// failing call returns -1. docs/design.md ("torch.compile") has the whole
// design.

#include <c10/core/DispatchKeySet.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "torchscan_dispatch/compiled_graph_tally.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/dispatch_key.h"
#include "torchscan_dispatch/hidden_region.h"
#include "torchscan_dispatch/operator_info.h"
#include "torchscan_dispatch/own_operators.h"
#include "torchscan_dispatch/thread_state.h"

namespace torchscan::dispatch {
namespace {

// The module label of each open compiled region's `self` on this thread
// (nullopt: module tracking is off), innermost last.
thread_local std::vector<std::optional<std::string>> compiled_roots;

// A forward graph's root label, kept for its backward graph (same family),
// which runs later in the autograd engine, outside the compiled region.
class FamilyRoots {
 public:
  static FamilyRoots& Get() {
    static auto* roots = new FamilyRoots();
    return *roots;
  }
  void Remember(std::uint64_t session, const std::string& family,
                const std::string& label) {
    absl::MutexLock lock(&mu_);
    roots_[{session, family}] = label;
  }
  std::optional<std::string> Find(std::uint64_t session,
                                  const std::string& family) {
    absl::MutexLock lock(&mu_);
    auto it = roots_.find({session, family});
    if (it == roots_.end()) return std::nullopt;
    return it->second;
  }

 private:
  absl::Mutex mu_;
  std::map<std::pair<std::uint64_t, std::string>, std::string> roots_
      ABSL_GUARDED_BY(mu_);
};

// NOTE [The tally call's device anchor]
// `device_anchor`, a tensor of the graph (its first input), is never read
// (only its device type, metadata: whether the graph's float32 products may
// run as TF32, compute_precision.h).
// It gives the call a device: Inductor's scheduler flushes the kernels it
// has buffered before an extern call only when that call has a device, and
// it emits the frees of those kernels' inputs at the call either way; a
// device-less call at the start of a graph therefore freed a graph input
// before the fused kernel that reads it ran (UnboundLocalError in the
// generated code of a compiled Conv2d forward and backward). The operator
// is tagged flexible_layout, so the anchor never makes Inductor copy it
// into another layout.
void CompiledGraphFlops(std::int64_t key, std::string spec,
                        c10::SymIntArrayRef symbols,
                        const std::optional<at::Tensor>& device_anchor) {
  ExecutionState& state = ThisThreadState().execution;
  CountingSession* session = CountingSession::Current();
  if (session == nullptr || state.compiling_depth > 0) return;
  const CompiledGraphTally& tally = TallyFor(key, spec);
  std::vector<std::int64_t> values;
  values.reserve(symbols.size());
  for (const c10::SymInt& symbol : symbols) {
    values.push_back(symbol.guard_int(__FILE__, __LINE__));
  }
  std::optional<std::string> root;
  if (!compiled_roots.empty() && compiled_roots.back()) {
    root = compiled_roots.back();
    FamilyRoots::Get().Remember(session->serial(), tally.family(), *root);
  } else if (compiled_roots.empty()) {
    root = FamilyRoots::Get().Find(session->serial(), tally.family());
  }
  ++state.tallies_recorded;
  std::optional<c10::DeviceType> device;
  if (device_anchor && device_anchor->defined()) {
    device = device_anchor->device().type();
  }
  tally.Record(*session, values, root, device);
}

const OwnOperators registration(
    torch::Library::FRAGMENT, {"compiled_graph_flops"},
    [](torch::Library& library) {
      // An explicit kernel: Inductor decomposes operators with a
      // CompositeImplicitAutograd (catch-all) kernel, and this one must stay
      // a call in the generated code.
      library.def(
          "compiled_graph_flops(int key, str spec, SymInt[] symbols, "
          "Tensor? device_anchor=None) -> ()",
          {at::Tag::flexible_layout});
      library.impl("compiled_graph_flops",
                   torch::dispatch(c10::DispatchKey::CompositeExplicitAutograd,
                                   &CompiledGraphFlops));
    },
    __FILE__, __LINE__);

}  // namespace
}  // namespace torchscan::dispatch

using torchscan::dispatch::CountingSession;
using torchscan::dispatch::ThisThreadState;

extern "C" {

// The raw DispatchKeySet bits of the counting key, which compiled calls take
// out of the thread-local included set.
__attribute__((visibility("default"))) std::uint64_t
torchscan_counting_key_bits() noexcept {
  return c10::DispatchKeySet(torchscan::dispatch::kCountingKey).raw_repr();
}

// A compiled call begins on this thread. When a measurement is counting here,
// opens a hidden region (its eager calls are counted by the observer) with
// `root_label` (nullable: module tracking off) as the label of the module
// the compiled frame belongs to, and returns 1; otherwise does nothing and
// returns 0. Pass the result to torchscan_exit_compiled_call.
__attribute__((visibility("default"))) std::int32_t
torchscan_enter_compiled_call(const char* root_label) noexcept {
  try {
    if (CountingSession::Current() == nullptr) return 0;
    torchscan::dispatch::compiled_roots.emplace_back(
        root_label == nullptr ? std::nullopt
                              : std::optional<std::string>(root_label));
    torchscan::dispatch::EnterHiddenRegion();
    return 1;
  } catch (...) {
    return 0;
  }
}

__attribute__((visibility("default"))) void torchscan_exit_compiled_call(
    std::int32_t entered) noexcept {
  if (entered == 0) return;
  torchscan::dispatch::ExitHiddenRegion();
  if (!torchscan::dispatch::compiled_roots.empty()) {
    torchscan::dispatch::compiled_roots.pop_back();
  }
}

// PyTorch starts (+1) or ends (-1) compiling on this thread.
__attribute__((visibility("default"))) void torchscan_change_compiling(
    std::int32_t delta) noexcept {
  ThisThreadState().execution.compiling_depth += delta;
}

// A compiled graph starts running on this thread; returns the count of
// tallies recorded so far, for torchscan_exit_compiled_graph.
__attribute__((visibility("default"))) std::uint64_t
torchscan_enter_compiled_graph() noexcept {
  torchscan::dispatch::ExecutionState& state = ThisThreadState().execution;
  ++state.compiled_graph_depth;
  return state.tallies_recorded;
}

// The graph ended: returns 1 when a measurement is counting on this thread
// and the graph recorded no tally (its work went unseen), else 0.
__attribute__((visibility("default"))) std::int32_t
torchscan_exit_compiled_graph(std::uint64_t tallies_before) noexcept {
  torchscan::dispatch::ExecutionState& state = ThisThreadState().execution;
  --state.compiled_graph_depth;
  return CountingSession::Current() != nullptr && state.compiling_depth == 0 &&
                 state.tallies_recorded == tallies_before
             ? 1
             : 0;
}

// Records work that ran where no operator call shows it: `what` names it
// ("inductor.compiled_graph", "cuda.CUDAGraph.replay"), `reason` says why its
// FLOPs are missing. 0 on success, -1 when nothing is counting or on error.
__attribute__((visibility("default"))) std::int32_t torchscan_record_unseen(
    const char* what, const char* reason) noexcept {
  try {
    CountingSession* session = CountingSession::Current();
    if (session == nullptr || what == nullptr || reason == nullptr) return -1;
    session->RecordCall(
        torchscan::dispatch::SyntheticOperatorInfo(what, nullptr, reason));
    return 0;
  } catch (...) {
    return -1;
  }
}

}  // extern "C"
