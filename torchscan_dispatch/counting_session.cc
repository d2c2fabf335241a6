#include "torchscan_dispatch/counting_session.h"

#include <atomic>
#include <map>
#include <string_view>

#include "absl/strings/str_cat.h"

#ifndef TORCHSCAN_TORCH_FULL_VERSION
#error "TORCHSCAN_TORCH_FULL_VERSION must name the torch the plugin is built against"
#endif

namespace torchscan::dispatch {
namespace {

constexpr std::string_view kSessionSlotName = "TORCHSCAN_COUNTING_SESSION";
const c10::DebugInfoKind kSessionSlot(&kSessionSlotName);

std::atomic<std::uint64_t> next_serial{1};

// The last session this thread recorded for, and where.
struct ThreadSlot {
  std::uint64_t serial = 0;
  void* stats = nullptr;
};
thread_local ThreadSlot this_thread_slot;

}  // namespace

CountingSession::CountingSession()
    : serial_(next_serial.fetch_add(1, std::memory_order_relaxed)) {}

CountingSession::~CountingSession() = default;

const c10::DebugInfoKind& CountingSession::DebugInfoKind() { return kSessionSlot; }

CountingSession* CountingSession::Current() {
  return static_cast<CountingSession*>(c10::ThreadLocalDebugInfo::get(kSessionSlot));
}

CountingSession::ThreadStats& CountingSession::ThisThread() {
  if (this_thread_slot.serial == serial_) {
    return *static_cast<ThreadStats*>(this_thread_slot.stats);
  }
  absl::MutexLock lock(&mu_);
  const std::thread::id me = std::this_thread::get_id();
  ThreadStats* stats = nullptr;
  for (const std::unique_ptr<ThreadStats>& thread : threads_) {
    if (thread->owner == me) stats = thread.get();
  }
  if (stats == nullptr) {
    threads_.push_back(std::make_unique<ThreadStats>());
    stats = threads_.back().get();
    stats->owner = me;
  }
  this_thread_slot = ThreadSlot{serial_, stats};
  return *stats;
}

void CountingSession::Add(OperatorStats& into, const OperatorStats& from) {
  into.calls += from.calls;
  into.counted_calls += from.counted_calls;
  if (std::optional<Count> flops = report::CheckedAdd(into.flops, from.flops)) {
    into.flops = *flops;
  } else {
    into.counted_calls -= from.counted_calls;
    into.failed_calls += from.counted_calls;
    if (into.first_failure.empty()) {
      into.first_failure = "the FLOP sum overflows a 128-bit integer";
    }
  }
  if (into.failed_calls == 0 && from.failed_calls > 0) {
    into.first_failure = from.first_failure;
  }
  into.failed_calls += from.failed_calls;
}

void CountingSession::RecordCall(const OperatorInfo& op) {
  ThreadStats& thread = ThisThread();
  absl::MutexLock lock(&thread.mu);
  ++thread.by_operator[op.id].calls;
}

void CountingSession::RecordCounted(const OperatorInfo& op, Count flops) {
  ThreadStats& thread = ThisThread();
  absl::MutexLock lock(&thread.mu);
  OperatorStats one_call;
  one_call.calls = 1;
  one_call.counted_calls = 1;
  one_call.flops = flops;
  Add(thread.by_operator[op.id], one_call);
}

void CountingSession::RecordFailed(const OperatorInfo& op, const absl::Status& error) {
  ThreadStats& thread = ThisThread();
  absl::MutexLock lock(&thread.mu);
  OperatorStats& stats = thread.by_operator[op.id];
  ++stats.calls;
  if (stats.failed_calls++ == 0) stats.first_failure = std::string(error.message());
}

void CountingSession::MergeFrom(const CountingSession& inner) {
  absl::flat_hash_map<std::uint32_t, OperatorStats> seen;
  {
    absl::MutexLock lock(&inner.mu_);
    for (const std::unique_ptr<ThreadStats>& thread : inner.threads_) {
      absl::MutexLock thread_lock(&thread->mu);
      for (const auto& [id, stats] : thread->by_operator) Add(seen[id], stats);
    }
  }
  ThreadStats& thread = ThisThread();
  absl::MutexLock lock(&thread.mu);
  for (const auto& [id, stats] : seen) Add(thread.by_operator[id], stats);
}

absl::StatusOr<report::FlopReport> CountingSession::BuildReport() const {
  // Merge by report name: an operator removed and registered again has a new
  // id but is the same operator to the reader.
  std::map<std::string, report::OperatorObservation> merged;
  {
    absl::MutexLock lock(&mu_);
    for (const std::unique_ptr<ThreadStats>& thread : threads_) {
      absl::MutexLock thread_lock(&thread->mu);
      for (const auto& [id, stats] : thread->by_operator) {
        const OperatorInfo& info = OperatorInfoById(id);
        report::OperatorObservation& op = merged[info.report_name];
        op.name = info.report_name;
        op.calls += stats.calls;
        op.counted_calls += stats.counted_calls;
        std::optional<Count> flops = report::CheckedAdd(op.flops, stats.flops);
        if (!flops) {
          return absl::OutOfRangeError(absl::StrCat(
              info.report_name, " FLOPs overflow a 128-bit integer"));
        }
        op.flops = *flops;
        if (stats.failed_calls > 0 && op.failed_calls == 0) {
          op.failure_message = stats.first_failure;
        }
        op.failed_calls += stats.failed_calls;
        if (info.ignored != nullptr) op.ignored_reason = std::string(info.ignored->reason);
      }
    }
  }
  std::vector<report::OperatorObservation> observations;
  observations.reserve(merged.size());
  for (auto& [name, op] : merged) observations.push_back(std::move(op));
  return report::BuildFlopReport(TORCHSCAN_TORCH_FULL_VERSION,
                                 std::move(observations), {});
}

}  // namespace torchscan::dispatch
