#include "report/count.h"

#include <cstdint>
#include <string>

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

// NOTE [Counts written without a stream]
// Every count in a report becomes a string (the JSON and Python forms keep
// 128-bit values exactly), and a report has a few per operator. Writing one
// through std::ostringstream built and tore down a stream and its locale
// each time: 5,600 instructions, most of a StepMeter step's report work per
// distinct operator. Counts that fit in 64 bits (all real ones) take
// absl::StrCat; larger ones are split into 19-digit chunks.
std::string CountToString(Count value) {
  const bool negative = value < 0;
  // Negating in unsigned arithmetic gives the magnitude of the most
  // negative value too.
  absl::uint128 magnitude = static_cast<absl::uint128>(value);
  if (negative) magnitude = -magnitude;
  if (absl::Uint128High64(magnitude) == 0) {
    return absl::StrCat(negative ? "-" : "", absl::Uint128Low64(magnitude));
  }
  constexpr std::uint64_t kChunk = 10000000000000000000ULL;  // 10^19
  std::string low;
  while (absl::Uint128High64(magnitude) != 0 || low.empty()) {
    const std::string digits =
        absl::StrCat(absl::Uint128Low64(magnitude % kChunk));
    low = std::string(19 - digits.size(), '0') + digits + low;
    magnitude /= kChunk;
  }
  return absl::StrCat(negative ? "-" : "", absl::Uint128Low64(magnitude), low);
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
