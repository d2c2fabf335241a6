// Checked sums of counts whose overflow error names what overflowed: a
// renderer adds report numbers that the parser accepted one by one but that
// need not fit a Count together.

#ifndef TORCHSCAN_REPORT_RENDER_COUNT_SUM_H_
#define TORCHSCAN_REPORT_RENDER_COUNT_SUM_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "report/count.h"

namespace torchscan::report::render {

// sum += value, or OutOfRange "<what> overflows a 128-bit integer" (sum
// unchanged).
inline absl::Status AddCount(Count& sum, Count value, absl::string_view what) {
  std::optional<Count> next = CheckedAdd(sum, value);
  if (!next) {
    return absl::OutOfRangeError(
        absl::StrCat(what, " overflows a 128-bit integer"));
  }
  sum = *next;
  return absl::OkStatus();
}

inline absl::StatusOr<Count> SumCounts(Count a, Count b,
                                       absl::string_view what) {
  if (absl::Status status = AddCount(a, b, what); !status.ok()) return status;
  return a;
}

}  // namespace torchscan::report::render

#endif  // TORCHSCAN_REPORT_RENDER_COUNT_SUM_H_
