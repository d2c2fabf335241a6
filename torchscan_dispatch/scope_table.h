// ScopeTable: interned scope labels and label sets, shared by the
// measurements of one model.
//
// A counting session attributes each call to the set of labels of its
// current scope (counting_session.h): the modules running, or the open layer
// calls. Sets are interned once and named by a small id, and the step from
// one set to the next (a label added or removed) is cached, so that a module
// transition seen before is one lookup and allocates nothing.
//
// NOTE [Scopes kept per model]
// A training loop measures the same model every step. A table of its own per
// measurement built the same label strings, sets and transitions again every
// step, between the forward's activation buffers, where the small blocks
// moved glibc's heap top: the heap was trimmed after the measurement and its
// pages faulted in again in the next forward (docs/performance.md, "Page
// faults"). A table outlives the measurement that filled it: by_module keeps
// one per model (python/torchscan_dispatch/_module_scopes.py, NOTE [Names
// kept per model]) and the next measurement's session adopts it, so the
// second and later measurements find every label, set and transition already
// there. Interning is pure (a set's id names the same set for every user of
// the table), so sessions on several threads may share one table.
//
// Torch-free. Thread-safe.

#ifndef TORCHSCAN_DISPATCH_SCOPE_TABLE_H_
#define TORCHSCAN_DISPATCH_SCOPE_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace torchscan::dispatch {

class ScopeTable {
 public:
  // Id 0 is the empty set; no label yet.
  ScopeTable();

  ScopeTable(const ScopeTable&) = delete;
  ScopeTable& operator=(const ScopeTable&) = delete;

  // The id of `label`, interned on first use. A label seen before allocates
  // nothing.
  std::uint32_t LabelId(absl::string_view label);
  // The label of `label_id` (an id LabelId handed out); the reference stays
  // valid as long as the table.
  const std::string& Label(std::uint32_t label_id) const;

  // The id of `label` if LabelId handed one out, else nullopt (nothing is
  // interned).
  std::optional<std::uint32_t> FindLabelId(absl::string_view label) const;

  // The id of the set of `labels` (any order; duplicates count once).
  std::uint32_t Intern(const std::vector<std::string>& labels);
  // The same for labels given by id (ids LabelId handed out): one lock, no
  // string work.
  std::uint32_t InternIds(std::vector<std::uint32_t> label_ids);
  // The id of scope `scope` with label `label_id` added (`present`) or
  // removed, as a set. Cached: a transition seen before allocates nothing.
  // Both ids must have been handed out by this table.
  std::uint32_t Change(std::uint32_t scope, std::uint32_t label_id,
                       bool present);
  // The labels of scope `scope`, sorted; empty for an id never handed out.
  std::vector<std::string> Labels(std::uint32_t scope) const;
  // Calls `visit` with each label of scope `scope` (none for an id never
  // handed out), in no particular order and with no copy, under the table's
  // lock: `visit` must not use the table. Stops at, and returns, the first
  // error `visit` returns.
  absl::Status ForEachLabel(
      std::uint32_t scope,
      absl::FunctionRef<absl::Status(const std::string&)> visit) const;

  // Whether `scope` was handed out.
  bool HasScope(std::uint32_t scope) const;
  std::size_t scope_count() const;
  std::size_t label_count() const;

 private:
  // A set of label ids, sorted by id.
  using LabelSet = std::vector<std::uint32_t>;
  std::uint32_t InternSet(LabelSet set) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  // A deque: references to labels stay valid as labels are added.
  std::deque<std::string> labels_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<absl::string_view, std::uint32_t> label_ids_
      ABSL_GUARDED_BY(mu_);
  std::vector<LabelSet> scopes_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<LabelSet, std::uint32_t> scope_ids_ ABSL_GUARDED_BY(mu_);
  // (scope, label, present) -> the scope it leads to.
  absl::flat_hash_map<std::tuple<std::uint32_t, std::uint32_t, bool>,
                      std::uint32_t>
      transitions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_SCOPE_TABLE_H_
