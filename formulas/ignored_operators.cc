#include "formulas/ignored_operators.h"

#include <algorithm>
#include <array>

namespace torchscan::formulas {
namespace {

constexpr auto kTable = std::to_array<IgnoredOperatorEntry>({
    {"aten::_to_copy", kDataMovementReason},
    {"aten::_unsafe_view", kViewReason},
    {"aten::alias", kViewReason},
    {"aten::as_strided", kViewReason},
    {"aten::cat", kDataMovementReason},
    {"aten::clone", kDataMovementReason},
    {"aten::contiguous", kDataMovementReason},
    {"aten::copy_", kDataMovementReason},
    {"aten::detach", kViewReason},
    {"aten::empty", kAllocationReason},
    {"aten::empty_strided", kAllocationReason},
    {"aten::expand", kViewReason},
    {"aten::full", kCreationReason},
    {"aten::lift_fresh", kCreationReason},
    {"aten::lift_fresh_copy", kCreationReason},
    {"aten::narrow", kViewReason},
    {"aten::ones", kCreationReason},
    {"aten::permute", kViewReason},
    {"aten::scalar_tensor", kCreationReason},
    {"aten::select", kViewReason},
    {"aten::slice", kViewReason},
    {"aten::split", kDataMovementReason},
    {"aten::squeeze", kViewReason},
    {"aten::t", kViewReason},
    {"aten::to", kDataMovementReason},
    {"aten::transpose", kViewReason},
    {"aten::unbind", kViewReason},
    {"aten::unsqueeze", kViewReason},
    {"aten::view", kViewReason},
    {"aten::zeros", kCreationReason},
});

constexpr bool IsSortedAndUnique() {
  for (std::size_t i = 1; i < kTable.size(); ++i) {
    if (!(kTable[i - 1].packet < kTable[i].packet)) return false;
  }
  return true;
}
static_assert(IsSortedAndUnique(),
              "kTable must be sorted by packet name, without duplicates");

}  // namespace

const IgnoredOperatorEntry* FindIgnoredOperator(absl::string_view packet) {
  auto it = std::lower_bound(
      kTable.begin(), kTable.end(), packet,
      [](const IgnoredOperatorEntry& entry, absl::string_view name) {
        return entry.packet < name;
      });
  if (it == kTable.end() || it->packet != packet) return nullptr;
  return &*it;
}

absl::Span<const IgnoredOperatorEntry> AllIgnoredOperators() { return kTable; }

}  // namespace torchscan::formulas
