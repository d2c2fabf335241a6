#include "torchscan_dispatch/flop_counting_guard.h"

#include <ATen/Parallel.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
// NOTE: torch::nn::Linear brings <torch/types.h> and with it <ATen/ATen.h>,
// so this test cannot take the per-operator route (NOTE [Per-operator
// headers] in tools/torch_defs.bzl); it includes the one
// module it uses instead of all of <torch/torch.h>.
#include <torch/nn/modules/linear.h>

#include <future>
#include <stdexcept>
#include <thread>

#include "gtest/gtest.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/dispatch_key.h"
#include "torchscan_dispatch/testing/guard_reports.h"

namespace torchscan {
namespace {

using report::Count;
using report::MetricStatus;
using testing::MatmulFlops;
using testing::ReportOf;

bool CountingIsOff() {
  return !c10::impl::tls_is_dispatch_key_included(dispatch::kCountingKey) &&
         dispatch::CountingSession::Current() == nullptr;
}

TEST(FlopCountingGuardTest, CountsMmAndAddmmExactly) {
  torch::Tensor a = torch::randn({2, 3});
  torch::Tensor b = torch::randn({3, 4});
  torch::Tensor bias = torch::randn({4});
  FlopCountingGuard guard;
  torch::mm(a, b);
  torch::addmm(bias, a, b);
  torch::addmm(bias, a, b);
  report::FlopReport report = ReportOf(guard);
  EXPECT_EQ(report.by_operator.at("aten.mm"), MatmulFlops(2, 3, 4));
  EXPECT_EQ(report.by_operator.at("aten.addmm"), 2 * MatmulFlops(2, 3, 4));
  EXPECT_TRUE(report.total.is_complete());
  EXPECT_EQ(std::get<Count>(*report.total.value()), 3 * MatmulFlops(2, 3, 4));
  EXPECT_TRUE(report.diagnostics.empty());
}

TEST(FlopCountingGuardTest, CountsLinearForwardAndTheEnginesBackward) {
  torch::nn::Linear linear(4, 2);
  torch::Tensor input = torch::randn({3, 4}, torch::requires_grad());
  FlopCountingGuard guard;
  torch::Tensor output = linear->forward(input);
  output.backward(torch::ones_like(output));
  report::FlopReport report = ReportOf(guard);
  // Forward: addmm(bias, input [3,4], weight^T [4,2]).
  EXPECT_EQ(report.by_operator.at("aten.addmm"), MatmulFlops(3, 4, 2));
  // Backward: grad_input = grad [3,2] @ weight [2,4];
  //           grad_weight = grad^T [2,3] @ input [3,4].
  EXPECT_EQ(report.by_operator.at("aten.mm"),
            MatmulFlops(3, 2, 4) + MatmulFlops(2, 3, 4));
  // The composite linear itself is decomposed, never counted or diagnosed.
  EXPECT_EQ(report.by_operator.count("aten.linear"), 0u);
  EXPECT_EQ(report.ignored_operators.count("aten.linear"), 0u);
  EXPECT_GE(report.ignored_operators.at("aten.t").calls, 1);
}

TEST(FlopCountingGuardTest, OperatorWithoutFormulaMakesTheTotalPartial) {
  torch::Tensor a = torch::randn({2, 3});
  torch::Tensor b = torch::randn({3, 4});
  FlopCountingGuard guard;
  torch::sin(torch::mm(a, b));
  report::FlopReport report = ReportOf(guard);
  EXPECT_EQ(report.total.status(), MetricStatus::kPartial);
  EXPECT_FALSE(report.total.value().has_value());
  EXPECT_EQ(std::get<Count>(*report.total.known_value()), MatmulFlops(2, 3, 4));
  ASSERT_EQ(report.diagnostics.size(), 1u);
  EXPECT_EQ(report.diagnostics[0].code, "uncounted_operator");
  EXPECT_EQ(report.diagnostics[0].subject, "aten.sin");
  EXPECT_EQ(
      report.diagnostics[0].message,
      "aten.sin was observed 1 time(s), but no FLOP formula is registered.");
}

TEST(FlopCountingGuardTest, ElementwiseOptionCountsTheOperatorUnderItsMethod) {
  torch::Tensor a = torch::randn({2, 3});
  torch::Tensor b = torch::randn({3, 4});
  CountingOptions options;
  options.elementwise = true;
  FlopCountingGuard guard(std::move(options));
  torch::sin(torch::mm(a, b));
  report::FlopReport report = ReportOf(guard);
  // sin is tagged pointwise: one FLOP per element of its 2x4 result.
  EXPECT_EQ(report.total.status(), MetricStatus::kComplete);
  EXPECT_EQ(std::get<Count>(*report.total.value()), MatmulFlops(2, 3, 4) + 8);
  EXPECT_EQ(report.by_operator.at("aten.sin"), 8);
  EXPECT_EQ(report.method, report::kElementwiseFlopsMethod);
  EXPECT_EQ(report.total.method(), report::kElementwiseFlopsMethod);
}

TEST(FlopCountingGuardTest, WorkloadExceptionPropagatesAndStateIsRestored) {
  ASSERT_TRUE(CountingIsOff());
  torch::Tensor a = torch::randn({2, 3});
  bool caught = false;
  try {
    MeasureFlops([&] {
      torch::mm(a, a.t());
      throw std::runtime_error("workload failed on purpose");
    }).IgnoreError();
  } catch (const std::runtime_error& error) {
    caught = std::string(error.what()) == "workload failed on purpose";
  }
  EXPECT_TRUE(caught);
  EXPECT_TRUE(CountingIsOff());

  // A failing kernel (shape mismatch) propagates PyTorch's own error.
  EXPECT_THROW(MeasureFlops([&] { torch::mm(a, a); }).IgnoreError(),
               c10::Error);
  EXPECT_TRUE(CountingIsOff());
}

TEST(FlopCountingGuardTest, NothingIsCountedOutsideTheGuard) {
  torch::Tensor a = torch::randn({2, 3});
  {
    FlopCountingGuard guard;
    torch::mm(a, a.t());
    EXPECT_EQ(ReportOf(guard).by_operator.at("aten.mm"), MatmulFlops(2, 3, 2));
  }
  EXPECT_TRUE(CountingIsOff());
  absl::StatusOr<report::FlopReport> empty = MeasureFlops([] {});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->total.is_complete());
  EXPECT_EQ(std::get<Count>(*empty->total.value()), 0);
  EXPECT_TRUE(empty->ignored_operators.empty());
}

TEST(FlopCountingGuardTest, NestedGuardsBothSeeTheInnerWork) {
  torch::Tensor a = torch::randn({2, 3});
  FlopCountingGuard outer;
  torch::mm(a, a.t());
  {
    FlopCountingGuard inner;
    torch::mm(a.t(), a);
    EXPECT_EQ(ReportOf(inner).by_operator.at("aten.mm"), MatmulFlops(3, 2, 3));
  }
  EXPECT_EQ(ReportOf(outer).by_operator.at("aten.mm"),
            MatmulFlops(2, 3, 2) + MatmulFlops(3, 2, 3));
  EXPECT_TRUE(c10::impl::tls_is_dispatch_key_included(dispatch::kCountingKey));
}

TEST(FlopCountingGuardTest, OtherThreadsAreNotCounted) {
  torch::Tensor a = torch::randn({2, 3});
  FlopCountingGuard guard;
  std::thread other([&] { torch::mm(a, a.t()); });
  other.join();
  torch::bmm(a.unsqueeze(0), a.t().unsqueeze(0));
  report::FlopReport report = ReportOf(guard);
  EXPECT_EQ(report.by_operator.count("aten.mm"), 0u);
  EXPECT_EQ(report.by_operator.at("aten.bmm"), MatmulFlops(2, 3, 2));
}

TEST(FlopCountingGuardTest, MetaTensorsAreCountedWithoutMemory) {
  // 2^20 x 2^20 float matrices would need 4 TiB each on a real device.
  const std::int64_t side = std::int64_t{1} << 20;
  torch::Tensor a = torch::empty({side, side}, torch::device(torch::kMeta));
  FlopCountingGuard guard;
  torch::Tensor c = torch::mm(a, a);
  EXPECT_TRUE(c.is_meta());
  EXPECT_EQ(ReportOf(guard).by_operator.at("aten.mm"),
            MatmulFlops(side, side, side));
}

TEST(FlopCountingGuardTest, TasksLaunchedWithThreadStatePropagationAreCounted) {
  // at::launch copies the thread's dispatch state and debug info into the
  // inter-op pool thread, as the autograd engine does for its workers.
  torch::Tensor a = torch::randn({4, 4});
  FlopCountingGuard guard;
  std::promise<void> done;
  at::launch([&] {
    torch::mm(a, a);
    done.set_value();
  });
  done.get_future().wait();
  EXPECT_EQ(ReportOf(guard).by_operator.at("aten.mm"), MatmulFlops(4, 4, 4));
}

TEST(FlopCountingGuardTest, ThreadsWithTheirOwnGuardsCountIndependently) {
  std::vector<Count> counts(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &counts] {
      const std::int64_t n = 2 + t;
      torch::Tensor a = torch::randn({n, n});
      FlopCountingGuard guard;
      for (int i = 0; i < 100; ++i) torch::mm(a, a);
      counts[t] = ReportOf(guard).by_operator.at("aten.mm");
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(counts[t], 100 * MatmulFlops(2 + t, 2 + t, 2 + t))
        << "thread " << t;
  }
}

TEST(FlopCountingGuardTest, CustomFormulasCountOperatorsTheTableDoesNotKnow) {
  CountingOptions options;
  options.custom_formulas.emplace_back(
      "aten.sin",
      [](const formulas::OperatorCall& call) -> absl::StatusOr<Count> {
        // One FLOP per output element, from the result's shape.
        Count elements = 1;
        for (std::int64_t dim : call.results[0].shape) elements *= dim;
        torch::mm(torch::ones({2, 2}), torch::ones({2, 2}));  // not counted
        return elements;
      });
  options.custom_formulas.emplace_back(
      "aten::mm", [](const formulas::OperatorCall&) -> absl::StatusOr<Count> {
        return absl::InvalidArgumentError("cannot count this one");
      });
  torch::Tensor x = torch::randn({3, 5});
  FlopCountingGuard guard(std::move(options));
  torch::sin(x);
  torch::mm(x, x.t());
  report::FlopReport report = ReportOf(guard);
  EXPECT_EQ(report.by_operator.at("aten.sin"), 15);
  EXPECT_EQ(report.by_operator.count("aten.mm"), 0u);
  ASSERT_EQ(report.diagnostics.size(), 1u);
  EXPECT_EQ(report.diagnostics[0].code, "operator_formula_error");
  EXPECT_NE(report.diagnostics[0].message.find("cannot count this one"),
            std::string::npos);
}

}  // namespace
}  // namespace torchscan
