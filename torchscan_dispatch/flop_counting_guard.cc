#include "torchscan_dispatch/flop_counting_guard.h"

#include <memory>
#include <utility>

namespace torchscan {

absl::StatusOr<report::FlopReport> FlopCountingGuard::Report() const {
  counting_.UpdateUnseenThreadWork();
  return counting_.session().BuildReport();
}

std::function<void()> FlopCountingGuard::Follow(
    std::function<void()> task) const {
  std::shared_ptr<dispatch::CountingSession> session =
      counting_.session().shared_from_this();
  return [session = std::move(session), task = std::move(task)] {
    dispatch::JoinedCounting joined(session);
    task();
  };
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
