#include "formulas/ignored_operators.h"

#include <array>

#include "formulas/packet_table.h"

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
    // NOTE [Profiler ranges]
    // `torch.profiler.record_function` (which every `Optimizer.step` opens)
    // enters and leaves a range through these operators, and a dispatch mode
    // sees them. They run no tensor arithmetic, so they must not make a count
    // partial. TorchScan 0.2 listed them as uncounted; this is a deliberate
    // deviation (docs/operators.md).
    {"profiler::_record_function_enter", kProfilerRangeReason},
    {"profiler::_record_function_enter_new", kProfilerRangeReason},
    {"profiler::_record_function_exit", kProfilerRangeReason},
});

static_assert(IsSortedByPacket(kTable),
              "kTable must be sorted by packet name, without duplicates");

}  // namespace

const IgnoredOperatorEntry* FindIgnoredOperator(absl::string_view packet) {
  return FindByPacket(kTable, packet);
}

absl::Span<const IgnoredOperatorEntry> AllIgnoredOperators() { return kTable; }

}  // namespace torchscan::formulas
