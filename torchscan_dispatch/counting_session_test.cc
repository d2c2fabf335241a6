#include "torchscan_dispatch/counting_session.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/sin.h>

#include <cstddef>
#include <map>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "report/analysis_report.h"
#include "report/metric_result.h"
#include "torchscan_dispatch/active_counting.h"

namespace torchscan::dispatch {
namespace {

using report::Count;
using report::LayerOperatorFlops;
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

  absl::StatusOr<std::map<std::size_t, LayerOperatorFlops>> flops =
      session.BuildLayerCallFlops();
  ASSERT_TRUE(flops.ok()) << flops.status();
  const std::map<std::size_t, LayerOperatorFlops> expected = {
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

TEST(CountingSessionTest, LayerCallFlopsRefuseALabelThatIsNoIndex) {
  ActiveCounting counting;
  CountingSession& session = counting.session();
  session.EnterLayer("encoder", "net.encoder");
  at::mm(at::ones({2, 3}), at::ones({3, 4}));
  session.ExitLayer("encoder", "net.encoder");
  counting.Stop();

  absl::StatusOr<std::map<std::size_t, LayerOperatorFlops>> flops =
      session.BuildLayerCallFlops();
  EXPECT_EQ(absl::InvalidArgumentError(
                "layer call label 'encoder' is not a layer index"),
            flops.status());
}

}  // namespace
}  // namespace torchscan::dispatch
