#include "python/operators/gradient_watches.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/graph_task.h>
#include <torch/csrc/autograd/variable.h>

#include <atomic>
#include <exception>
#include <memory>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "python/operators/open_measurements.h"
#include "torchscan_dispatch/counting_session.h"

namespace torchscan::dispatch {
namespace {

using torch::autograd::Node;

// Where a hook was registered: the tensor, its index, and the tensor's hook
// list at the time (an in-place operation gives the tensor a new list, and
// the old one, with our hook, stays with the old gradient function).
struct HookPlace {
  c10::weak_intrusive_ptr<c10::TensorImpl> tensor;
  unsigned index;
  std::weak_ptr<torch::autograd::hooks_list> list;
};

void RemoveHook(const HookPlace& place) {
  c10::intrusive_ptr<c10::TensorImpl> impl = place.tensor.lock();
  if (!impl) return;
  const at::Tensor tensor(std::move(impl));
  const torch::autograd::AutogradMeta* meta =
      torch::autograd::impl::get_autograd_meta(tensor);
  if (meta == nullptr || meta->cpp_hooks_list_ == nullptr ||
      meta->cpp_hooks_list_ != place.list.lock()) {
    return;
  }
  tensor.remove_hook(place.index);
}

// The watches of one measurement.
struct MeasurementWatches {
  explicit MeasurementWatches(std::int64_t handle) : handle(handle) {}

  const std::int64_t handle;
  std::atomic<bool> open{true};
  // ModuleTracker queues one reset per backward, however many modules
  // enter in it.
  std::atomic<bool> reset_queued{false};

  absl::Mutex mu;
  // Hooks to remove when the measurement ends, on tensors still alive.
  std::vector<HookPlace> hooks ABSL_GUARDED_BY(mu);
};

// Runs `change` on the measurement's session unless the measurement ended.
template <typename Change>
void OnSession(const MeasurementWatches& owner, Change change) {
  if (!owner.open.load(std::memory_order_acquire)) return;
  try {
    change(OpenMeasurements::Get().Session(owner.handle));
  } catch (const std::exception&) {
    // The measurement closed under us: there is no scope left to change.
  }
}

void QueueResetAfterBackward(const std::shared_ptr<MeasurementWatches>& owner) {
  if (owner->reset_queued.exchange(true)) return;
  torch::autograd::Engine::get_default_engine().queue_callback([owner] {
    OnSession(*owner, [](CountingSession& session) {
      (void)session.SetScopeId(ScopeChannel::kModules, 0);
    });
    owner->reset_queued.store(false);
  });
}

// NOTE [Watches own no autograd nodes]
// register_multi_grad_hook holds each tensor's gradient function (or a
// leaf's accumulator) to count which of them the engine will run. Its
// reference cycle (function -> hook -> closure -> function) is Python's and
// the garbage collector breaks it; ours would be C++ and hold every graph,
// with its saved activations, until the measurement ends. So a watch keeps
// an interior tensor's function by address, sequence number and thread, and
// trusts the address only when the running graph task holds a node there
// (so it is alive) with the same sequence number and thread; a function
// that died cannot be in the graph, as with Python, where only the closure
// kept it. A leaf's accumulator is looked up from the leaf when counting
// (the accumulator holds its leaf, so a leaf that died has none in the
// graph).
struct WatchedNode {
  const Node* node = nullptr;
  std::uint64_t sequence_nr = 0;
  std::uint64_t thread_id = 0;
  std::optional<c10::weak_intrusive_ptr<c10::TensorImpl>> leaf;
};

WatchedNode WatchedNodeOf(const at::Tensor& tensor) {
  WatchedNode watched;
  if (tensor.is_leaf()) {
    watched.leaf.emplace(tensor.getIntrusivePtr());
    return watched;
  }
  const Node* node = tensor.grad_fn().get();
  watched.node = node;
  watched.sequence_nr = node->sequence_nr();
  watched.thread_id = node->thread_id();
  return watched;
}

// PyTorch's `_will_engine_execute_node`: the node is in the running graph
// task and, when the task runs only part of the graph (autograd.grad), it is
// in that part.
bool EngineWillExecute(const WatchedNode& watched) {
  const auto* nodes = torch::autograd::get_current_graph_task_nodes_in_graph();
  const auto* exec_info = torch::autograd::get_current_graph_task_exec_info();
  if (nodes == nullptr || exec_info == nullptr) return false;
  c10::intrusive_ptr<Node> accumulator;
  Node* node = const_cast<Node*>(watched.node);
  if (watched.leaf) {
    c10::intrusive_ptr<c10::TensorImpl> impl = watched.leaf->lock();
    if (!impl) return false;
    accumulator = torch::autograd::impl::try_get_grad_accumulator(
        at::Tensor(std::move(impl)));
    node = accumulator.get();
  }
  if (node == nullptr || nodes->count(node) == 0) return false;
  if (!watched.leaf && (node->sequence_nr() != watched.sequence_nr ||
                        node->thread_id() != watched.thread_id)) {
    return false;
  }
  if (exec_info->empty()) return true;
  auto it = exec_info->find(node);
  return it != exec_info->end() && it->second.should_execute();
}

// One module boundary: register_multi_grad_hook(tensors, fn, mode="all").
struct Watch {
  std::shared_ptr<MeasurementWatches> owner;
  std::string label;
  bool entering = false;
  std::vector<WatchedNode> nodes;

