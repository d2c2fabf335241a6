#include "torchscan_dispatch/counting_session.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <utility>

#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"

#ifndef TORCHSCAN_TORCH_FULL_VERSION
#error \
    "TORCHSCAN_TORCH_FULL_VERSION must name the torch the plugin is built against"
#endif

namespace torchscan {

std::string SchemaPacketName(const std::string& name) {
  if (name.find("::") != std::string::npos) return name;
  const std::size_t dot = name.find('.');
  if (dot == std::string::npos) return name;
  return absl::StrCat(name.substr(0, dot), "::", name.substr(dot + 1));
}

namespace dispatch {
namespace {

constexpr std::string_view kSessionSlotName = "TORCHSCAN_COUNTING_SESSION";
const c10::DebugInfoKind kSessionSlot(&kSessionSlotName);

std::atomic<std::uint64_t> next_serial{1};

// One unseen_work diagnostic per operator that threads without a session
// ran, naming each thread: "aten.mm ran 4 time(s) on thread 4242 ('python3')
// without a counting session ...".
std::vector<report::Diagnostic> UnseenThreadDiagnostics(
    const std::vector<UnseenThreadWork>& threads) {
  std::map<std::string, std::vector<std::string>> by_operator;
  for (const UnseenThreadWork& thread : threads) {
    for (const auto& [operator_id, calls] : thread.calls) {
      by_operator[OperatorInfoById(operator_id).report_name].push_back(
          absl::StrCat(calls, " time(s) on thread ", thread.native_id, " ('",
                       thread.name, "')"));
    }
  }
  std::vector<report::Diagnostic> diagnostics;
  for (const auto& [name, runs] : by_operator) {
    diagnostics.push_back(report::Diagnostic::ForOperator(
        std::string(report::kUnseenWork), "flops", name,
        absl::StrCat(
            name, " ran ", absl::StrJoin(runs, ", "),
            " without a counting session while this measurement was open; "
            "those calls are not counted (to count the threads the workload "
            "starts: threads=\"follow\" in Python, FlopCountingGuard::Follow "
            "in C++)")));
  }
  return diagnostics;
}

}  // namespace

CountingSession::CountingSession(CountingOptions options)
    : serial_(next_serial.fetch_add(1, std::memory_order_relaxed)),
      has_custom_formulas_(!options.custom_formulas.empty()),
      has_deferred_(!options.deferred_packets.empty()),
      elementwise_(options.elementwise),
      options_([&] {
        for (auto& [packet, formula] : options.custom_formulas) {
          packet = SchemaPacketName(packet);
        }
        for (std::string& packet : options.deferred_packets) {
          packet = SchemaPacketName(packet);
        }
        return std::move(options);
      }()),
      call_log_(options_.record_calls ? std::make_unique<CallLog>() : nullptr) {
  for (int channel = 0; channel < kScopeChannels; ++channel) {
    tables_[channel] = std::make_shared<ScopeTable>();
  }
}

CountingSession::~CountingSession() {
  absl::MutexLock lock(&mu_);
  for (std::unique_ptr<ThreadStats>& thread : threads_) {
    Recycle(std::move(thread));
  }
}

// NOTE [Recycled thread stats]
// A thread's stats hold one node per (scope, operator) the thread ran. A
// new set per measurement allocated those nodes again during every measured
// forward, between the activation buffers (NOTE [Scopes kept per model] in
// scope_table.h says what that costs). So a session's stats outlive it: the
// next session of the same thread takes them, zeroed, and the second and
// later measurements of the same work find every entry in place. An entry
// keeps its key, whose scope ids may mean other sets in the next session's
// tables: it is storage, not a record, and entries a session never used
// (all zero) are skipped when it reports. The pool is small and bounded
// (kMaxRecycledThreads stats of at most kMaxRecycledEntries entries).
struct CountingSession::StatsPool {
  absl::Mutex mu;
  std::vector<std::unique_ptr<ThreadStats>> stats ABSL_GUARDED_BY(mu);
};

CountingSession::StatsPool& CountingSession::Pool() {
  static StatsPool* const pool = new StatsPool;
  return *pool;
}

std::unique_ptr<CountingSession::ThreadStats> CountingSession::TakeRecycled(
    std::thread::id owner) {
  StatsPool& pool = Pool();
  absl::MutexLock lock(&pool.mu);
  for (auto it = pool.stats.rbegin(); it != pool.stats.rend(); ++it) {
    if ((*it)->owner != owner) continue;
    std::unique_ptr<ThreadStats> stats = std::move(*it);
    pool.stats.erase(std::next(it).base());
    return stats;
  }
  return nullptr;
}

void CountingSession::Recycle(std::unique_ptr<ThreadStats> stats) {
  {
    absl::MutexLock lock(&stats->mu);
    if (stats->entries.size() > kMaxRecycledEntries) return;
    for (auto& [key, entry] : stats->entries) {
      entry.uncounted_calls.store(0, std::memory_order_relaxed);
      entry.bytes_read.store(0, std::memory_order_relaxed);
      entry.bytes_written.store(0, std::memory_order_relaxed);
      entry.counted_calls.store(0, std::memory_order_relaxed);
      StoreCount(entry.counted_flops, 0);
      for (AtomicCount& slot : entry.counted_by_precision) StoreCount(slot, 0);
      entry.stats = OperatorStats{};
    }
  }
  StatsPool& pool = Pool();
  absl::MutexLock lock(&pool.mu);
  if (pool.stats.size() >= kMaxRecycledThreads) {
    pool.stats.erase(pool.stats.begin());
  }
  pool.stats.push_back(std::move(stats));
}

bool CountingSession::Unused(const ThreadEntry& entry) {
  const OperatorStats& stats = entry.stats;
  return entry.uncounted_calls.load(std::memory_order_relaxed) == 0 &&
         entry.counted_calls.load(std::memory_order_relaxed) == 0 &&
         stats.calls == 0 && stats.counted_calls == 0 &&
         stats.failed_calls == 0 && stats.mask_excluded == 0 &&
         stats.mask_unread_calls == 0 && stats.bytes_unknown_calls == 0 &&
         stats.bytes_read == 0 && stats.bytes_written == 0 &&
         entry.bytes_read.load(std::memory_order_relaxed) == 0 &&
         entry.bytes_written.load(std::memory_order_relaxed) == 0;
}

const c10::DebugInfoKind& CountingSession::DebugInfoKind() {
  return kSessionSlot;
}

CountingSession* CountingSession::Current() {
  return static_cast<CountingSession*>(
      c10::ThreadLocalDebugInfo::get(kSessionSlot));
}

const CustomFormula* CountingSession::CustomFormulaFor(const OperatorInfo& op) {
  if (!has_custom_formulas_) return nullptr;
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = custom_index_.try_emplace(op.id, -1);
  if (inserted) {
    for (std::size_t i = 0; i < options_.custom_formulas.size(); ++i) {
      if (options_.custom_formulas[i].first == op.packet)
        it->second = static_cast<int>(i);
    }
  }
  return it->second < 0 ? nullptr
                        : &options_.custom_formulas[it->second].second;
}

bool CountingSession::IsDeferred(const OperatorInfo& op) {
  if (!has_deferred_) return false;
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = deferred_.try_emplace(op.id, false);
  if (inserted) {
    it->second = std::find(options_.deferred_packets.begin(),
                           options_.deferred_packets.end(),
                           op.packet) != options_.deferred_packets.end();
  }
  return it->second;
}

CountingSession::ThreadStats& CountingSession::ThisThread() {
  return ThisThread(ThisThreadState().session);
}

CountingSession::ThreadStats& CountingSession::ThisThread(SessionSlot& slot) {
  if (slot.serial == serial_) return *static_cast<ThreadStats*>(slot.stats);
  absl::MutexLock lock(&mu_);
  const std::thread::id me = std::this_thread::get_id();
  ThreadStats* stats = nullptr;
  for (const std::unique_ptr<ThreadStats>& thread : threads_) {
    if (thread->owner == me) stats = thread.get();
  }
  if (stats == nullptr) {
    std::unique_ptr<ThreadStats> recycled = TakeRecycled(me);
    threads_.push_back(recycled != nullptr ? std::move(recycled)
                                           : std::make_unique<ThreadStats>());
    stats = threads_.back().get();
    stats->owner = me;
  }
  slot = SessionSlot{serial_, stats};
  return *stats;
}

CountingSession::StatsKey CountingSession::KeyFor(
    const OperatorInfo& op) const {
  StatsKey key;
  for (int channel = 0; channel < kScopeChannels; ++channel) {
    key.scopes[channel] =
        current_scope_[channel].load(std::memory_order_acquire);
  }
  key.operator_id = op.id;
  return key;
}

CountingSession::StatsKey CountingSession::KeyIn(
    const OperatorInfo& op, std::uint32_t module_scope) const {
  StatsKey key = KeyFor(op);
  key.scopes[static_cast<int>(ScopeChannel::kModules)] = module_scope;
  return key;
}

void CountingSession::Add(OperatorStats& into, const OperatorStats& from) {
  into.calls += from.calls;
  into.counted_calls += from.counted_calls;
  if (std::optional<Count> flops = report::CheckedAdd(into.flops, from.flops)) {
    into.flops = *flops;
    // Each slot is at most its total, which did not overflow.
    for (int i = 0; i < report::kPrecisionCount; ++i) {
      into.flops_by_precision[i] += from.flops_by_precision[i];
    }
  } else {
    into.counted_calls -= from.counted_calls;
    into.failed_calls += from.counted_calls;
    if (into.first_failure.empty()) {
      into.first_failure = "the FLOP sum overflows 128 bits";
    }
  }
  if (into.failed_calls == 0 && from.failed_calls > 0) {
    into.first_failure = from.first_failure;
  }
  into.failed_calls += from.failed_calls;
  into.mask_excluded += from.mask_excluded;
  if (into.mask_unread_calls == 0 && from.mask_unread_calls > 0) {
    into.first_mask_unread = from.first_mask_unread;
  }
  into.mask_unread_calls += from.mask_unread_calls;
  into.bytes_read += from.bytes_read;
  into.bytes_written += from.bytes_written;
  if (into.bytes_unknown_calls == 0 && from.bytes_unknown_calls > 0) {
    into.first_bytes_unknown = from.first_bytes_unknown;
  }
  into.bytes_unknown_calls += from.bytes_unknown_calls;
}

// NOTE [Counted calls without a lock]
// Every counted call used to add its FLOPs under the thread's absl::Mutex,
// so that a report built on another thread reads a consistent entry. The
// lock and unlock cost about 300 instructions per call (Debian's abseil is
// built with the mutex's deadlock detection on: a graph-cycles id and the
// held-locks list per lock), a tenth of what counting an `mm` added. Only
// the owner thread writes an entry, so a sequence count is enough: the owner
// makes it odd, stores the call's counters (relaxed atomics: the halves of
// a 128-bit sum cannot be one atomic), and makes it even again; a reader
// retries while it is odd or has moved under it. The owner never waits, and
// a report never reads a sum with one half updated. A call whose FLOPs would
// overflow the sum takes the lock and is recorded as failed, as before.
void CountingSession::StoreCount(AtomicCount& into, Count value) {
  into.low.store(absl::Uint128Low64(static_cast<absl::uint128>(value)),
                 std::memory_order_relaxed);
  into.high.store(absl::Uint128High64(static_cast<absl::uint128>(value)),
                  std::memory_order_relaxed);
}

Count CountingSession::LoadCount(const AtomicCount& from) {
  return static_cast<Count>(
      absl::MakeUint128(from.high.load(std::memory_order_relaxed),
                        from.low.load(std::memory_order_relaxed)));
}

bool CountingSession::AddCountedWithoutLock(ThreadEntry& entry, Count flops,
                                            Precision precision) {
  // The owner's own stores: relaxed loads see them.
  const std::optional<Count> sum =
      report::CheckedAdd(LoadCount(entry.counted_flops), flops);
  if (!sum) return false;
  AtomicCount& slot =
      entry.counted_by_precision[report::PrecisionIndex(precision)];
  const Count in_precision = LoadCount(slot) + flops;  // at most *sum
  const std::uint32_t sequence =
      entry.counted_sequence.load(std::memory_order_relaxed);
  entry.counted_sequence.store(sequence + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  entry.counted_calls.store(
      entry.counted_calls.load(std::memory_order_relaxed) + 1,
      std::memory_order_relaxed);
  StoreCount(entry.counted_flops, *sum);
  StoreCount(slot, in_precision);
  entry.counted_sequence.store(sequence + 2, std::memory_order_release);
  return true;
}

void CountingSession::AddCountedOf(const ThreadEntry& entry,
                                   OperatorStats& into) {
  OperatorStats counted;
  while (true) {
    const std::uint32_t before =
        entry.counted_sequence.load(std::memory_order_acquire);
    if ((before & 1) != 0) {
      std::this_thread::yield();
      continue;
    }
    counted.counted_calls = entry.counted_calls.load(std::memory_order_relaxed);
    counted.flops = LoadCount(entry.counted_flops);
    for (int i = 0; i < report::kPrecisionCount; ++i) {
      counted.flops_by_precision[i] = LoadCount(entry.counted_by_precision[i]);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (entry.counted_sequence.load(std::memory_order_relaxed) == before) {
      break;
    }
  }
  if (counted.counted_calls == 0) return;
  counted.calls = counted.counted_calls;
  Add(into, counted);
}

void CountingSession::AddCountedTo(ThreadStats& thread, ThreadEntry& entry,
                                   Count flops, Precision precision) {
  if (AddCountedWithoutLock(entry, flops, precision)) return;
  absl::MutexLock lock(&thread.mu);
  OperatorStats& stats = entry.stats;
  stats.calls += 1;
  if (stats.failed_calls++ == 0) {
    stats.first_failure = "the FLOP sum overflows 128 bits";
  }
}

CountingSession::ThreadEntry& CountingSession::EntryFor(ThreadStats& thread,
                                                        const StatsKey& key) {
  ThreadStats::CachedEntry& cached =
      thread.cached[key.operator_id % ThreadStats::kCachedEntries];
  if (cached.entry != nullptr && cached.key == key) return *cached.entry;
  ThreadEntry* entry;
  {
    absl::MutexLock lock(&thread.mu);
    entry = &thread.entries[key];
  }
  cached = {key, entry};
  return *entry;
}

void CountingSession::Record(const StatsKey& key,
                             const OperatorStats& one_call) {
  ThreadStats& thread = ThisThread();
  ThreadEntry& entry = EntryFor(thread, key);
  absl::MutexLock lock(&thread.mu);
  Add(entry.stats, one_call);
}

void CountingSession::RecordCountedAt(const StatsKey& key, Count flops,
                                      Precision precision) {
  ThreadStats& thread = ThisThread();
  AddCountedTo(thread, EntryFor(thread, key), flops, precision);
}

// Pseudo-operators stand for work no operator call shows.
constexpr absl::string_view kUnseenBytes =
    "it stands for work no operator call shows";

void CountingSession::AddBytes(ThreadStats& thread, ThreadEntry& entry,
                               const CallBytes& bytes) {
  // Only this thread writes the counters: a relaxed load and store suffice.
  entry.bytes_read.store(
      entry.bytes_read.load(std::memory_order_relaxed) + bytes.read,
      std::memory_order_relaxed);
  entry.bytes_written.store(
      entry.bytes_written.load(std::memory_order_relaxed) + bytes.written,
      std::memory_order_relaxed);
  if (bytes.unknown != nullptr) {
    absl::MutexLock lock(&thread.mu);
    if (entry.stats.bytes_unknown_calls++ == 0) {
      entry.stats.first_bytes_unknown = bytes.unknown;
    }
  }
}

void CountingSession::RecordCall(const OperatorInfo& op) {
  RecordCall(op, ThisThreadState().session,
             CallBytes{.unknown = kUnseenBytes.data()});
}

void CountingSession::RecordCall(const OperatorInfo& op,
                                 const CallBytes& bytes) {
  RecordCall(op, ThisThreadState().session, bytes);
}

void CountingSession::RecordCall(const OperatorInfo& op, SessionSlot& slot,
                                 const CallBytes& bytes) {
  ThreadStats& thread = ThisThread(slot);
  ThreadEntry& entry = EntryFor(thread, KeyFor(op));
  // Only this thread writes the counter: a relaxed load and store suffice.
  entry.uncounted_calls.store(
      entry.uncounted_calls.load(std::memory_order_relaxed) + 1,
      std::memory_order_relaxed);
  AddBytes(thread, entry, bytes);
  if (call_log_ != nullptr) [[unlikely]] {
    LogCall(op, LoggedCallKind::kUncounted, 0, bytes);
  }
}

void CountingSession::RecordCounted(const OperatorInfo& op, Count flops,
                                    Precision precision, SessionSlot& slot,
                                    const CallBytes& bytes) {
  ThreadStats& thread = ThisThread(slot);
  ThreadEntry& entry = EntryFor(thread, KeyFor(op));
  AddBytes(thread, entry, bytes);
  AddCountedTo(thread, entry, flops, precision);
  // Logged last: the call's counts are complete whatever the log does.
  if (call_log_ != nullptr) [[unlikely]] {
    LogCall(op, LoggedCallKind::kCounted, flops, bytes);
  }
}

void CountingSession::RecordFailed(const OperatorInfo& op,
                                   const absl::Status& error,
                                   const CallBytes& bytes) {
  ThreadStats& thread = ThisThread();
  AddBytes(thread, EntryFor(thread, KeyFor(op)), bytes);
  if (call_log_ != nullptr) [[unlikely]] {
    LogCall(op, LoggedCallKind::kFailed, 0, bytes);
  }
  Record(KeyFor(op),
         OperatorStats{.calls = 1,
                       .failed_calls = 1,
                       .first_failure = std::string(error.message())});
}

// Only a deferred call records its bytes apart (RecordDeferred comes just
// before): the log takes the call here, where its bytes are known.
void CountingSession::RecordBytes(const OperatorInfo& op,
                                  const CallBytes& bytes) {
  ThreadStats& thread = ThisThread();
  AddBytes(thread, EntryFor(thread, KeyFor(op)), bytes);
  if (call_log_ != nullptr) [[unlikely]] {
    LogCall(op, LoggedCallKind::kDeferred, 0, bytes);
  }
}

void CountingSession::LogCall(const OperatorInfo& op, LoggedCallKind kind,
                              Count flops, const CallBytes& bytes) {
  call_log_->Append(op.packet.c_str(),
                    LoggedCall{.operator_id = op.id,
                               .module_scope = CurrentModuleScope(),
                               .kind = kind,
                               .bytes_known = bytes.unknown == nullptr,
                               .flops = flops,
                               .bytes_read = bytes.read,
                               .bytes_written = bytes.written});
}

void CountingSession::CloseCallLog() {
  if (call_log_ != nullptr) call_log_->Close();
}

std::vector<std::string> CountingSession::ModuleScopeLabels(
    std::uint32_t id) const {
  return ScopeLabels(ScopeChannel::kModules, id);
}

void CountingSession::RecordCallIn(const OperatorInfo& op,
                                   std::uint32_t module_scope) {
  Record(KeyIn(op, module_scope), OperatorStats{.calls = 1});
}

void CountingSession::RecordCountedIn(const OperatorInfo& op,
                                      std::uint32_t module_scope, Count flops,
                                      Precision precision) {
  RecordCountedAt(KeyIn(op, module_scope), flops, precision);
}

void CountingSession::RecordFailedIn(const OperatorInfo& op,
                                     std::uint32_t module_scope,
                                     const absl::Status& error) {
  Record(KeyIn(op, module_scope),
         OperatorStats{.calls = 1,
                       .failed_calls = 1,
                       .first_failure = std::string(error.message())});
}

void CountingSession::RecordCompiledGraph(
    const OperatorInfo& op, std::uint32_t module_scope,
    const report::CompiledRegionBytes& run) {
  ThreadStats& thread = ThisThread();
  // Each run's bounds are sums of int64 tensor sizes (the tally's).
  AddBytes(
      thread, EntryFor(thread, KeyIn(op, module_scope)),
      CallBytes{.read = static_cast<std::int64_t>(run.inputs_read),
                .written = static_cast<std::int64_t>(run.outputs_written)});
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = compiled_regions_.try_emplace(
      run.name, report::CompiledRegionBytes{.name = run.name});
  // 128-bit sums of int64 runs: an overflow would take 2^64 runs.
  report::AddCompiledRegion(it->second, run).IgnoreError();
}

void CountingSession::RecordMaskExclusion(const OperatorInfo& op,
                                          Count excluded,
                                          absl::string_view unread_reason) {
  RecordMaskExclusionIn(op, CurrentModuleScope(), excluded, unread_reason);
}

void CountingSession::RecordMaskExclusionIn(const OperatorInfo& op,
                                            std::uint32_t module_scope,
                                            Count excluded,
                                            absl::string_view unread_reason) {
  OperatorStats stats{.mask_excluded = excluded};
  if (!unread_reason.empty()) {
    stats.mask_unread_calls = 1;
    stats.first_mask_unread = std::string(unread_reason);
  }
  Record(KeyIn(op, module_scope), stats);
}

Count CountingSession::CountedFlopsOfThisThread(
    absl::FunctionRef<bool(const OperatorInfo&)> which) {
  ThreadStats& thread = ThisThread();
  Count flops = 0;
  absl::MutexLock lock(&thread.mu);
  for (const auto& [key, entry] : thread.entries) {
    if (!which(OperatorInfoById(key.operator_id))) continue;
    // The owner's own stores: relaxed loads see them.
    flops += LoadCount(entry.counted_flops) + entry.stats.flops;
  }
  return flops;
}

void CountingSession::RecordCommunication(const OperatorInfo& op,
                                          report::CollectiveKind kind,
                                          absl::string_view group_name,
                                          std::int64_t group_size,
                                          Count payload_bytes) {
  absl::MutexLock lock(&mu_);
  if (absl::Status status = communication_.Add(op.report_name, kind, group_name,
                                               group_size, payload_bytes);
      !status.ok()) {
    communication_.AddUnreadable(op.report_name, status.message())
        .IgnoreError();
  }
}

void CountingSession::RecordUnreadableCommunication(const OperatorInfo& op,
                                                    absl::string_view reason) {
  absl::MutexLock lock(&mu_);
  communication_.AddUnreadable(op.report_name, reason).IgnoreError();
}

report::CommunicationReport CountingSession::Communication() const {
  absl::MutexLock lock(&mu_);
  return communication_;
}

std::uint32_t CountingSession::CurrentModuleScope() const {
  return current_scope_[static_cast<int>(ScopeChannel::kModules)].load(
      std::memory_order_acquire);
}

std::uint32_t CountingSession::ModuleScopeWith(
    std::uint32_t module_scope, const std::vector<std::string>& labels) {
  const std::shared_ptr<ScopeTable> table =
      Table(static_cast<int>(ScopeChannel::kModules));
  std::vector<std::string> combined = table->Labels(module_scope);
  combined.insert(combined.end(), labels.begin(), labels.end());
  return table->Intern(combined);
}

void CountingSession::RecordDeferred(const OperatorInfo& op,
                                     std::vector<c10::IValue> arguments,
                                     std::vector<c10::IValue> results,
                                     Precision precision) {
  DeferredCall call{op.id, KeyFor(op).scopes, std::move(arguments),
                    std::move(results), precision};
  absl::MutexLock lock(&mu_);
  deferred_calls_.push_back(std::move(call));
}

void CountingSession::RecordDeferredIn(const OperatorInfo& op,
                                       std::uint32_t module_scope,
                                       std::vector<c10::IValue> arguments,
                                       std::vector<c10::IValue> results,
                                       Precision precision) {
  DeferredCall call{op.id, KeyIn(op, module_scope).scopes, std::move(arguments),
                    std::move(results), precision};
  absl::MutexLock lock(&mu_);
  deferred_calls_.push_back(std::move(call));
}

void CountingSession::SetScope(ScopeChannel channel,
                               std::vector<std::string> labels) {
  const int c = static_cast<int>(channel);
  const std::uint32_t id = Table(c)->Intern(labels);
  current_scope_[c].store(id, std::memory_order_release);
}

std::shared_ptr<ScopeTable> CountingSession::Table(int channel) const {
  absl::MutexLock lock(&mu_);
  return tables_[channel];
}

std::uint32_t CountingSession::ChangeScopeLabel(ScopeChannel channel,
                                                const std::string& label,
                                                bool present) {
  const int c = static_cast<int>(channel);
  absl::MutexLock lock(&mu_);
  ScopeTable& table = *tables_[c];
  const std::uint32_t id = current_scope_[c].load(std::memory_order_relaxed);
  const std::uint32_t next = table.Change(id, table.LabelId(label), present);
  current_scope_[c].store(next, std::memory_order_release);
  return next;
}

std::uint32_t CountingSession::ChangeModuleLabel(std::uint32_t label_id,
                                                 bool present) {
  const int c = static_cast<int>(ScopeChannel::kModules);
  absl::MutexLock lock(&mu_);
  const std::uint32_t id = current_scope_[c].load(std::memory_order_relaxed);
  const std::uint32_t next = tables_[c]->Change(id, label_id, present);
  current_scope_[c].store(next, std::memory_order_release);
  return next;
}

bool CountingSession::AdoptModuleScopes(std::shared_ptr<ScopeTable> table) {
  const int c = static_cast<int>(ScopeChannel::kModules);
  absl::MutexLock lock(&mu_);
  if (table == tables_[c]) return true;
  if (table == nullptr || tables_[c]->label_count() != 0 ||
      current_scope_[c].load(std::memory_order_relaxed) != 0 ||
      table->scope_count() > kMaxAdoptedScopes) {
    return false;
  }
  tables_[c] = std::move(table);
  return true;
}

std::uint32_t CountingSession::ModuleLabelId(absl::string_view label) {
  return Table(static_cast<int>(ScopeChannel::kModules))->LabelId(label);
}

const std::string& CountingSession::ModuleLabel(std::uint32_t label_id) const {
  // The table is replaced only while it has no label, so it outlives the
  // reference.
  return Table(static_cast<int>(ScopeChannel::kModules))->Label(label_id);
}

absl::Status CountingSession::SetScopeId(ScopeChannel channel,
                                         std::uint32_t id) {
  const int c = static_cast<int>(channel);
  {
    absl::MutexLock lock(&mu_);
    if (!tables_[c]->HasScope(id)) {
      return absl::InvalidArgumentError(
          absl::StrCat("scope id ", id, " was never handed out (",
                       tables_[c]->scope_count(), " scopes so far)"));
    }
  }
  current_scope_[c].store(id, std::memory_order_release);
  return absl::OkStatus();
}

// NOTE [Open layers by label id]
// A crawl enters and leaves a layer around every module call. Each scope is
// the set of the open layers' labels, rebuilt from open_layers_ (not a
// transition from the current scope) so that a label open twice, a module
// called inside itself, stays in the set until its outer call ends. The
// labels are kept by id: one lookup per label as the call opens, then the
// sets are built from integers, where building them from the strings took a
// table lock and a string hash per open layer and channel (about 5 us per
// hook on a ResNet crawl, docs/performance.md, section 4e).
void CountingSession::EnterLayer(std::string layer_label,
                                 std::string module_label) {
  absl::MutexLock lock(&mu_);
  const std::uint32_t layer =
      layer_label.empty()
          ? kNoLayer
          : tables_[static_cast<int>(ScopeChannel::kLayerCalls)]->LabelId(
                layer_label);
  const std::uint32_t module =
      tables_[static_cast<int>(ScopeChannel::kModules)]->LabelId(module_label);
  open_layers_.push_back({layer, module});
  SetOpenLayerScopes(open_layers_.size() - 1);
}

// NOTE [Closing the innermost layer]
// Calls nest, so the call that ends is almost always the innermost one
// open; the scopes of the calls open around it were interned when it
// began, and are kept with each entry: closing it sets them back, without
// building and interning both sets again (on a ResNet crawl, 3,700 ->
// 1,800 instructions per call). A call that ends out of order (hooks that
// close calls in another order than they opened them: PyTorch runs global
// forward hooks before a module's own) rebuilds the sets of the entries
// after it.
void CountingSession::ExitLayer(const std::string& layer_label,
                                const std::string& module_label) {
  absl::MutexLock lock(&mu_);
  const std::optional<std::uint32_t> layer =
      layer_label.empty()
          ? std::optional<std::uint32_t>(kNoLayer)
          : tables_[static_cast<int>(ScopeChannel::kLayerCalls)]->FindLabelId(
                layer_label);
  const std::optional<std::uint32_t> module =
      tables_[static_cast<int>(ScopeChannel::kModules)]->FindLabelId(
          module_label);
  std::size_t from = open_layers_.size();
  if (layer.has_value() && module.has_value()) {
    for (std::size_t i = open_layers_.size(); i-- > 0;) {
      if (open_layers_[i].layer == *layer &&
          open_layers_[i].module == *module) {
        open_layers_.erase(open_layers_.begin() +
                           static_cast<std::ptrdiff_t>(i));
        from = i;
        break;
      }
    }
  }
  if (from == open_layers_.size() && !open_layers_.empty()) {
    const OpenLayer& innermost = open_layers_.back();
    current_scope_[static_cast<int>(ScopeChannel::kLayerCalls)].store(
        innermost.layer_scope, std::memory_order_release);
    current_scope_[static_cast<int>(ScopeChannel::kModules)].store(
        innermost.module_scope, std::memory_order_release);
    return;
  }
  SetOpenLayerScopes(from);
}

void CountingSession::SetOpenLayerScopes(std::size_t from) {
  const int l = static_cast<int>(ScopeChannel::kLayerCalls);
  const int m = static_cast<int>(ScopeChannel::kModules);
  std::vector<std::uint32_t> layers, modules;
  layers.reserve(open_layers_.size());
  modules.reserve(open_layers_.size());
  std::uint32_t layer_scope = 0, module_scope = 0;
  for (std::size_t i = 0; i < open_layers_.size(); ++i) {
    OpenLayer& open = open_layers_[i];
    if (open.layer != kNoLayer) layers.push_back(open.layer);
    modules.push_back(open.module);
    if (i >= from) {
      open.layer_scope = tables_[l]->InternIds(layers);
      open.module_scope = tables_[m]->InternIds(modules);
    }
    layer_scope = open.layer_scope;
    module_scope = open.module_scope;
  }
  if (open_layers_.empty()) {
    layer_scope = tables_[l]->InternIds({});
    module_scope = tables_[m]->InternIds({});
  }
  current_scope_[l].store(layer_scope, std::memory_order_release);
  current_scope_[m].store(module_scope, std::memory_order_release);
}

std::vector<DeferredCall> CountingSession::TakeDeferredCalls() {
  absl::MutexLock lock(&mu_);
  return std::exchange(deferred_calls_, {});
}

void CountingSession::ResolveDeferred(const DeferredCall& call,
                                      const absl::StatusOr<Count>& flops) {
  StatsKey key{call.scopes, call.operator_id};
  if (flops.ok()) {
    RecordCountedAt(key, *flops, call.precision);
  } else {
    Record(key, OperatorStats{
                    .calls = 1,
                    .failed_calls = 1,
                    .first_failure = std::string(flops.status().message())});
  }
}

void CountingSession::SetUnseenThreadWork(std::vector<UnseenThreadWork> work) {
  absl::MutexLock lock(&mu_);
  unseen_threads_ = std::move(work);
}

CountingSession::StatsMap CountingSession::Merged() const {
  StatsMap merged;
  absl::MutexLock lock(&mu_);
  for (const std::unique_ptr<ThreadStats>& thread : threads_) {
    absl::MutexLock thread_lock(&thread->mu);
    for (const auto& [key, entry] : thread->entries) {
      if (Unused(entry)) continue;
      OperatorStats& into = merged[key];
      Add(into, entry.stats);
      AddCountedOf(entry, into);
      into.calls += entry.uncounted_calls.load(std::memory_order_relaxed);
      into.bytes_read += entry.bytes_read.load(std::memory_order_relaxed);
      into.bytes_written += entry.bytes_written.load(std::memory_order_relaxed);
    }
  }
  return merged;
}

std::vector<std::string> CountingSession::ScopeLabels(ScopeChannel channel,
                                                      std::uint32_t id) const {
  return Table(static_cast<int>(channel))->Labels(id);
}

// NOTE [Nested measurements' calls]
// A nested measurement's counts reach the enclosing session only when it
// ends (MergeFrom); while it runs, the enclosing session is not current and
// logs nothing. So that the enclosing per-call record still holds every
// call its report counts, a measurement nested in one that keeps a record
// keeps its own (ActiveCounting), and its calls are appended to the
// enclosing record when it ends, in the module scope the enclosing session
// is in then, where its counts go too. Other threads' calls the enclosing
// session logged meanwhile come before them; the join is by id, not order.
// NOTE [Nested measurements of another method]
// A nested measurement counting elementwise work inside one that does not:
// the enclosing report keeps its method, so the calls the convention
// counted are merged as calls without a formula (named, the total
// partial), as the enclosing measurement would have recorded them. The
// other way round, a nested default measurement's calls stay uncounted in
// the enclosing elementwise one: their shapes were never read.
void CountingSession::MergeFrom(const CountingSession& inner) {
  StatsMap seen;
  const bool drop_elementwise = inner.elementwise_ && !elementwise_;
  for (const auto& [key, stats] : inner.Merged()) {
    StatsKey here{{}, key.operator_id};
    OperatorStats& merged = seen[here];
    Add(merged, stats);
    if (drop_elementwise &&
        OperatorInfoById(key.operator_id).elementwise != nullptr) {
      merged.counted_calls = 0;
      merged.flops = 0;
      merged.flops_by_precision = {};
      merged.failed_calls = 0;
      merged.first_failure.clear();
    }
  }
  for (const auto& [key, stats] : seen) {
    Record(KeyFor(OperatorInfoById(key.operator_id)), stats);
  }
  if (call_log_ != nullptr && inner.call_log_ != nullptr) {
    call_log_->Adopt(inner.call_log_->Calls(), CurrentModuleScope());
  }
  const report::CommunicationReport inner_communication = inner.Communication();
  std::map<std::string, report::CompiledRegionBytes> inner_regions;
  {
    absl::MutexLock lock(&inner.mu_);
    inner_regions = inner.compiled_regions_;
  }
  absl::MutexLock lock(&mu_);
  communication_.Merge(inner_communication).IgnoreError();
  for (const auto& [name, region] : inner_regions) {
    auto [it, inserted] = compiled_regions_.try_emplace(
        name, report::CompiledRegionBytes{.name = name});
    report::AddCompiledRegion(it->second, region).IgnoreError();
  }
}

const formulas::IgnoredOperatorEntry* CountingSession::IgnoredIn(
    const OperatorInfo& op) const {
  if (op.ignored != nullptr) return op.ignored;
  return elementwise_ ? op.elementwise_ignored : nullptr;
}

absl::StatusOr<report::FlopReport> CountingSession::BuildReport() const {
  const StatsMap merged = Merged();
  // Merge by report name: an operator removed and registered again has a new
  // id but is the same operator to the reader.
  std::map<std::string, report::OperatorObservation> observations;
  std::map<std::string, Count> by_module;
  std::map<std::string, Count> mask_excluded_by_module;
  std::map<std::string, Count> bytes_by_module;
  // Unseen work of one name may have several reasons (two compiled graphs
  // the pass could not describe): each is named once, in sorted order.
  std::map<std::string, std::set<std::string>> unseen_reasons;
  const std::shared_ptr<const ScopeTable> module_table =
      Table(static_cast<int>(ScopeChannel::kModules));
  const ScopeTable& modules = *module_table;
  for (const auto& [key, stats] : merged) {
    const OperatorInfo& info = OperatorInfoById(key.operator_id);
    report::OperatorObservation& op = observations[info.report_name];
    op.name = info.report_name;
    op.calls += stats.calls;
    op.counted_calls += stats.counted_calls;
    TS_RETURN_IF_ERROR(
        report::AddCount(op.flops, stats.flops, info.report_name));
    for (int i = 0; i < report::kPrecisionCount; ++i) {
      op.flops_by_precision[i] += stats.flops_by_precision[i];
    }
    if (stats.failed_calls > 0 && op.failed_calls == 0) {
      op.failure_message = stats.first_failure;
    }
    op.failed_calls += stats.failed_calls;
    if (const formulas::IgnoredOperatorEntry* ignored = IgnoredIn(info)) {
      op.ignored_reason = std::string(ignored->reason);
    }
    if (!info.unseen_reason.empty()) {
      unseen_reasons[info.report_name].insert(info.unseen_reason);
    }
    TS_RETURN_IF_ERROR(report::AddCount(op.mask_excluded_flops,
                                        stats.mask_excluded, info.report_name));
    if (stats.mask_unread_calls > 0 && op.mask_unread_calls == 0) {
      op.mask_unread_message = stats.first_mask_unread;
    }
    op.mask_unread_calls += stats.mask_unread_calls;
    op.bytes_read += stats.bytes_read;
    op.bytes_written += stats.bytes_written;
    if (stats.bytes_unknown_calls > 0 && op.bytes_unknown_calls == 0) {
      op.bytes_unknown_message = stats.first_bytes_unknown;
    }
    op.bytes_unknown_calls += stats.bytes_unknown_calls;
    if (stats.bytes_read + stats.bytes_written > 0) {
      TS_RETURN_IF_ERROR(
          modules.ForEachLabel(key.scopes[0], [&](const std::string& label) {
            return report::AddCount(bytes_by_module[label],
                                    stats.bytes_read + stats.bytes_written,
                                    label);
          }));
    }
    if (stats.mask_excluded > 0) {
      TS_RETURN_IF_ERROR(
          modules.ForEachLabel(key.scopes[0], [&](const std::string& label) {
            return report::AddCount(mask_excluded_by_module[label],
                                    stats.mask_excluded, label);
          }));
    }
    if (stats.counted_calls > 0) {
      TS_RETURN_IF_ERROR(
          modules.ForEachLabel(key.scopes[0], [&](const std::string& label) {
            return report::AddCount(by_module[label], stats.flops, label);
          }));
    }
  }
  for (const auto& [name, reasons] : unseen_reasons) {
    observations[name].unseen_reason = absl::StrJoin(reasons, "; ");
  }
  std::vector<report::OperatorObservation> list;
  list.reserve(observations.size());
  for (auto& [name, op] : observations) list.push_back(std::move(op));
  std::vector<report::CompiledRegionBytes> regions;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, region] : compiled_regions_) {
      regions.push_back(region);
    }
  }
  TS_ASSIGN_OR_RETURN(
      report::FlopReport flop_report,
      report::BuildFlopReport(TORCHSCAN_TORCH_FULL_VERSION, std::move(list),
                              std::move(by_module), mask_excluded_by_module,
                              std::move(bytes_by_module), regions));
  if (elementwise_) report::UseElementwiseMethod(flop_report);
  absl::MutexLock lock(&mu_);
  if (unseen_threads_.empty()) return flop_report;
  for (report::Diagnostic& diagnostic :
       UnseenThreadDiagnostics(unseen_threads_)) {
    flop_report.diagnostics.push_back(std::move(diagnostic));
  }
  flop_report.total = report::MetricResult::Partial(
      *flop_report.total.known_value(), flop_report.total.kind());
  report::MarkMaskAwarePartial(flop_report);
  report::MarkBytesPartial(
      flop_report,
      "threads without a counting session ran operators while this "
      "measurement was open (the unseen_work diagnostics name them); their "
      "bytes are not counted");
  return flop_report;
}

absl::StatusOr<std::map<std::size_t, LayerCallFlops>>
CountingSession::BuildLayerCallFlops() const {
  struct Accumulated {
    Count known = 0;
    bool complete = true;
    std::map<std::string, Count> by_operator;
  };
  std::map<std::size_t, Accumulated> by_layer;
  const std::shared_ptr<const ScopeTable> layer_table =
      Table(static_cast<int>(ScopeChannel::kLayerCalls));
  const ScopeTable& layers = *layer_table;
  for (const auto& [key, stats] : Merged()) {
    const OperatorInfo& info = OperatorInfoById(key.operator_id);
    // A compiled graph's lower bound is bytes without a call, and a mask's
    // exclusion (of a decomposed call, a nested product) is not a call
    // either: no FLOPs missing.
    const bool no_call =
        stats.calls == 0 && stats.counted_calls == 0 && stats.failed_calls == 0;
    if (no_call) continue;
    const bool uncounted =
        stats.failed_calls > 0 ||
        (stats.counted_calls == 0 && IgnoredIn(info) == nullptr);
    TS_RETURN_IF_ERROR(layers.ForEachLabel(
        key.scopes[1], [&](const std::string& label) -> absl::Status {
          std::size_t layer = 0;
          if (!absl::SimpleAtoi(label, &layer)) {
            return absl::InvalidArgumentError(absl::StrCat(
                "layer call label '", label, "' is not a layer index"));
          }
          Accumulated& scope = by_layer[layer];
          if (uncounted) scope.complete = false;
          if (stats.counted_calls > 0) {
            TS_RETURN_IF_ERROR(
                report::AddCount(scope.known, stats.flops, label));
            TS_RETURN_IF_ERROR(report::AddCount(
                scope.by_operator[info.report_name], stats.flops, label));
          }
          return absl::OkStatus();
        }));
  }
  // One layer call's operator FLOPs: the operator method, per module call.
  const report::MetricKind kind{
      "FLOPs", std::string(report::kModuleCallScope),
      std::string(elementwise_ ? report::kElementwiseFlopsMethod
                               : report::kOperatorFlopsMethod)};
  std::map<std::size_t, LayerCallFlops> result;
  for (auto& [layer, scope] : by_layer) {
    result[layer] = LayerCallFlops{
        .total = scope.complete
                     ? report::MetricResult::Complete(scope.known, kind)
                     : report::MetricResult::Partial(scope.known, kind),
        .by_operator = std::move(scope.by_operator)};
  }
  return result;
}

}  // namespace dispatch
}  // namespace torchscan
