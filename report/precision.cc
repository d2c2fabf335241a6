#include "report/precision.h"

namespace torchscan::report {
namespace {

constexpr std::array<absl::string_view, kPrecisionCount> kNames = {
    "fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "unknown"};

}  // namespace

absl::string_view PrecisionName(Precision precision) {
  return kNames[PrecisionIndex(precision)];
}

std::optional<Precision> PrecisionFromName(absl::string_view name) {
  for (int i = 0; i < kPrecisionCount; ++i) {
    if (kNames[i] == name) return static_cast<Precision>(i);
  }
  return std::nullopt;
}

}  // namespace torchscan::report
