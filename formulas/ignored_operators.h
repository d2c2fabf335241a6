// Operators that are explicitly zero-FLOP, each with the reason.
//
// They are reported under `ignored_operators` with their call counts instead
// of as uncounted work. Everything that is neither here nor in the formula
// table makes the operator total partial. The list and reasons are TorchScan
// 0.2's (its ignore list), plus the profiler's range markers (NOTE [Profiler
// ranges] in ignored_operators.cc).

#ifndef TORCHSCAN_FORMULAS_IGNORED_OPERATORS_H_
#define TORCHSCAN_FORMULAS_IGNORED_OPERATORS_H_

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace torchscan::formulas {

inline constexpr absl::string_view kViewReason = "Metadata-only tensor view.";
inline constexpr absl::string_view kDataMovementReason =
    "Data movement is excluded from FLOPs.";
inline constexpr absl::string_view kAllocationReason =
    "Tensor allocation is excluded from FLOPs.";
inline constexpr absl::string_view kCreationReason =
    "Tensor creation is excluded from FLOPs.";
inline constexpr absl::string_view kProfilerRangeReason =
    "Profiler range marker; runs no tensor arithmetic.";

struct IgnoredOperatorEntry {
  // Schema name of the packet, e.g. "aten::view".
  absl::string_view packet;
  absl::string_view reason;
};

// nullptr when the packet is not explicitly zero-FLOP.
const IgnoredOperatorEntry* FindIgnoredOperator(absl::string_view packet);
absl::Span<const IgnoredOperatorEntry> AllIgnoredOperators();

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_IGNORED_OPERATORS_H_
