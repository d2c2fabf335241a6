// Work on other threads: threads without a guard of their own make a
// guard's report partial and are named (unseen_threads.h); work handed to
// them through FlopCountingGuard::Follow is counted. One behaviour per test.

#include <ATen/ThreadLocalState.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/randn.h>
#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "report/diagnostic.h"
#include "report/metric_result.h"
#include "torchscan_dispatch/dispatch_key.h"
#include "torchscan_dispatch/flop_counting_guard.h"
#include "torchscan_dispatch/operator_info.h"
#include "torchscan_dispatch/testing/guard_reports.h"
#include "torchscan_dispatch/unseen_threads.h"

namespace torchscan {
namespace {

using report::Count;
using report::MetricStatus;
using testing::MatmulFlops;
using testing::ReportOf;

std::int64_t NativeId() { return static_cast<std::int64_t>(gettid()); }

// Runs `work` on a new thread and waits for it; returns the thread's id.
template <typename Work>
std::int64_t RunOnThread(Work work) {
  std::int64_t id = 0;
  std::thread thread([&] {
    id = NativeId();
    work();
  });
  thread.join();
  return id;
}

TEST(ThreadsTest, AnotherThreadsMatmulMakesTheReportPartial) {
  const at::Tensor a = at::randn({4, 8});
  const at::Tensor b = at::randn({8, 2});
  FlopCountingGuard guard;
  at::mm(a, b);
  RunOnThread([&] { at::mm(a, b); });
  const report::FlopReport report = ReportOf(guard);
  EXPECT_EQ(MetricStatus::kPartial, report.total.status());
  EXPECT_EQ(report::MetricValue(MatmulFlops(4, 8, 2)),
            *report.total.known_value());
}

TEST(ThreadsTest, TheDiagnosticNamesTheThreadAndTheOperator) {
  const at::Tensor a = at::randn({4, 8});
  const at::Tensor b = at::randn({8, 2});
  FlopCountingGuard guard;
  const std::int64_t id = RunOnThread([&] {
    at::mm(a, b);
    at::mm(a, b);
  });
  const report::FlopReport report = ReportOf(guard);
  ASSERT_EQ(1u, report.diagnostics.size());
  const report::Diagnostic& diagnostic = report.diagnostics[0];
  EXPECT_EQ(std::string(report::kUnseenWork), diagnostic.code);
  EXPECT_EQ("aten.mm", diagnostic.subject);
  EXPECT_NE(std::string::npos,
            diagnostic.message.find(absl::StrCat("2 time(s) on thread ", id)))
      << diagnostic.message;
}

TEST(ThreadsTest, AThreadRunningOnlyViewsLeavesTheReportComplete) {
  const at::Tensor a = at::randn({4, 8});
  FlopCountingGuard guard;
  RunOnThread([&] {
    a.view({8, 4});
    a.t();
    a.transpose(0, 1);
  });
  EXPECT_EQ(MetricStatus::kComplete, ReportOf(guard).total.status());
}

TEST(ThreadsTest, AThreadWithItsOwnGuardIsNotUnseen) {
  const at::Tensor a = at::randn({4, 8});
  const at::Tensor b = at::randn({8, 2});
  FlopCountingGuard guard;
  RunOnThread([&] {
    FlopCountingGuard own;
    at::mm(a, b);
  });
  EXPECT_EQ(MetricStatus::kComplete, ReportOf(guard).total.status());
}

TEST(ThreadsTest, FollowCountsTheTaskIntoTheGuard) {
  const at::Tensor a = at::randn({4, 8});
  const at::Tensor b = at::randn({8, 2});
  FlopCountingGuard guard;
  at::mm(a, b);
  RunOnThread(guard.Follow([&] { at::mm(a, b); }));
  const report::FlopReport report = ReportOf(guard);
  EXPECT_EQ(MetricStatus::kComplete, report.total.status());
  EXPECT_EQ(report::MetricValue(2 * MatmulFlops(4, 8, 2)),
            *report.total.value());
}

TEST(ThreadsTest, ThreadLocalStateCapturedUnderTheGuardCountsIntoIt) {
  const at::Tensor a = at::randn({4, 8});
  const at::Tensor b = at::randn({8, 2});
  FlopCountingGuard guard;
  const at::ThreadLocalState state;
  RunOnThread([&] {
    at::ThreadLocalStateGuard restore(state);
    at::mm(a, b);
  });
  const report::FlopReport report = ReportOf(guard);
  EXPECT_EQ(MetricStatus::kComplete, report.total.status());
  EXPECT_EQ(report::MetricValue(MatmulFlops(4, 8, 2)), *report.total.value());
}

TEST(ThreadsTest, FollowRestoresTheThreadWhenTheTaskThrows) {
  FlopCountingGuard guard;
  bool counting_after = true;
  RunOnThread([&] {
    std::function<void()> task =
        guard.Follow([] { throw std::runtime_error("task failed"); });
    EXPECT_THROW(task(), std::runtime_error);
    counting_after =
        c10::impl::tls_is_dispatch_key_included(dispatch::kCountingKey);
  });
  EXPECT_FALSE(counting_after);
}

TEST(ThreadsTest, NoCallbackIsInstalledOnceTheLastGuardEnds) {
  {
    FlopCountingGuard outer;
    FlopCountingGuard inner;
    EXPECT_EQ(2, dispatch::OpenUnseenThreadWatches());
  }
  EXPECT_EQ(0, dispatch::OpenUnseenThreadWatches());
  EXPECT_FALSE(at::hasGlobalCallbacks());
}

TEST(ThreadsTest, WorkBeforeTheGuardIsNotReported) {
  const at::Tensor a = at::randn({4, 8});
  const at::Tensor b = at::randn({8, 2});
  {
    FlopCountingGuard earlier;
    RunOnThread([&] { at::mm(a, b); });
    EXPECT_EQ(MetricStatus::kPartial, ReportOf(earlier).total.status());
  }
  FlopCountingGuard guard;
  EXPECT_EQ(MetricStatus::kComplete, ReportOf(guard).total.status());
}

TEST(ThreadsTest, ConcurrentUnseenThreadsAreCountedCallForCall) {
  constexpr int kThreads = 4;
  constexpr int kCalls = 2000;
  const at::Tensor a = at::randn({4, 8});
  const at::Tensor b = at::randn({8, 2});
  const std::uint32_t mm = dispatch::OperatorInfoForName("aten::mm", "")->id;
  dispatch::UnseenThreadWatch watch;
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();
      for (int i = 0; i < kCalls; ++i) at::mm(a, b);
    });
  }
  for (std::thread& thread : threads) thread.join();
  const std::vector<dispatch::UnseenThreadWork> work = watch.WorkSince();
  ASSERT_EQ(static_cast<std::size_t>(kThreads), work.size());
  for (const dispatch::UnseenThreadWork& thread : work) {
    EXPECT_EQ((std::map<std::uint32_t, std::int64_t>{{mm, kCalls}}),
              thread.calls)
        << thread.native_id;
  }
}

}  // namespace
}  // namespace torchscan
