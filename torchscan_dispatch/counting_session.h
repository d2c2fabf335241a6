// CountingSession: what one measurement saw, from every thread that worked
// for it.
//
// A session is found through c10::ThreadLocalDebugInfo, which PyTorch copies
// into the autograd engine's threads, at::launch tasks and JIT forks together
// with the dispatch-key TLS. So a backward pass run by the engine on another
// thread is counted by the session of the thread that called backward(),
// which a plain thread_local could not do.
//
// Calls are attributed to the session's current scopes: the set of module
// labels (FlopCounterMode's module tracking, for `by_module`) and the set of
// open layer calls (crawl_module's per-layer operator FLOPs). Both are sets
// because a call belongs to every enclosing module.

#ifndef TORCHSCAN_DISPATCH_COUNTING_SESSION_H_
#define TORCHSCAN_DISPATCH_COUNTING_SESSION_H_

#include <ATen/core/ivalue.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "report/communication.h"
#include "report/flop_report.h"
#include "report/metric_result.h"
#include "report/precision.h"
#include "torchscan_dispatch/byte_rule.h"
#include "torchscan_dispatch/call_log.h"
#include "torchscan_dispatch/counting_options.h"
#include "torchscan_dispatch/layer_call_flops.h"
#include "torchscan_dispatch/operator_info.h"
#include "torchscan_dispatch/scope_table.h"
#include "torchscan_dispatch/thread_state.h"
#include "torchscan_dispatch/unseen_threads.h"

