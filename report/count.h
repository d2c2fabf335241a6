// Exact integer counts (FLOPs, calls, elements, bytes).
//
// FLOP totals of long training runs pass 2^63 (one H100-day is ~3e19), so
// counts are 128-bit and every addition is checked: an overflow is an error,
// never a wrapped number.

#ifndef TORCHSCAN_REPORT_COUNT_H_
#define TORCHSCAN_REPORT_COUNT_H_

#include <optional>
#include <string>

#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace torchscan::report {

using Count = absl::int128;

// a + b, or nullopt when the exact result does not fit in a Count.
std::optional<Count> CheckedAdd(Count a, Count b);
// sum += value, or an OutOfRange error "<what> overflows a 128-bit integer"
// (and sum unchanged) when the exact result does not fit in a Count.
absl::Status AddCount(Count& sum, Count value, absl::string_view what);
// a - b, or nullopt when the exact result does not fit in a Count.
std::optional<Count> CheckedSubtract(Count a, Count b);
// a * b, or nullopt when the exact result does not fit in a Count.
std::optional<Count> CheckedMultiply(Count a, Count b);

std::string CountToString(Count value);
// Parses an optionally negative decimal integer; nullopt if it is not one or
// does not fit in a Count.
std::optional<Count> ParseCount(absl::string_view text);

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_COUNT_H_
