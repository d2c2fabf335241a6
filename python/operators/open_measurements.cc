#include "python/operators/open_measurements.h"

#include <c10/util/Exception.h>

#include <thread>
#include <utility>

namespace torchscan::dispatch {

OpenMeasurements& OpenMeasurements::Get() {
  // Never destroyed: Python may finish measurements during interpreter
  // shutdown, after static destructors would have run.
  static OpenMeasurements* open = new OpenMeasurements();
  return *open;
}

std::int64_t OpenMeasurements::Begin(CountingOptions options) {
  auto counting = std::make_unique<ActiveCounting>(std::move(options));
  absl::MutexLock lock(&mu_);
  const std::int64_t handle = next_handle_++;
  open_.emplace(handle, std::move(counting));
  return handle;
}

void OpenMeasurements::Stop(std::int64_t handle) {
  absl::MutexLock lock(&mu_);
  ActiveCounting& counting = FindLocked(handle);
  if (counting.stopped()) return;
  TORCH_CHECK(counting.thread() == std::this_thread::get_id(),
              "torchscan: measurement ", handle,
              " must be stopped on the thread that began it");
  for (auto later = open_.upper_bound(handle); later != open_.end(); ++later) {
    TORCH_CHECK(later->second->stopped() ||
                    later->second->thread() != std::this_thread::get_id(),
                "torchscan: measurement ", later->first,
                " began inside measurement ", handle,
                " and must be stopped first");
  }
  counting.Stop();
}

CountingSession& OpenMeasurements::Session(std::int64_t handle) {
  absl::MutexLock lock(&mu_);
  return FindLocked(handle).session();
}

bool OpenMeasurements::Stopped(std::int64_t handle) {
  absl::MutexLock lock(&mu_);
  return FindLocked(handle).stopped();
}

void OpenMeasurements::Finish(std::int64_t handle) {
  Stop(handle);
  std::unique_ptr<ActiveCounting> counting;
  {
    absl::MutexLock lock(&mu_);
    auto it = open_.find(handle);
    TORCH_CHECK(it != open_.end(), "torchscan: no open measurement ", handle);
    counting = std::move(it->second);
    open_.erase(it);
  }
  // `counting` is destroyed here, outside the lock: merging into an
  // enclosing session takes that session's locks.
}

ActiveCounting& OpenMeasurements::FindLocked(std::int64_t handle) {
  auto it = open_.find(handle);
  TORCH_CHECK(it != open_.end(), "torchscan: no open measurement ", handle);
  return *it->second;
}

HandedOutCalls& HandedOutCalls::Get() {
  static HandedOutCalls* handed_out = new HandedOutCalls();
  return *handed_out;
}

void HandedOutCalls::Add(std::int64_t handle, std::vector<DeferredCall> calls) {
  absl::MutexLock lock(&mu_);
  std::vector<DeferredCall>& list = calls_[handle];
  for (DeferredCall& call : calls) list.push_back(std::move(call));
}

std::vector<DeferredCall> HandedOutCalls::Take(std::int64_t handle) {
  absl::MutexLock lock(&mu_);
  auto node = calls_.extract(handle);
  return node.empty() ? std::vector<DeferredCall>{} : std::move(node.mapped());
}

}  // namespace torchscan::dispatch
