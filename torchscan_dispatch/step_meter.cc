#include "torchscan_dispatch/step_meter.h"

#include <chrono>
#include <utility>
#include <variant>

#include "base/status_macros.h"
#include "torchscan_dispatch/flop_counting_guard.h"

namespace torchscan {

report::Count StepMeasurement::KnownFlops() const {
  const std::optional<report::MetricValue>& known = flops.total.known_value();
  if (!known || !std::holds_alternative<report::Count>(*known)) return 0;
  return std::get<report::Count>(*known);
}

double StepMeasurement::AchievedFlopsPerSecond() const {
  return seconds > 0 ? static_cast<double>(KnownFlops()) / seconds : 0.0;
}

std::optional<double> StepMeasurement::Mfu(double peak_flops_per_second) const {
  if (!(peak_flops_per_second > 0) || !(seconds > 0)) return std::nullopt;
  return AchievedFlopsPerSecond() / peak_flops_per_second;
}

absl::StatusOr<StepMeasurement> MeasureStep(
    const std::function<void()>& step, const std::function<void()>& synchronize,
    CountingOptions options) {
  StepMeasurement measurement;
  FlopCountingGuard guard(std::move(options));
  const auto start = std::chrono::steady_clock::now();
  step();
  if (synchronize) synchronize();
  measurement.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  TS_ASSIGN_OR_RETURN(measurement.flops, guard.Report());
  measurement.communication = guard.Communication();
  return measurement;
}

}  // namespace torchscan
