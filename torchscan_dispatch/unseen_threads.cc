#include "torchscan_dispatch/unseen_threads.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <pthread.h>
#include <unistd.h>

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/dispatch_key.h"
#include "torchscan_dispatch/operator_info.h"
#include "torchscan_dispatch/thread_state.h"

namespace torchscan::dispatch {
namespace {

// The calls one native thread made while unseen, over the process's life.
// Written by that thread under its own (uncontended) lock.
struct ThreadRecord {
  std::int64_t native_id = 0;
  mutable absl::Mutex mu;
  std::string name ABSL_GUARDED_BY(mu);
  absl::flat_hash_map<std::uint32_t, std::int64_t> calls ABSL_GUARDED_BY(mu);
};

// NOTE [Records are never freed]
// RecordFunction gives no way to wait for callbacks in flight on other
// threads when a callback is removed, so a record a thread has cached must
// stay valid after the last watch ends. Records are keyed by native id,
// which the kernel reuses, so their number stays bounded by the number of
// threads alive at once (a reused id appends to its old record, which is
// harmless: watches report differences).
class Registry {
 public:
  static Registry& Get() {
    static Registry* registry = new Registry();
    return *registry;
  }

  ThreadRecord& RecordFor(std::int64_t native_id) {
    absl::MutexLock lock(&mu_);
    std::unique_ptr<ThreadRecord>& record = records_[native_id];
    if (record == nullptr) {
      record = std::make_unique<ThreadRecord>();
      record->native_id = native_id;
    }
    return *record;
  }

  std::map<std::int64_t, std::map<std::uint32_t, std::int64_t>> Snapshot()
      const {
    std::map<std::int64_t, std::map<std::uint32_t, std::int64_t>> snapshot;
    absl::MutexLock lock(&mu_);
    for (const auto& [native_id, record] : records_) {
      absl::MutexLock record_lock(&record->mu);
      snapshot[native_id].insert(record->calls.begin(), record->calls.end());
    }
    return snapshot;
  }

  std::string NameOf(std::int64_t native_id) const {
    absl::MutexLock lock(&mu_);
    auto it = records_.find(native_id);
    if (it == records_.end()) return "";
    absl::MutexLock record_lock(&it->second->mu);
    return it->second->name;
  }

  // The first watch installs the callback, the last one removes it.
  void Open(const at::RecordFunctionCallback& callback) {
    absl::MutexLock lock(&mu_);
    if (open_++ == 0) handle_ = at::addGlobalCallback(callback);
  }
  void Close() {
    absl::MutexLock lock(&mu_);
    if (--open_ == 0) {
      at::removeCallback(handle_);
      handle_ = 0;
    }
  }
  int open() const {
    absl::MutexLock lock(&mu_);
    return open_;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<std::int64_t, std::unique_ptr<ThreadRecord>> records_
      ABSL_GUARDED_BY(mu_);
  int open_ ABSL_GUARDED_BY(mu_) = 0;
  at::CallbackHandle handle_ ABSL_GUARDED_BY(mu_) = 0;
};

// This thread's record, found once per thread (a system call and a lock).
ThreadRecord& ThisThreadRecord() {
  thread_local ThreadRecord* record = nullptr;
  if (record == nullptr) {
    record = &Registry::Get().RecordFor(static_cast<std::int64_t>(gettid()));
  }
  return *record;
}

void Note(const OperatorInfo& info) {
  ThreadRecord& record = ThisThreadRecord();
  absl::MutexLock lock(&record.mu);
  if (record.name.empty()) {
    char name[64] = {};
    pthread_getname_np(pthread_self(), name, sizeof(name));
    record.name = name;
  }
  ++record.calls[info.id];
}

// NOTE [The cost of watching]
// This runs in Dispatcher::call for every operator call of every thread in
// the process while a watch is alive. The measured thread leaves at the
// first test (its key is included, also inside its kernels, which only
// exclude it). Everything after that is paid by unseen threads only.
std::unique_ptr<at::ObserverContext> OnCallStart(const at::RecordFunction& fn) {
  if (c10::impl::tls_is_dispatch_key_included(kCountingKey)) return nullptr;
  // A kernel's own at::parallel_for workers: the kernel's caller counted
  // (or is itself unseen for) the call that runs them.
  if (at::in_parallel_region()) return nullptr;
  // A thread in a session without the key: a hidden region, a compiled call.
  if (CountingSession::Current() != nullptr) return nullptr;
  const OperatorInfo* info =
      OperatorInfoForRecordFunction(fn, ThisThreadState().observed_operators);
  if (info == nullptr || info->decomposes || info->ignored != nullptr) {
    return nullptr;
  }
  Note(*info);
  return nullptr;
}

at::RecordFunctionCallback WatchCallback() {
  return at::RecordFunctionCallback(&OnCallStart)
      .needsInputs(false)
      .needsOutputs(false)
      .scopes({at::RecordScope::FUNCTION});
}

}  // namespace

UnseenThreadWatch::UnseenThreadWatch() {
  Registry& registry = Registry::Get();
  start_ = registry.Snapshot();
  registry.Open(WatchCallback());
}

UnseenThreadWatch::~UnseenThreadWatch() { Registry::Get().Close(); }

std::vector<UnseenThreadWork> UnseenThreadWatch::WorkSince() const {
  const Registry& registry = Registry::Get();
  std::vector<UnseenThreadWork> work;
  for (const auto& [native_id, calls] : registry.Snapshot()) {
    auto before = start_.find(native_id);
    UnseenThreadWork thread{.native_id = native_id};
    for (const auto& [operator_id, count] : calls) {
      std::int64_t earlier = 0;
      if (before != start_.end()) {
        auto it = before->second.find(operator_id);
        if (it != before->second.end()) earlier = it->second;
      }
      if (count > earlier) thread.calls[operator_id] = count - earlier;
    }
    if (thread.calls.empty()) continue;
    thread.name = registry.NameOf(native_id);
    work.push_back(std::move(thread));
  }
  return work;
}

int OpenUnseenThreadWatches() { return Registry::Get().open(); }

}  // namespace torchscan::dispatch
