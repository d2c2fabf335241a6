#include "torchscan_dispatch/step_meter.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/randn.h>

#include <stdexcept>

#include "gtest/gtest.h"

namespace torchscan {
namespace {

TEST(StepMeterTest, CountsTheStepAndTimesIt) {
  at::Tensor a = at::randn({8, 16});
  at::Tensor b = at::randn({16, 4});
  bool synchronized = false;
  absl::StatusOr<StepMeasurement> step =
      MeasureStep([&] { at::mm(a, b); }, [&] { synchronized = true; });
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(report::Count(2 * 8 * 16 * 4), step->KnownFlops());
  EXPECT_TRUE(synchronized);
  EXPECT_GT(step->seconds, 0);
  EXPECT_TRUE(step->communication.empty());
  ASSERT_TRUE(step->Mfu(1e12).has_value());
  EXPECT_DOUBLE_EQ(step->AchievedFlopsPerSecond() / 1e12, *step->Mfu(1e12));
}

TEST(StepMeterTest, NoMfuWithoutAPeak) {
  absl::StatusOr<StepMeasurement> step = MeasureStep([] {});
  ASSERT_TRUE(step.ok());
  EXPECT_FALSE(step->Mfu(0).has_value());
}

TEST(StepMeterTest, ExceptionsPropagate) {
  EXPECT_THROW(MeasureStep([] {
                 throw std::runtime_error("step failed");
               }).IgnoreError(),
               std::runtime_error);
  // Counting is off again: a later step counts only itself.
  absl::StatusOr<StepMeasurement> later = MeasureStep([] {});
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(report::Count(0), later->KnownFlops());
}

}  // namespace
}  // namespace torchscan
