// Helpers the guard tests share: the hand-computed matmul convention and
// reading a guard's report.

#ifndef TORCHSCAN_DISPATCH_TESTING_GUARD_REPORTS_H_
#define TORCHSCAN_DISPATCH_TESTING_GUARD_REPORTS_H_

#include <string>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "report/flop_report.h"
#include "torchscan_dispatch/flop_counting_guard.h"

namespace torchscan::testing {

// Hand computation: [m,k] @ [k,n] costs 2*m*k*n FLOPs (FlopCounterMode's
// mm/addmm/bmm convention; addmm's bias add is not counted).
inline report::Count MatmulFlops(report::Count m, report::Count k,
                                 report::Count n) {
  return 2 * m * k * n;
}

// The guard's report so far; a failure to build it fails the test.
inline report::FlopReport ReportOf(const FlopCountingGuard& guard) {
  absl::StatusOr<report::FlopReport> report = guard.Report();
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *report : report::FlopReport{};
}

// The FLOPs counted for `op` ("aten.mm"), 0 when it was not counted.
inline report::Count FlopsOf(const report::FlopReport& report,
                             const std::string& op) {
  auto it = report.by_operator.find(op);
  return it == report.by_operator.end() ? 0 : it->second;
}

}  // namespace torchscan::testing

#endif  // TORCHSCAN_DISPATCH_TESTING_GUARD_REPORTS_H_
