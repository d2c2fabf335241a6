// One training step measured for MFU, in C++ (Python: torchscan_dispatch.
// StepMeter; docs/distributed.md, "MFU").
//
//   absl::StatusOr<torchscan::StepMeasurement> step =
//       torchscan::MeasureStep([&] { TrainStep(); });
//   std::optional<double> mfu = step->Mfu(989.5e12);  // H100 SXM, bf16
//
// The step runs once under a FlopCountingGuard (no module attribution: the
// cheap path), timed with a steady clock. Exceptions from the step
// propagate unchanged. For device work, synchronize inside the step (or
// pass `synchronize`) so that the time covers its kernels.

#ifndef TORCHSCAN_DISPATCH_STEP_METER_H_
#define TORCHSCAN_DISPATCH_STEP_METER_H_

#include <functional>
#include <optional>

#include "absl/status/statusor.h"
#include "report/communication.h"
#include "report/count.h"
#include "report/flop_report.h"
#include "torchscan_dispatch/counting_options.h"

namespace torchscan {

struct StepMeasurement {
  report::FlopReport flops;
  report::CommunicationReport communication;
  double seconds = 0;

  // The step's known FLOPs (a lower bound unless flops.total is complete).
  report::Count KnownFlops() const;
  // FLOPs per second of wall time.
  double AchievedFlopsPerSecond() const;
  // Achieved / `peak_flops_per_second`; nullopt without a positive peak or
  // a measurable time.
  std::optional<double> Mfu(double peak_flops_per_second) const;
};

// Runs `step` once, then `synchronize` (if set) before the clock stops.
absl::StatusOr<StepMeasurement> MeasureStep(
    const std::function<void()>& step,
    const std::function<void()>& synchronize = nullptr,
    CountingOptions options = {});

}  // namespace torchscan

#endif  // TORCHSCAN_DISPATCH_STEP_METER_H_
