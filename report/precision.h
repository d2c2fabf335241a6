// Precision: the arithmetic an operator call's FLOPs ran in, for measuring
// each FLOP against the peak of that precision (precision-aware MFU).
//
// The names are the precisions of the Python device table
// (python/torchscan_dispatch/devices.py, PRECISIONS), plus "unknown" for
// FLOPs whose precision was not seen (a compiled graph described without
// dtypes, an integer product other than 8-bit). A report's by_precision
// member (docs/report-schema.md) is keyed by these names.

#ifndef TORCHSCAN_REPORT_PRECISION_H_
#define TORCHSCAN_REPORT_PRECISION_H_

#include <array>
#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"
#include "report/count.h"

namespace torchscan::report {

enum class Precision : std::uint8_t {
  kFp64 = 0,
  kFp32,
  kTf32,
  kBf16,
  kFp16,
  kFp8,
  kInt8,
  kUnknown,
};
inline constexpr int kPrecisionCount = 8;

// Per-precision sums, indexed by Precision: fixed slots, no allocation.
using PrecisionCounts = std::array<Count, kPrecisionCount>;

inline constexpr int PrecisionIndex(Precision precision) {
  return static_cast<int>(precision);
}

// "fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "unknown".
absl::string_view PrecisionName(Precision precision);
// The precision named `name`, or nullopt.
std::optional<Precision> PrecisionFromName(absl::string_view name);

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_PRECISION_H_
