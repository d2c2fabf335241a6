// Another library already registered a fallback on the counting key.
//
// This binary links testdata/libconflicting_fallback.so as a shared library
// (DT_NEEDED), so the dynamic loader runs that library's registration before
// the binary's own static initializers, where the plugin's registration runs:
// the plugin finds the key taken, as it would behind any other tool loaded
// first. Counting must then refuse to start with a clear c10::Error naming the
// key, change nothing on the thread, and never call the workload.

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/full.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/ones.h>

#include <string>

#include "gtest/gtest.h"
#include "torchscan_dispatch/active_counting.h"
#include "torchscan_dispatch/dispatch_key.h"
#include "torchscan_dispatch/fallback_registration.h"
#include "torchscan_dispatch/flop_counting_guard.h"
#include "torchscan_dispatch/testing/thread_snapshot.h"

namespace torchscan {
namespace {

using testing::ThreadSnapshot;

constexpr char kExpected[] =
    "torchscan: another library already registered a fallback on dispatch key "
    "TESTING_ONLY_GenericMode";

TEST(FallbackConflictTest, TheConflictIsRecordedAtLoadTime) {
  ASSERT_TRUE(c10::Dispatcher::singleton().hasBackendFallbackForDispatchKey(
      dispatch::kCountingKey));
  const absl::Status status = dispatch::CountingFallbackStatus();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("TESTING_ONLY_GenericMode"),
            std::string::npos)
      << status;
}

TEST(FallbackConflictTest, StartingToCountThrowsAClearErrorAndChangesNothing) {
  const ThreadSnapshot before = ThreadSnapshot::Capture();
  try {
    dispatch::ActiveCounting counting;
    ADD_FAILURE() << "ActiveCounting started despite the conflict";
  } catch (const c10::Error& error) {
    const std::string message = error.what_without_backtrace();
    EXPECT_EQ(message.rfind(kExpected, 0), 0u) << message;
    EXPECT_NE(message.find("operator counting is unavailable in this process"),
              std::string::npos)
        << message;
  }
  EXPECT_EQ(ThreadSnapshot::Capture(), before);

  int calls = 0;
  EXPECT_THROW(MeasureFlops([&] { ++calls; }).IgnoreError(), c10::Error);
  EXPECT_THROW(FlopCountingGuard guard, c10::Error);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(ThreadSnapshot::Capture(), before);

  // PyTorch itself is unaffected: the other library's fallback is a
  // fallthrough and the key is never switched on.
  const at::Tensor a = at::ones({2, 3});
  EXPECT_TRUE(at::equal(at::mm(a, a.t()), at::full({2, 2}, 3.0)));
}

}  // namespace
}  // namespace torchscan
