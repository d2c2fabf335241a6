#include "torchscan_dispatch/counting_session.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/sin.h>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "report/metric_result.h"
#include "report/precision.h"
#include "torchscan_dispatch/active_counting.h"
#include "torchscan_dispatch/operator_info.h"
#include "torchscan_dispatch/thread_state.h"

namespace torchscan::dispatch {
namespace {

using report::Count;
using report::MetricResult;

// One layer call's operator FLOPs: FlopCounterMode's convention, per call.
const report::MetricKind kLayerCallKind{
    "FLOPs", "module_call", "torch.utils.flop_counter.FlopCounterMode"};

TEST(CountingSessionTest, LayerCallFlopsAreKeyedByLayerIndexAndInclusive) {
  ActiveCounting counting;
  CountingSession& session = counting.session();
  session.EnterLayer("0", "net");
  at::mm(at::ones({2, 3}), at::ones({3, 4}));  // 2*2*3*4 = 48
  session.EnterLayer("1", "net.fc");
  at::mm(at::ones({1, 2}), at::ones({2, 5}));  // 2*1*2*5 = 20
  session.ExitLayer("1", "net.fc");
  // A module without a layer record: its work belongs to layer 0 alone.
  session.EnterLayer("", "net.act");
  at::mm(at::ones({1, 1}), at::ones({1, 3}));  // 2*1*1*3 = 6
  session.ExitLayer("", "net.act");
  // An operator without a formula leaves layers 12 and 0 partial.
  session.EnterLayer("12", "net.out");
  at::sin(at::ones({2}));
  session.ExitLayer("12", "net.out");
  session.ExitLayer("0", "net");
  counting.Stop();

  absl::StatusOr<std::map<std::size_t, LayerCallFlops>> flops =
      session.BuildLayerCallFlops();
  ASSERT_TRUE(flops.ok()) << flops.status();
  const std::map<std::size_t, LayerCallFlops> expected = {
      {0,
       {.total = MetricResult::Partial(Count(74), kLayerCallKind),
        .by_operator = {{"aten.mm", Count(74)}}}},
      {1,
       {.total = MetricResult::Complete(Count(20), kLayerCallKind),
        .by_operator = {{"aten.mm", Count(20)}}}},
      {12,
       {.total = MetricResult::Partial(Count(0), kLayerCallKind),
        .by_operator = {}}},
  };
  EXPECT_EQ(expected, *flops);
}

// A module called inside itself (NOTE [Open layers by label id]): its label
// stays in the module scope until its outer call ends, and each layer call
// keeps its own FLOPs.
TEST(CountingSessionTest, AModuleCalledInsideItselfStaysOpenUntilItsOuterCall) {
  ActiveCounting counting;
  CountingSession& session = counting.session();
  session.EnterLayer("0", "net.block");
  session.EnterLayer("1", "net.block");
  at::mm(at::ones({1, 2}), at::ones({2, 3}));  // 2*1*2*3 = 12
  session.ExitLayer("1", "net.block");
  EXPECT_EQ((std::vector<std::string>{"net.block"}),
            session.ModuleScopeLabels(session.CurrentModuleScope()));
  at::mm(at::ones({2, 2}), at::ones({2, 3}));  // 2*2*2*3 = 24
  session.ExitLayer("0", "net.block");
  EXPECT_EQ(std::vector<std::string>{},
            session.ModuleScopeLabels(session.CurrentModuleScope()));
  // Leaving a call that is not open changes nothing.
  session.ExitLayer("7", "net.other");
  counting.Stop();

  absl::StatusOr<std::map<std::size_t, LayerCallFlops>> flops =
      session.BuildLayerCallFlops();
  ASSERT_TRUE(flops.ok()) << flops.status();
  const std::map<std::size_t, LayerCallFlops> expected = {
      {0,
       {.total = MetricResult::Complete(Count(36), kLayerCallKind),
        .by_operator = {{"aten.mm", Count(36)}}}},
      {1,
       {.total = MetricResult::Complete(Count(12), kLayerCallKind),
        .by_operator = {{"aten.mm", Count(12)}}}},
  };
  EXPECT_EQ(expected, *flops);
}

TEST(CountingSessionTest, ACallThatEndsOutOfOrderLeavesTheOthersOpen) {
  ActiveCounting counting;
  CountingSession& session = counting.session();
  session.EnterLayer("0", "net.a");
  session.EnterLayer("1", "net.b");
  at::mm(at::ones({1, 2}), at::ones({2, 3}));  // 2*1*2*3 = 12
  session.EnterLayer("2", "net.c");
  session.ExitLayer("1", "net.b");  // not the innermost call
  EXPECT_EQ((std::vector<std::string>{"net.a", "net.c"}),
            session.ModuleScopeLabels(session.CurrentModuleScope()));
  at::mm(at::ones({2, 2}), at::ones({2, 3}));  // 2*2*2*3 = 24
  session.ExitLayer("2", "net.c");
  EXPECT_EQ((std::vector<std::string>{"net.a"}),
            session.ModuleScopeLabels(session.CurrentModuleScope()));
  at::mm(at::ones({3, 2}), at::ones({2, 3}));  // 2*3*2*3 = 36
  session.ExitLayer("0", "net.a");
  EXPECT_EQ(std::vector<std::string>{},
            session.ModuleScopeLabels(session.CurrentModuleScope()));
  counting.Stop();

  absl::StatusOr<std::map<std::size_t, LayerCallFlops>> flops =
      session.BuildLayerCallFlops();
  ASSERT_TRUE(flops.ok()) << flops.status();
  const std::map<std::size_t, LayerCallFlops> expected = {
      {0,
       {.total = MetricResult::Complete(Count(72), kLayerCallKind),
        .by_operator = {{"aten.mm", Count(72)}}}},
      {1,
       {.total = MetricResult::Complete(Count(12), kLayerCallKind),
        .by_operator = {{"aten.mm", Count(12)}}}},
      {2,
       {.total = MetricResult::Complete(Count(24), kLayerCallKind),
        .by_operator = {{"aten.mm", Count(24)}}}},
  };
  EXPECT_EQ(expected, *flops);
}

TEST(CountingSessionTest, LayerCallFlopsRefuseALabelThatIsNoIndex) {
  ActiveCounting counting;
  CountingSession& session = counting.session();
  session.EnterLayer("encoder", "net.encoder");
  at::mm(at::ones({2, 3}), at::ones({3, 4}));
  session.ExitLayer("encoder", "net.encoder");
  counting.Stop();

  absl::StatusOr<std::map<std::size_t, LayerCallFlops>> flops =
      session.BuildLayerCallFlops();
  EXPECT_EQ(absl::InvalidArgumentError(
                "layer call label 'encoder' is not a layer index"),
            flops.status());
}

// Counted calls are kept without a lock (NOTE [Counted calls without a
// lock]); each precision keeps its own slot of the operator's sum.
TEST(CountingSessionTest, CountedCallsAddUpPerPrecision) {
  CountingSession session;
  SessionSlot slot;
  const OperatorInfo& conv = *OperatorInfoForName("aten::convolution", "");
  session.RecordCounted(conv, 5, report::Precision::kFp32, slot);
  session.RecordCounted(conv, 7, report::Precision::kBf16, slot);
  session.RecordCounted(conv, 11, report::Precision::kFp32, slot);

  absl::StatusOr<report::FlopReport> flop_report = session.BuildReport();
  ASSERT_TRUE(flop_report.ok()) << flop_report.status();
  const std::map<std::string, std::map<std::string, Count>> expected = {
      {conv.report_name, {{"bf16", Count(7)}, {"fp32", Count(16)}}}};
  EXPECT_EQ(expected, flop_report->by_operator_precision);
  EXPECT_EQ(MetricResult::Complete(Count(23), report::OperatorFlopsKind()),
            flop_report->total);
}

// A call whose FLOPs would take the operator's sum past 128 bits is a failed
// call: the sum keeps the calls before it.
TEST(CountingSessionTest, ACountedCallThatOverflowsTheSumIsAFailedCall) {
  CountingSession session;
  SessionSlot slot;
  const OperatorInfo& conv = *OperatorInfoForName("aten::convolution", "");
  const Count half = Count(1) << 126;
  session.RecordCounted(conv, half, report::Precision::kFp32, slot);
  session.RecordCounted(conv, half, report::Precision::kFp32, slot);

  absl::StatusOr<report::FlopReport> flop_report = session.BuildReport();
  ASSERT_TRUE(flop_report.ok()) << flop_report.status();
  const std::map<std::string, Count> by_operator = {{conv.report_name, half}};
  EXPECT_EQ(by_operator, flop_report->by_operator);
  std::vector<std::string> messages;
  for (const report::Diagnostic& diagnostic : flop_report->diagnostics) {
    messages.push_back(diagnostic.message);
  }
  EXPECT_THAT(messages,
              testing::Contains(conv.report_name +
                                " was observed 2 time(s), but its FLOP "
                                "formula failed for 1 of them: the FLOP sum "
                                "overflows 128 bits"));
}

}  // namespace
}  // namespace torchscan::dispatch