namespace torchscan::dispatch {

using report::Count;
using report::Precision;

enum class ScopeChannel : int { kModules = 0, kLayerCalls = 1 };
inline constexpr int kScopeChannels = 2;
// Whether `channel`, as an integer from outside (Python), names a channel.
inline bool IsScopeChannel(std::int64_t channel) {
  return channel >= 0 && channel < kScopeChannels;
}

// A call of a deferred (caller-evaluated) operator, kept for after the
// workload. Tensors are replaced by meta tensors of the same sizes, strides
// and dtype: no data is kept alive.
struct DeferredCall {
  std::uint32_t operator_id = 0;
  std::array<std::uint32_t, kScopeChannels> scopes{};
  std::vector<c10::IValue> arguments;
  std::vector<c10::IValue> results;
  // Read from the original call (the meta copies have lost its device).
  Precision precision = Precision::kUnknown;
};

class CountingSession : public c10::DebugInfoBase,
                        public std::enable_shared_from_this<CountingSession> {
 public:
  explicit CountingSession(CountingOptions options = {});
  ~CountingSession() override;

  CountingSession(const CountingSession&) = delete;
  CountingSession& operator=(const CountingSession&) = delete;

  // Distinguishes sessions (addresses get reused).
  std::uint64_t serial() const { return serial_; }

  // The innermost session active on this thread, or nullptr.
  static CountingSession* Current();
  // The slot in c10::ThreadLocalDebugInfo that holds sessions.
  static const c10::DebugInfoKind& DebugInfoKind();

  // The custom formula of `op` in this session, or nullptr. Cheap when the
  // session has none.
  const CustomFormula* CustomFormulaFor(const OperatorInfo& op);
  // Inline, so that sessions without custom or deferred formulas (almost
  // all) pay one flag test per operator call, not two calls.
  bool has_custom_formulas() const { return has_custom_formulas_; }
  bool has_deferred() const { return has_deferred_; }
  // Whether the session counts under the elementwise convention
  // (CountingOptions::elementwise).
  bool elementwise() const { return elementwise_; }
  // Whether calls of `op` are recorded for the caller to evaluate.
  bool IsDeferred(const OperatorInfo& op);

  // A call of `op` that no formula counts, which moved `bytes`
  // (call_bytes.h). The hot path; `slot` is this thread's
  // ThisThreadState().session.
  void RecordCall(const OperatorInfo& op, SessionSlot& slot,
                  const CallBytes& bytes = {});
  // The same through this thread's slot, for callers off the hot path
  // (recorded calls).
  void RecordCall(const OperatorInfo& op, const CallBytes& bytes);
  // A pseudo-operator's call: work no operator call shows (unseen work, a
  // compiled graph without a tally), whose bytes are therefore unknown.
  void RecordCall(const OperatorInfo& op);
  // A call of `op` whose formula gave `flops`, computed in `precision`
  // (compute_precision.h), through this thread's slot (as RecordCall).
  void RecordCounted(const OperatorInfo& op, Count flops, Precision precision,
                     SessionSlot& slot, const CallBytes& bytes = {});
  // A call of `op` whose formula could not be evaluated.
  void RecordFailed(const OperatorInfo& op, const absl::Status& error,
                    const CallBytes& bytes = {});
  // The bytes of a call of `op` recorded without them (a deferred call).
  void RecordBytes(const OperatorInfo& op, const CallBytes& bytes);
  // A call of a deferred operator, with its arguments and results, computed
  // in `precision`.
  void RecordDeferred(const OperatorInfo& op,
                      std::vector<c10::IValue> arguments,
                      std::vector<c10::IValue> results, Precision precision);

  // Mask-aware attention (attention_masks.h): of the attention call of `op`
  // just recorded, `excluded` executed FLOPs its mask does not allow; or,
  // with `unread_reason` set, its mask could not be read and `excluded` is
  // its whole executed count (the mask-aware count stays a lower bound).
  void RecordMaskExclusion(const OperatorInfo& op, Count excluded,
                           absl::string_view unread_reason);
  // The same in module scope `module_scope` (a compiled graph's call).
  void RecordMaskExclusionIn(const OperatorInfo& op, std::uint32_t module_scope,
                             Count excluded, absl::string_view unread_reason);

  // The FLOPs this thread's counted calls of operators `which` accepts have
  // added so far (a nested product's padding, nested_products.h). Off the
  // hot path: it walks the thread's entries under their lock.
  Count CountedFlopsOfThisThread(
      absl::FunctionRef<bool(const OperatorInfo&)> which);

  // One collective call of `op` moving `payload_bytes` in the group named
  // `group_name` of `group_size` ranks, or one whose volume could not be
  // read (`reason`).
  void RecordCommunication(const OperatorInfo& op, report::CollectiveKind kind,
                           absl::string_view group_name,
                           std::int64_t group_size, Count payload_bytes);
  void RecordUnreadableCommunication(const OperatorInfo& op,
                                     absl::string_view reason);
  // The collectives seen so far.
  report::CommunicationReport Communication() const;

  // The same records for work whose module labels come from elsewhere
  // (a compiled graph's module stack): in module scope `module_scope`, an id
  // from ModuleScopeWith, instead of the current one. They record no bytes:
  // their graph records its bounds (RecordCompiledGraph).
  void RecordCallIn(const OperatorInfo& op, std::uint32_t module_scope);
  void RecordCountedIn(const OperatorInfo& op, std::uint32_t module_scope,
                       Count flops, Precision precision);
  void RecordFailedIn(const OperatorInfo& op, std::uint32_t module_scope,
                      const absl::Status& error);
  // One run of a compiled graph, `run` its bytes (NOTE [Bytes of compiled
  // graphs] in compiled_graph_tally.cc): its lower bound is recorded as the
  // bytes of `op` (the kCompiledGraphOperator pseudo-operator, no call) in
  // module scope `module_scope`; the run joins the graph's record by name,
  // which the report turns into its diagnostic and the upper bound.
  void RecordCompiledGraph(const OperatorInfo& op, std::uint32_t module_scope,
                           const report::CompiledRegionBytes& run);
  // RecordDeferred in module scope `module_scope`: a compiled graph's call
  // of a deferred operator, its values rebuilt from the graph's description.
  void RecordDeferredIn(const OperatorInfo& op, std::uint32_t module_scope,
                        std::vector<c10::IValue> arguments,
                        std::vector<c10::IValue> results, Precision precision);
  // The current module scope, and the id of the set of its labels with
  // `labels` added.
  std::uint32_t CurrentModuleScope() const;
  std::uint32_t ModuleScopeWith(std::uint32_t module_scope,
                                const std::vector<std::string>& labels);

  // Makes `labels` the current scope of `channel` for calls from now on.
  void SetScope(ScopeChannel channel, std::vector<std::string> labels);
  // Adds `label` to (`present`) or removes it from the current scope of
  // `channel`, as a set (adding a present label or removing an absent one
  // changes nothing), and returns the id of the resulting scope. Callers
  // that cache these transitions replay them with SetScopeId, which keeps
  // module hooks cheap.
  std::uint32_t ChangeScopeLabel(ScopeChannel channel, const std::string& label,
                                 bool present);
  // Makes the interned scope `id` current; an id never handed out is an
  // error.
  absl::Status SetScopeId(ScopeChannel channel, std::uint32_t id);

  // Module scopes kept per model (NOTE [Scopes kept per model] in
  // scope_table.h). Makes `table` this session's table of module labels and
  // scopes, if the session has interned no module label yet (its module
  // scope is the empty set, id 0 in every table); false, changing nothing,
  // otherwise or when `table` holds more than kMaxAdoptedScopes scopes.
  bool AdoptModuleScopes(std::shared_ptr<ScopeTable> table);
  static constexpr std::size_t kMaxAdoptedScopes = 1 << 16;
  // The id of module label `label` in this session's module table.
  std::uint32_t ModuleLabelId(absl::string_view label);
  // The label of `label_id` in this session's module table.
  const std::string& ModuleLabel(std::uint32_t label_id) const;
  // ChangeScopeLabel of the modules channel by label id: the transition
  // module hooks make. A transition the table has seen allocates nothing.
  std::uint32_t ChangeModuleLabel(std::uint32_t label_id, bool present);

  // A layer call begins: calls from now on belong to it (and to the layer
  // calls still open) and to `module_label` (FlopCounterMode's module name).
  // An empty `layer_label` tracks the module alone (a module without a layer
  // record). One call per hook instead of one per channel.
  void EnterLayer(std::string layer_label, std::string module_label);
  // The most recent open call with these labels ends.
  void ExitLayer(const std::string& layer_label,
                 const std::string& module_label);

  // The per-call record (call_log.h), or nullptr unless the options asked
  // for it.
  const CallLog* call_log() const { return call_log_.get(); }
  // Ends the per-call record when the counter stops (CallLog::Close).
  void CloseCallLog();
  // The labels of module scope `id` (as ModuleScopeWith takes them).
  std::vector<std::string> ModuleScopeLabels(std::uint32_t id) const;
  // Hands out the deferred calls recorded so far (each only once).
  std::vector<DeferredCall> TakeDeferredCalls();
  // Records the caller's evaluation of a deferred call.
  void ResolveDeferred(const DeferredCall& call,
                       const absl::StatusOr<Count>& flops);

  // Adds everything `inner` saw (in this session's current scopes). A nested
  // measurement's work also belongs to the enclosing one, as with nested
  // FlopCounterModes. Its logged calls join this session's per-call record,
  // if both keep one (NOTE [Nested measurements' calls] in
  // counting_session.cc).
  void MergeFrom(const CountingSession& inner);

  // What threads without a session ran during the measurement
  // (ActiveCounting sets it when it stops). Each such thread that ran an
  // operator carrying FLOPs is an unseen_work diagnostic of the report.
  void SetUnseenThreadWork(std::vector<UnseenThreadWork> work);

  // What the session saw so far, merged over threads; `by_module` holds the
  // inclusive FLOPs of every module label that had counted operators.
  absl::StatusOr<report::FlopReport> BuildReport() const;
  // Operator FLOPs per layer call, inclusive of nested layer calls. A crawl's
  // front end labels each layer call with its layer's index in decimal: each
  // layer call's `total` (complete unless an operator without a formula, and
  // not ignored, or a failing formula ran inside it) and `by_operator`, keyed
  // by that index (`path` and `call_index` are the layer's to give).
  // InvalidArgument for a label that is not an index.
  absl::StatusOr<std::map<std::size_t, LayerCallFlops>> BuildLayerCallFlops()
      const;

 private:
  struct OperatorStats {
    std::int64_t calls = 0;
    std::int64_t counted_calls = 0;
    Count flops = 0;
    // `flops` by compute precision: fixed slots, summed per counted call
    // without allocating.
    report::PrecisionCounts flops_by_precision{};
    std::int64_t failed_calls = 0;
    std::string first_failure;
    // Mask-aware attention: FLOPs the masks excluded, and calls whose mask
    // was not read (the first one's reason).
    Count mask_excluded = 0;
    std::int64_t mask_unread_calls = 0;
    std::string first_mask_unread;
    // Bytes moved (call_bytes.h), and calls whose bytes are not known (the
    // first one's reason).
    Count bytes_read = 0;
    Count bytes_written = 0;
    std::int64_t bytes_unknown_calls = 0;
    std::string first_bytes_unknown;
  };
  // A Count in two relaxed atomic halves, written by the owner thread alone.
  struct AtomicCount {
    std::atomic<std::uint64_t> low{0};
    std::atomic<std::uint64_t> high{0};
  };
  // Per-thread entry: calls without a formula and counted calls (the hot
  // paths) are recorded with relaxed atomic stores by the owning thread
  // alone, without a lock; everything else changes under the thread's lock.
  struct ThreadEntry {
    std::atomic<std::int64_t> uncounted_calls{0};
    // Bytes of every call, kept as uncounted_calls is (owner-only relaxed
    // stores, no lock); calls whose bytes are unknown go to `stats`.
    std::atomic<std::int64_t> bytes_read{0};
    std::atomic<std::int64_t> bytes_written{0};
    // Counted calls (a formula's FLOPs), kept by the owner thread without a
    // lock: written between two increments of `counted_sequence`, read by
    // reports that retry while it is odd or has moved (NOTE [Counted calls
    // without a lock] in counting_session.cc). A call whose FLOPs overflow
    // the sum goes to `stats` instead.
    std::atomic<std::uint32_t> counted_sequence{0};
    std::atomic<std::int64_t> counted_calls{0};
    AtomicCount counted_flops;
    std::array<AtomicCount, report::kPrecisionCount> counted_by_precision;
    OperatorStats stats;
  };
  struct StatsKey {
    std::array<std::uint32_t, kScopeChannels> scopes{};
    std::uint32_t operator_id = 0;

    bool operator==(const StatsKey&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const StatsKey& key) {
      return H::combine(std::move(h), key.scopes[0], key.scopes[1],
                        key.operator_id);
    }
  };
  using StatsMap = absl::flat_hash_map<StatsKey, OperatorStats>;
  // Written by one thread; read by reports under its lock. Entries never move
  // (node map), so the owner may cache pointers to the entries it used.
  // Recycled by the next session of the same thread (NOTE [Recycled thread
  // stats] in counting_session.cc).
  struct ThreadStats {
    // Owner-only, direct-mapped by operator id: a loop that alternates
    // operators (mm, add, mm, ...) finds each one's entry without the lock
    // or a hash lookup.
    static constexpr std::size_t kCachedEntries = 64;
    struct CachedEntry {
      StatsKey key;
      ThreadEntry* entry = nullptr;
    };

    std::thread::id owner;
    mutable absl::Mutex mu;
    absl::node_hash_map<StatsKey, ThreadEntry> entries ABSL_GUARDED_BY(mu);
    std::array<CachedEntry, kCachedEntries> cached{};
  };

  struct StatsPool;
  // The process's recycled ThreadStats (never destroyed).
  static StatsPool& Pool();
  // A recycled ThreadStats of this thread, zeroed, or nullptr.
  static std::unique_ptr<ThreadStats> TakeRecycled(std::thread::id owner);
  // Zeroes `stats` and keeps it for the next session of its thread, unless
  // it grew past kMaxRecycledEntries entries.
  static void Recycle(std::unique_ptr<ThreadStats> stats);
  static constexpr std::size_t kMaxRecycledEntries = 4096;
  static constexpr std::size_t kMaxRecycledThreads = 16;
  // Whether `entry` holds nothing (a recycled entry this session never used).
  static bool Unused(const ThreadEntry& entry);

  static void Add(OperatorStats& into, const OperatorStats& from);
  // Adds one counted call of `flops` in `precision` to `entry`'s lock-free
  // counters (the owner thread, no lock); false, adding nothing, when the
  // FLOP sum would overflow.
  static bool AddCountedWithoutLock(ThreadEntry& entry, Count flops,
                                    Precision precision);
  // `value` into the two halves of `into` (relaxed), and back.
  static void StoreCount(AtomicCount& into, Count value);
  static Count LoadCount(const AtomicCount& from);
  // Adds `entry`'s lock-free counted calls to `into` (any thread).
  static void AddCountedOf(const ThreadEntry& entry, OperatorStats& into);
  // Records one counted call in `entry` of this thread's `thread`: without
  // a lock, or as a failed call under it when the FLOP sum would overflow.
  static void AddCountedTo(ThreadStats& thread, ThreadEntry& entry, Count flops,
                           Precision precision);
  ThreadStats& ThisThread();
  ThreadStats& ThisThread(SessionSlot& slot);
  // The owner thread's entry for `key` (cached, else found or made under lock).
  static ThreadEntry& EntryFor(ThreadStats& thread, const StatsKey& key);
  StatsKey KeyFor(const OperatorInfo& op) const;
  StatsKey KeyIn(const OperatorInfo& op, std::uint32_t module_scope) const;
  void Record(const StatsKey& key, const OperatorStats& one_call);
  // Adds `bytes` to `entry` (the owner thread; `thread` is its stats).
  static void AddBytes(ThreadStats& thread, ThreadEntry& entry,
                       const CallBytes& bytes);
  void RecordCountedAt(const StatsKey& key, Count flops, Precision precision);
  // Appends one call to call_log_ (which must exist).
  void LogCall(const OperatorInfo& op, LoggedCallKind kind, Count flops,
               const CallBytes& bytes);
  // The ignore-list entry `op` has in this session's method: its own, else
  // under the elementwise convention its elementwise_ignored one.
  const formulas::IgnoredOperatorEntry* IgnoredIn(const OperatorInfo& op) const;
  // All threads' stats merged.
  StatsMap Merged() const;
  // The table of `channel`.
  std::shared_ptr<ScopeTable> Table(int channel) const ABSL_LOCKS_EXCLUDED(mu_);
  // The labels of an interned scope.
  std::vector<std::string> ScopeLabels(ScopeChannel channel,
                                       std::uint32_t id) const;

  // Distinguishes sessions in per-thread caches (addresses get reused).
  const std::uint64_t serial_;
  const bool has_custom_formulas_;
  const bool has_deferred_;
  const bool elementwise_;
  const CountingOptions options_;
  // Set when options_.record_calls; fixed for the session's life, so the
  // record paths test it without a lock.
  const std::unique_ptr<CallLog> call_log_;

  std::array<std::atomic<std::uint32_t>, kScopeChannels> current_scope_{};

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<ThreadStats>> threads_ ABSL_GUARDED_BY(mu_);
  // Interned labels and label sets per channel; id 0 is the empty set. The
  // module table may be one kept for the model (AdoptModuleScopes).
  std::array<std::shared_ptr<ScopeTable>, kScopeChannels> tables_
      ABSL_GUARDED_BY(mu_);
  // Operator id to its custom formula index (-1: none), or deferred flag.
  absl::flat_hash_map<std::uint32_t, int> custom_index_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::uint32_t, bool> deferred_ ABSL_GUARDED_BY(mu_);
  std::vector<DeferredCall> deferred_calls_ ABSL_GUARDED_BY(mu_);
  // Collectives are rare (a few per step): one lock per call is fine.
  report::CommunicationReport communication_ ABSL_GUARDED_BY(mu_);
  std::vector<UnseenThreadWork> unseen_threads_ ABSL_GUARDED_BY(mu_);
  // The compiled graphs that ran, by name (one run or a few per step).
  std::map<std::string, report::CompiledRegionBytes> compiled_regions_
      ABSL_GUARDED_BY(mu_);
  // Open layer calls, innermost last: the layer label id (kNoLayer for a
  // module without a layer record) and module label id, ids of tables_,
  // and the scopes of the calls open up to and including this one.
  static constexpr std::uint32_t kNoLayer = UINT32_MAX;
  struct OpenLayer {
    std::uint32_t layer;
    std::uint32_t module;
    std::uint32_t layer_scope = 0;
    std::uint32_t module_scope = 0;
  };
  std::vector<OpenLayer> open_layers_ ABSL_GUARDED_BY(mu_);
  // Sets the scopes of open_layers_ from entry `from` on, and both
  // channels' scopes to those of all of them.
  void SetOpenLayerScopes(std::size_t from) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
};

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_COUNTING_SESSION_H_
