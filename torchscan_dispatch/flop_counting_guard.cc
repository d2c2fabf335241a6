#include "torchscan_dispatch/flop_counting_guard.h"

namespace torchscan {

absl::StatusOr<report::FlopReport> FlopCountingGuard::Report() const {
  return counting_.session().BuildReport();
}

report::CommunicationReport FlopCountingGuard::Communication() const {
  return counting_.session().Communication();
}

absl::StatusOr<report::FlopReport> MeasureFlops(
    const std::function<void()>& workload, CountingOptions options) {
  FlopCountingGuard guard(std::move(options));
  workload();
  return guard.Report();
}

}  // namespace torchscan
