#include "torchscan_dispatch/scope_table.h"

#include <algorithm>
#include <utility>

namespace torchscan::dispatch {

ScopeTable::ScopeTable() {
  scopes_.emplace_back();
  scope_ids_.emplace(LabelSet{}, 0);
}

std::uint32_t ScopeTable::LabelId(absl::string_view label) {
  absl::MutexLock lock(&mu_);
  if (auto it = label_ids_.find(label); it != label_ids_.end()) {
    return it->second;
  }
  const auto id = static_cast<std::uint32_t>(labels_.size());
  labels_.emplace_back(label);
  label_ids_.emplace(labels_.back(), id);
  return id;
}

const std::string& ScopeTable::Label(std::uint32_t label_id) const {
  absl::MutexLock lock(&mu_);
  return labels_.at(label_id);
}

std::uint32_t ScopeTable::InternSet(LabelSet set) {
  auto [it, inserted] =
      scope_ids_.try_emplace(set, static_cast<std::uint32_t>(scopes_.size()));
  if (inserted) scopes_.push_back(std::move(set));
  return it->second;
}

std::optional<std::uint32_t> ScopeTable::FindLabelId(
    absl::string_view label) const {
  absl::MutexLock lock(&mu_);
  if (auto it = label_ids_.find(label); it != label_ids_.end()) {
    return it->second;
  }
  return std::nullopt;
}

std::uint32_t ScopeTable::Intern(const std::vector<std::string>& labels) {
  LabelSet set;
  set.reserve(labels.size());
  for (const std::string& label : labels) set.push_back(LabelId(label));
  return InternIds(std::move(set));
}

std::uint32_t ScopeTable::InternIds(std::vector<std::uint32_t> label_ids) {
  std::sort(label_ids.begin(), label_ids.end());
  label_ids.erase(std::unique(label_ids.begin(), label_ids.end()),
                  label_ids.end());
  absl::MutexLock lock(&mu_);
  return InternSet(std::move(label_ids));
}

std::uint32_t ScopeTable::Change(std::uint32_t scope, std::uint32_t label_id,
                                 bool present) {
  absl::MutexLock lock(&mu_);
  const std::tuple<std::uint32_t, std::uint32_t, bool> transition{
      scope, label_id, present};
  if (auto it = transitions_.find(transition); it != transitions_.end()) {
    return it->second;
  }
  const LabelSet& current = scopes_.at(scope);
  auto position = std::lower_bound(current.begin(), current.end(), label_id);
  const bool found = position != current.end() && *position == label_id;
  std::uint32_t next = scope;
  if (found != present) {
    LabelSet changed = current;
    auto at = changed.begin() + (position - current.begin());
    if (present) {
      changed.insert(at, label_id);
    } else {
      changed.erase(at);
    }
    next = InternSet(std::move(changed));
  }
  transitions_.emplace(transition, next);
  return next;
}

std::vector<std::string> ScopeTable::Labels(std::uint32_t scope) const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> labels;
  if (scope >= scopes_.size()) return labels;
  for (std::uint32_t label : scopes_[scope]) labels.push_back(labels_[label]);
  std::sort(labels.begin(), labels.end());
  return labels;
}

absl::Status ScopeTable::ForEachLabel(
    std::uint32_t scope,
    absl::FunctionRef<absl::Status(const std::string&)> visit) const {
  absl::MutexLock lock(&mu_);
  if (scope >= scopes_.size()) return absl::OkStatus();
  for (std::uint32_t label : scopes_[scope]) {
    if (absl::Status status = visit(labels_[label]); !status.ok()) {
      return status;
    }
  }
  return absl::OkStatus();
}

bool ScopeTable::HasScope(std::uint32_t scope) const {
  absl::MutexLock lock(&mu_);
  return scope < scopes_.size();
}

std::size_t ScopeTable::scope_count() const {
  absl::MutexLock lock(&mu_);
  return scopes_.size();
}

std::size_t ScopeTable::label_count() const {
  absl::MutexLock lock(&mu_);
  return labels_.size();
}

}  // namespace torchscan::dispatch
