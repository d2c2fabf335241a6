#include "torchscan_dispatch/unseen_threads.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
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

using Counts = std::map<std::uint32_t, std::int64_t>;

// NOTE [Counters written without a lock]
// A call is noted by its own thread into that thread's record: a counter
// per operator id, in chunks of kChunkSize found through a fixed directory,
// so noting is two dependent loads and a relaxed store, with no lock, no
// hashing and no read-modify-write instruction. That is sound because a
// record has one writer at a time: the thread that took it (Registry::Take,
// under the registry's lock) until it exits, and a thread that reuses the
// native id takes it only after the previous one released it under the
// same lock (ThreadRecordHolder's destructor), so each writer sees every
// count and chunk its predecessor wrote. Readers (a watch's snapshot) load
// the counters relaxed: a count a workload's thread wrote before the
// workload joined it happens before the snapshot, so it is seen; a call
// still in flight on an unrelated thread may or may not be, as before.
// Operator ids are dense (OperatorInfoById), a few thousand in a process;
// ids past the directory go to a locked map instead, never faster but
// never lost.
constexpr std::uint32_t kChunkBits = 8;
constexpr std::uint32_t kChunkSize = 1u << kChunkBits;
constexpr std::uint32_t kChunks = 1024;
constexpr std::uint32_t kDirectIds = kChunks * kChunkSize;

struct Chunk {
  std::array<std::atomic<std::int64_t>, kChunkSize> calls{};
};

// The calls one native thread made while unseen, over the process's life.
struct ThreadRecord {
  std::int64_t native_id = 0;
  std::array<std::atomic<Chunk*>, kChunks> chunks{};
  absl::Mutex overflow_mu;
  absl::flat_hash_map<std::uint32_t, std::int64_t> overflow
      ABSL_GUARDED_BY(overflow_mu);

  // Only the owning thread calls this (NOTE [Counters written without a
  // lock]).
  void Note(std::uint32_t id) {
    if (id >= kDirectIds) {
      absl::MutexLock lock(&overflow_mu);
      ++overflow[id];
      return;
    }
    std::atomic<Chunk*>& slot = chunks[id >> kChunkBits];
    Chunk* chunk = slot.load(std::memory_order_relaxed);
    if (chunk == nullptr) {
      chunk = new Chunk();  // NOTE [Records are never freed]
      slot.store(chunk, std::memory_order_release);
    }
    std::atomic<std::int64_t>& count = chunk->calls[id & (kChunkSize - 1)];
    count.store(count.load(std::memory_order_relaxed) + 1,
                std::memory_order_relaxed);
  }

  // Adds every nonzero count to `counts`; any thread.
  void AddTo(Counts& counts) {
    for (std::uint32_t c = 0; c < kChunks; ++c) {
      const Chunk* chunk = chunks[c].load(std::memory_order_acquire);
      if (chunk == nullptr) continue;
      for (std::uint32_t i = 0; i < kChunkSize; ++i) {
        const std::int64_t count =
            chunk->calls[i].load(std::memory_order_relaxed);
        if (count != 0) counts[(c << kChunkBits) | i] += count;
      }
    }
    absl::MutexLock lock(&overflow_mu);
    for (const auto& [id, count] : overflow) counts[id] += count;
  }
};

// NOTE [Records are never freed]
// RecordFunction gives no way to wait for callbacks in flight on other
// threads when a callback is removed, so a record a thread has cached must
// stay valid after the last watch ends. Records are keyed by native id,
// which the kernel reuses, so their number stays bounded by the number of
// threads alive at once (a reused id appends to its old record, which is
// harmless: watches report differences). Chunks, once made, stay too.
class Registry {
 public:
  static Registry& Get() {
    static Registry* registry = new Registry();
    return *registry;
  }

  // The calling thread's record, taken over from an earlier thread with the
  // same native id if there was one; names it after the calling thread.
  ThreadRecord& Take(std::int64_t native_id) {
    char name[64] = {};
    pthread_getname_np(pthread_self(), name, sizeof(name));
    absl::MutexLock lock(&mu_);
    std::unique_ptr<ThreadRecord>& record = records_[native_id];
    if (record == nullptr) {
      record = std::make_unique<ThreadRecord>();
      record->native_id = native_id;
    }
    names_[native_id] = name;
    return *record;
  }

  // Publishes the exiting owner's writes to the record's next owner.
  void Release() { absl::MutexLock lock(&mu_); }

  std::map<std::int64_t, Counts> Snapshot() const {
    std::map<std::int64_t, Counts> snapshot;
    absl::MutexLock lock(&mu_);
    for (const auto& [native_id, record] : records_) {
      record->AddTo(snapshot[native_id]);
    }
    return snapshot;
  }

  std::string NameOf(std::int64_t native_id) const {
    absl::MutexLock lock(&mu_);
    auto it = names_.find(native_id);
    return it == names_.end() ? "" : it->second;
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
  std::map<std::int64_t, std::string> names_ ABSL_GUARDED_BY(mu_);
  int open_ ABSL_GUARDED_BY(mu_) = 0;
  at::CallbackHandle handle_ ABSL_GUARDED_BY(mu_) = 0;
};

// This thread's hold on its record: taken at its first unseen call (a
// system call and a lock, once per thread), released when it exits.
class ThreadRecordHolder {
 public:
  ~ThreadRecordHolder() {
    if (record_ != nullptr) Registry::Get().Release();
  }
  ThreadRecord& record() {
    if (record_ == nullptr) {
      record_ = &Registry::Get().Take(static_cast<std::int64_t>(gettid()));
    }
    return *record_;
  }

 private:
  ThreadRecord* record_ = nullptr;
};

ThreadRecord& ThisThreadRecord() {
  thread_local ThreadRecordHolder holder;
  return holder.record();
}

// NOTE [The cost of watching]
// This runs in Dispatcher::call for every operator call of every thread in
// the process while a watch is alive. The measured thread leaves at the
// first test (its key is included, also inside its kernels, which only
// exclude it). Everything after that is paid by unseen threads only: a few
// thread-local reads, the operator's facts from this thread's cache, and
// one counter store (NOTE [Counters written without a lock]). What the
// callback costs beyond that, on every thread, is PyTorch's: see NOTE [Why
// the measuring thread takes the slow path].
std::unique_ptr<at::ObserverContext> OnCallStart(const at::RecordFunction& fn) {
  // Inline, as the dispatcher reads it (no call into libc10).
  if (c10::impl::tls_local_dispatch_key_set().included_.has(kCountingKey)) {
    return nullptr;
  }
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
  ThisThreadRecord().Note(info->id);
  return nullptr;
}

// NOTE [Why the measuring thread takes the slow path]
// With this callback installed, Dispatcher::call on every thread finds a
// non-empty callback set (at::getStepCallbacksUnlessEmpty) and builds a
// RecordFunction for the call, our start callback leaving at its first
// test. The only per-thread way out PyTorch offers is switching
// RecordFunction off for the thread (at::enableRecordFunction(false)),
// which removes every callback there, the profiler's included, and the
// decision is taken in Dispatcher::call before our fallback runs. So the
// measuring thread could only switch it off while no other callback can
// appear, and nothing tells us when one does: a profiler started on this
// thread (torch.profiler's enter is not an operator, and its
// addThreadLocalCallback is rebuilt empty while the thread is off) or a
// global one added by another thread (on-demand tracing) would miss this
// thread's next calls; at::hasGlobalCallbacks, the only query, locks and
// copies the callback list, costing more than the slow path it would save.
// docs/design.md ("Work on threads without a session") has the source
// lines.
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
