#include "formulas/exact_count.h"

#include <limits>
#include <optional>

namespace torchscan::formulas {

using report::Count;

ExactCount ExactCount::Overflowed() {
  ExactCount count;
  count.overflowed_ = true;
  return count;
}

ExactCount operator+(ExactCount a, ExactCount b) {
  if (a.overflowed_ || b.overflowed_) return ExactCount::Overflowed();
  std::optional<Count> sum = report::CheckedAdd(a.value_, b.value_);
  return sum ? ExactCount(*sum) : ExactCount::Overflowed();
}

ExactCount operator-(ExactCount a, ExactCount b) {
  if (a.overflowed_ || b.overflowed_) return ExactCount::Overflowed();
  if (b.value_ == std::numeric_limits<Count>::min()) {
    return ExactCount::Overflowed();
  }
  std::optional<Count> difference = report::CheckedAdd(a.value_, -b.value_);
  return difference ? ExactCount(*difference) : ExactCount::Overflowed();
}

ExactCount operator*(ExactCount a, ExactCount b) {
  if (a.overflowed_ || b.overflowed_) return ExactCount::Overflowed();
  std::optional<Count> product = report::CheckedMultiply(a.value_, b.value_);
  return product ? ExactCount(*product) : ExactCount::Overflowed();
}

ExactCount FloorDiv(ExactCount a, ExactCount b) {
  if (a.overflowed_ || b.overflowed_ || b.value_ == 0) {
    return ExactCount::Overflowed();
  }
  // The one quotient that does not fit: min / -1.
  if (a.value_ == std::numeric_limits<Count>::min() && b.value_ == -1) {
    return ExactCount::Overflowed();
  }
  Count quotient = a.value_ / b.value_;
  // C++ truncates toward zero; Python floors.
  if (a.value_ % b.value_ != 0 && ((a.value_ < 0) != (b.value_ < 0))) {
    quotient -= 1;
  }
  return quotient;
}

ExactCount FloorMod(ExactCount a, ExactCount b) {
  if (a.overflowed_ || b.overflowed_ || b.value_ == 0) {
    return ExactCount::Overflowed();
  }
  if (b.value_ == -1) return ExactCount(0);
  Count remainder = a.value_ % b.value_;
  // Python's remainder takes the divisor's sign.
  if (remainder != 0 && ((remainder < 0) != (b.value_ < 0))) {
    remainder += b.value_;
  }
  return remainder;
}

ExactCount ExactProduct(absl::Span<const std::int64_t> values) {
  ExactCount product = 1;
  for (std::int64_t value : values) product = product * value;
  return product;
}

}  // namespace torchscan::formulas
