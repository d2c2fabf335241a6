#include "torchscan_dispatch/peak_memory.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ones.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <stdexcept>

#include "gtest/gtest.h"

namespace torchscan {
namespace {

constexpr std::int64_t kFloat = 4;  // bytes per float32 element

bool ReporterInstalled() {
  return c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) !=
         nullptr;
}

// The default CPU allocator reports exactly the requested bytes (it aligns
// addresses, not sizes), so the expectations are exact.
TEST(PeakMemoryTest, CpuPeakIsTheMostBytesAliveAtOnce) {
  int calls = 0;
  absl::StatusOr<PeakMemory> memory = MeasurePeakMemory(
      [&] {
        ++calls;
        at::Tensor a = at::empty({1000}, at::kFloat);  // 4000 bytes
        at::Tensor b = at::empty({500}, at::kFloat);   // 2000 bytes
        a.reset();                                     // 2000 alive
        at::Tensor c = at::empty({750}, at::kFloat);   // 5000 alive
      },
      c10::Device("cpu"));
  ASSERT_TRUE(memory.ok()) << memory.status();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(memory->device, "cpu");
  EXPECT_EQ(memory->metric, "pytorch_tensor_bytes");
  EXPECT_EQ(memory->baseline_bytes, 0);
  EXPECT_EQ(memory->peak_bytes, 1500 * kFloat);
  EXPECT_EQ(memory->delta_bytes, 1500 * kFloat);
  EXPECT_FALSE(memory->allocated_peak_bytes.has_value());
  EXPECT_FALSE(ReporterInstalled());
}

TEST(PeakMemoryTest, FreeingBeforeAllocatingShowsThePeakNotTheSum) {
  absl::StatusOr<PeakMemory> memory = MeasurePeakMemory(
      [] {
        for (int i = 0; i < 10; ++i) at::empty({256}, at::kFloat);
      },
      c10::Device("cpu"));
  ASSERT_TRUE(memory.ok());
  EXPECT_EQ(memory->peak_bytes, 256 * kFloat);
}

TEST(PeakMemoryTest, TensorsAllocatedBeforeTheCallAreNotCounted) {
  at::Tensor existing = at::ones({10000}, at::kFloat);
  absl::StatusOr<PeakMemory> memory = MeasurePeakMemory(
      [&] { at::Tensor sum = existing.sum(); }, c10::Device("cpu"));
  ASSERT_TRUE(memory.ok());
  EXPECT_EQ(memory->peak_bytes, kFloat);  // the 0-d result
}

TEST(PeakMemoryTest, NestedMeasurementsBothSeeTheInnerAllocations) {
  absl::StatusOr<PeakMemory> inner;
  absl::StatusOr<PeakMemory> outer = MeasurePeakMemory(
      [&] {
        at::Tensor a = at::empty({100}, at::kFloat);
        inner = MeasurePeakMemory([] { at::empty({300}, at::kFloat); },
                                  c10::Device("cpu"));
      },
      c10::Device("cpu"));
  ASSERT_TRUE(outer.ok());
  ASSERT_TRUE(inner.ok());
  EXPECT_EQ(inner->peak_bytes, 300 * kFloat);
  EXPECT_EQ(outer->peak_bytes, 400 * kFloat);
}

TEST(PeakMemoryTest, WorkloadExceptionPropagatesAndNoReporterIsLeft) {
  int calls = 0;
  EXPECT_THROW(MeasurePeakMemory(
                   [&] {
                     ++calls;
                     throw std::logic_error("workload failed");
                   },
                   c10::Device("cpu"))
                   .IgnoreError(),
               std::logic_error);
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(ReporterInstalled());
}

TEST(PeakMemoryTest, UnavailableAndUnsupportedDevicesFailBeforeTheWorkload) {
  int calls = 0;
  auto workload = [&] { ++calls; };
  absl::StatusOr<PeakMemory> cuda =
      MeasurePeakMemory(workload, c10::Device("cuda:0"));
  ASSERT_FALSE(cuda.ok());
  EXPECT_EQ(cuda.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(cuda.status().message().find(
                "Requested CUDA device 'cuda:0' is unavailable"),
            std::string::npos)
      << cuda.status();
  absl::StatusOr<PeakMemory> meta =
      MeasurePeakMemory(workload, c10::Device("meta"));
  ASSERT_FALSE(meta.ok());
  EXPECT_EQ(meta.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(
      meta.status().message().find(
          "Peak memory measurement is not implemented for 'meta' in PyTorch"),
      std::string::npos);
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace torchscan
