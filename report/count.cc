#include "report/count.h"

#include <sstream>

#include "absl/strings/str_cat.h"

namespace torchscan::report {

std::optional<Count> CheckedAdd(Count a, Count b) {
  __int128 result;
  if (__builtin_add_overflow(static_cast<__int128>(a), static_cast<__int128>(b),
                             &result)) {
    return std::nullopt;
  }
  return Count(result);
}

absl::Status AddCount(Count& sum, Count value, absl::string_view what) {
  std::optional<Count> next = CheckedAdd(sum, value);
  if (!next) {
    return absl::OutOfRangeError(
        absl::StrCat(what, " overflows a 128-bit integer"));
  }
  sum = *next;
  return absl::OkStatus();
}

std::optional<Count> CheckedSubtract(Count a, Count b) {
  __int128 result;
  if (__builtin_sub_overflow(static_cast<__int128>(a), static_cast<__int128>(b),
                             &result)) {
    return std::nullopt;
  }
  return Count(result);
}

std::optional<Count> CheckedMultiply(Count a, Count b) {
  __int128 result;
  if (__builtin_mul_overflow(static_cast<__int128>(a), static_cast<__int128>(b),
                             &result)) {
    return std::nullopt;
  }
  return Count(result);
}

std::string CountToString(Count value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

std::optional<Count> ParseCount(absl::string_view text) {
  bool negative = false;
  if (!text.empty() && text.front() == '-') {
    negative = true;
    text.remove_prefix(1);
  }
  if (text.empty()) return std::nullopt;
  Count magnitude = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    std::optional<Count> scaled = CheckedMultiply(magnitude, 10);
    if (!scaled) return std::nullopt;
    // Accumulating negatively reaches the most negative value too.
    std::optional<Count> next =
        CheckedAdd(*scaled, negative ? -Count(c - '0') : Count(c - '0'));
    if (!next) return std::nullopt;
    magnitude = *next;
  }
  return magnitude;
}

}  // namespace torchscan::report
