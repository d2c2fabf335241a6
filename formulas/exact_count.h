// Integer arithmetic that reports overflow instead of wrapping.
//
// TorchScan's module formulas are Python integer arithmetic, which never
// overflows. Ours is 128-bit: enough for any real tensor, but products of
// huge meta-tensor shapes can leave the range, and then a formula must fail
// with an error rather than return a wrapped number. An ExactCount carries an
// "overflowed" flag through every operation, so formulas read like the
// Python they reproduce and check once, at the end.

#ifndef TORCHSCAN_FORMULAS_EXACT_COUNT_H_
#define TORCHSCAN_FORMULAS_EXACT_COUNT_H_

#include <cstdint>

#include "absl/types/span.h"
#include "report/count.h"

namespace torchscan::formulas {

class ExactCount {
 public:
  // Implicit on purpose: formulas mix literals, shape entries and counts.
  constexpr ExactCount(report::Count value = 0)  // NOLINT(runtime/explicit)
      : value_(value) {}
  constexpr ExactCount(std::int64_t value)  // NOLINT(runtime/explicit)
      : value_(value) {}
  constexpr ExactCount(int value)  // NOLINT(runtime/explicit)
      : value_(value) {}

  static ExactCount Overflowed();

  bool overflowed() const { return overflowed_; }
  // Meaningful only when !overflowed().
  report::Count value() const { return value_; }
  // False for an overflowed count, which is never zero.
  bool IsZero() const { return !overflowed_ && value_ == 0; }

  friend ExactCount operator+(ExactCount a, ExactCount b);
  friend ExactCount operator-(ExactCount a, ExactCount b);
  friend ExactCount operator*(ExactCount a, ExactCount b);
  ExactCount& operator+=(ExactCount other) { return *this = *this + other; }

  // Python's `a // b` and `a % b` (rounding toward negative infinity). The
  // divisor must not be zero: callers raise ZeroDivisionError first, with
  // the message of the Python operation they reproduce.
  friend ExactCount FloorDiv(ExactCount a, ExactCount b);
  friend ExactCount FloorMod(ExactCount a, ExactCount b);

 private:
  report::Count value_ = 0;
  bool overflowed_ = false;
};

ExactCount FloorDiv(ExactCount a, ExactCount b);
ExactCount FloorMod(ExactCount a, ExactCount b);

// math.prod: 1 for an empty sequence.
ExactCount ExactProduct(absl::Span<const std::int64_t> values);

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_EXACT_COUNT_H_
