#include "formulas/ignored_operators.h"

#include <algorithm>
#include <array>

namespace torchscan::formulas {
namespace {

constexpr auto kTable = std::to_array<IgnoredOperatorEntry>({
    {"aten::_efficientzerotensor", kCreationReason},
    {"aten::_fw_primal", kViewReason},
    {"aten::_has_same_storage_numel", kMetadataReason},
    {"aten::_make_dual", kViewReason},
    {"aten::_reshape_alias", kViewReason},
    {"aten::_to_copy", kDataMovementReason},
    {"aten::_unpack_dual", kViewReason},
    {"aten::_unsafe_view", kViewReason},
    {"aten::alias", kViewReason},
    {"aten::as_strided", kViewReason},
    {"aten::cat", kDataMovementReason},
    {"aten::clone", kDataMovementReason},
    {"aten::contiguous", kDataMovementReason},
    {"aten::copy_", kDataMovementReason},
    {"aten::detach", kViewReason},
    {"aten::diagonal", kViewReason},
    {"aten::empty", kAllocationReason},
    {"aten::empty_like", kAllocationReason},
    {"aten::empty_strided", kAllocationReason},
    {"aten::expand", kViewReason},
    {"aten::fill_", kCreationReason},
    {"aten::full", kCreationReason},
    {"aten::full_like", kCreationReason},
    {"aten::is_same_size", kMetadataReason},
    {"aten::lift_fresh", kCreationReason},
    {"aten::lift_fresh_copy", kCreationReason},
    {"aten::narrow", kViewReason},
    {"aten::new_empty", kAllocationReason},
    {"aten::new_empty_strided", kAllocationReason},
    {"aten::new_full", kCreationReason},
    {"aten::new_ones", kCreationReason},
    {"aten::new_zeros", kCreationReason},
    {"aten::ones", kCreationReason},
    {"aten::ones_like", kCreationReason},
    {"aten::permute", kViewReason},
    {"aten::reshape", kDataMovementReason},
    {"aten::scalar_tensor", kCreationReason},
    {"aten::select", kViewReason},
    {"aten::slice", kViewReason},
    {"aten::split", kDataMovementReason},
    {"aten::split_with_sizes", kViewReason},
    {"aten::squeeze", kViewReason},
    {"aten::squeeze_", kViewReason},
    {"aten::sym_numel", kMetadataReason},
    {"aten::sym_size", kMetadataReason},
    {"aten::sym_storage_offset", kMetadataReason},
    {"aten::sym_stride", kMetadataReason},
    {"aten::t", kViewReason},
    {"aten::to", kDataMovementReason},
    {"aten::transpose", kViewReason},
    {"aten::unbind", kViewReason},
    {"aten::unsqueeze", kViewReason},
    {"aten::unsqueeze_", kViewReason},
    {"aten::view", kViewReason},
    {"aten::zeros", kCreationReason},
    {"aten::zeros_like", kCreationReason},
    {"mkl::_mkl_reorder_linear_weight", kDataMovementReason},
    {"mkldnn::_reorder_convolution_transpose_weight", kDataMovementReason},
    {"mkldnn::_reorder_convolution_weight", kDataMovementReason},
    {"mkldnn::_reorder_linear_weight", kDataMovementReason},
    {"prims::inductor_force_stride_order", kDataMovementReason},
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
