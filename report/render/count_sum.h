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
#include "base/status_macros.h"
#include "report/count.h"

namespace torchscan::report::render {

// a + b, or OutOfRange "<what> overflows a 128-bit integer" (AddCount).
inline absl::StatusOr<Count> SumCounts(Count a, Count b,
                                       absl::string_view what) {
  TS_RETURN_IF_ERROR(AddCount(a, b, what));
  return a;
}

}  // namespace torchscan::report::render

#endif  // TORCHSCAN_REPORT_RENDER_COUNT_SUM_H_