  absl::Mutex mu;
  absl::flat_hash_map<int, int> calls_per_task ABSL_GUARDED_BY(mu);
  int expected_calls ABSL_GUARDED_BY(mu) = 0;

  void OnGradient() {
    const int task = torch::autograd::get_current_graph_task_id();
    if (task == -1) return;
    int previous_calls;
    int expected;
    {
      absl::MutexLock lock(&mu);
      previous_calls = calls_per_task[task]++;
      // As register_multi_grad_hook: counted on the first call of a task.
      if (previous_calls == 0) {
        expected_calls = 0;
        for (const WatchedNode& node : nodes) {
          expected_calls += EngineWillExecute(node) ? 1 : 0;
        }
      }
      expected = expected_calls;
      if (previous_calls == expected - 1) calls_per_task.erase(task);
    }
    if (previous_calls != expected - 1) return;
    if (entering) QueueResetAfterBackward(owner);
    OnSession(*owner, [this](CountingSession& session) {
      session.ChangeScopeLabel(ScopeChannel::kModules, label, entering);
    });
  }
};

absl::Mutex& RegistryMutex() {
  static absl::Mutex mu;
  return mu;
}

absl::flat_hash_map<std::int64_t, std::shared_ptr<MeasurementWatches>>&
Registry() ABSL_EXCLUSIVE_LOCKS_REQUIRED(RegistryMutex()) {
  static auto* registry =
      new absl::flat_hash_map<std::int64_t,
                              std::shared_ptr<MeasurementWatches>>();
  return *registry;
}

std::shared_ptr<MeasurementWatches> WatchesOf(std::int64_t handle) {
  absl::MutexLock lock(&RegistryMutex());
  std::shared_ptr<MeasurementWatches>& watches = Registry()[handle];
  if (watches == nullptr) {
    watches = std::make_shared<MeasurementWatches>(handle);
  }
  return watches;
}

}  // namespace

void WatchGradients(std::int64_t handle, const std::vector<at::Tensor>& tensors,
                    std::string label, bool entering) {
  // Fails here, with the measurement named, rather than in backward.
  (void)OpenMeasurements::Get().Session(handle);
  if (tensors.empty()) return;
  auto watch = std::make_shared<Watch>();
  watch->owner = WatchesOf(handle);
  watch->label = std::move(label);
  watch->entering = entering;
  watch->nodes.reserve(tensors.size());
  for (const at::Tensor& tensor : tensors) {
    TORCH_CHECK(tensor.requires_grad(),
                "torchscan: a gradient watch needs tensors that require grad");
    watch->nodes.push_back(WatchedNodeOf(tensor));
  }
  std::vector<HookPlace> hooks;
  hooks.reserve(tensors.size());
  for (const at::Tensor& tensor : tensors) {
    const unsigned index = tensor.register_hook(
        [watch](const at::TensorBase&) { watch->OnGradient(); });
    hooks.push_back(HookPlace{
        c10::weak_intrusive_ptr<c10::TensorImpl>(tensor.getIntrusivePtr()),
        index,
        torch::autograd::impl::get_autograd_meta(tensor)->cpp_hooks_list_});
  }
  MeasurementWatches& owner = *watch->owner;
  absl::MutexLock lock(&owner.mu);
  for (auto& hook : hooks) owner.hooks.push_back(std::move(hook));
}

void EndGradientWatches(std::int64_t handle) {
  std::shared_ptr<MeasurementWatches> owner;
  {
    absl::MutexLock lock(&RegistryMutex());
    auto it = Registry().find(handle);
    if (it == Registry().end()) return;
    owner = std::move(it->second);
    Registry().erase(it);
  }
  owner->open.store(false, std::memory_order_release);
  absl::MutexLock lock(&owner->mu);
  for (const HookPlace& place : owner->hooks) {
    try {
      RemoveHook(place);
    } catch (const std::exception&) {
      // The watch is closed: a hook left behind does nothing.
    }
  }
  owner->hooks.clear();
}

}  // namespace torchscan::dispatch
