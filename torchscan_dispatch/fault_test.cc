// Fault injection: workloads that throw in forward, in the engine's
// backward, inside custom formulas and inside nested guards. After each
// fault the thread's dispatch state, its counting session and its debug info
// are checked (not assumed) to be exactly as before, and a following
// measurement counts exactly.

#include <ATen/core/Tensor.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/sin.h>
#include <c10/core/TensorOptions.h>
#include <torch/csrc/autograd/custom_function.h>
// torch::randn and the other torch:: factories honour requires_grad.
#include <torch/csrc/autograd/generated/variable_factories.h>

#include <stdexcept>
#include <string>

#include "gtest/gtest.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/flop_counting_guard.h"
#include "torchscan_dispatch/testing/guard_reports.h"
#include "torchscan_dispatch/testing/thread_snapshot.h"

namespace torchscan {
namespace {

using report::Count;
using testing::MatmulFlops;
using testing::ReportOf;
using testing::ThreadSnapshot;

// The thread is back to `before`, and a new measurement counts exactly.
void ExpectCleanAndCountingExactly(const ThreadSnapshot& before) {
  EXPECT_EQ(ThreadSnapshot::Capture(), before);
  EXPECT_EQ(dispatch::CountingSession::Current(), nullptr);
  const at::Tensor a = torch::randn({3, 4});
  const at::Tensor b = torch::randn({4, 5});
  absl::StatusOr<report::FlopReport> report =
      MeasureFlops([&] { at::mm(a, b); });
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->by_operator,
            (std::map<std::string, Count>{{"aten.mm", MatmulFlops(3, 4, 5)}}));
  EXPECT_TRUE(report->total.is_complete());
  EXPECT_EQ(ThreadSnapshot::Capture(), before);
}

// Forward throws after doing some work; backward throws or returns a
// gradient of the wrong shape, depending on `mode`.
enum class BackwardFault { kNone, kThrow, kWrongShape };

struct FaultyMm : public torch::autograd::Function<FaultyMm> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, at::Tensor a,
                            at::Tensor b, bool fail, int64_t backward_fault) {
    ctx->save_for_backward({a, b});
    ctx->saved_data["fault"] = backward_fault;
    at::Tensor y = at::mm(a, b);
    if (fail) throw std::runtime_error("forward failed on purpose");
    return y;
  }
  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    at::Tensor grad_a = at::mm(grads[0], saved[1].t());
    switch (static_cast<BackwardFault>(ctx->saved_data["fault"].toInt())) {
      case BackwardFault::kThrow:
        throw std::runtime_error("backward failed on purpose");
      case BackwardFault::kWrongShape:
        return {grad_a.t(), at::Tensor(), at::Tensor(), at::Tensor()};
      case BackwardFault::kNone:
        break;
    }
    return {grad_a, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

TEST(FaultTest, ThrowInForwardRestoresTheThreadExactly) {
  const ThreadSnapshot before = ThreadSnapshot::Capture();
  const at::Tensor a = torch::randn({2, 3}, at::requires_grad());
  const at::Tensor b = torch::randn({3, 4});
  try {
    MeasureFlops([&] {
      FaultyMm::apply(a, b, /*fail=*/true,
                      static_cast<int64_t>(BackwardFault::kNone));
    }).IgnoreError();
    ADD_FAILURE() << "expected the forward to throw";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "forward failed on purpose");
  }
  ExpectCleanAndCountingExactly(before);

  // A failing kernel: PyTorch's own shape error.
  EXPECT_THROW(MeasureFlops([&] { at::mm(b, b); }).IgnoreError(), c10::Error);
  ExpectCleanAndCountingExactly(before);
}

TEST(FaultTest, ThrowInTheEnginesBackwardRestoresTheThreadExactly) {
  const ThreadSnapshot before = ThreadSnapshot::Capture();
  const at::Tensor a = torch::randn({2, 3}, at::requires_grad());
  const at::Tensor b = torch::randn({3, 4});
  const at::Tensor g = torch::ones({2, 4});
  for (BackwardFault fault :
       {BackwardFault::kThrow, BackwardFault::kWrongShape}) {
    bool thrown = false;
    {
      FlopCountingGuard guard;
      try {
        FaultyMm::apply(a, b, false, static_cast<int64_t>(fault)).backward(g);
      } catch (const std::exception& error) {
        thrown = true;
        const std::string message = error.what();
        EXPECT_NE(message.find(fault == BackwardFault::kThrow
                                   ? "backward failed on purpose"
                                   : "returned an invalid gradient"),
                  std::string::npos)
            << message;
      }
      // The guard is still usable after the fault: forward mm and the
      // backward's grad_a mm ran before the failure; one more mm now.
      at::mm(b.t(), a.t());
      EXPECT_EQ(
          ReportOf(guard).by_operator.at("aten.mm"),
          MatmulFlops(2, 3, 4) + MatmulFlops(2, 4, 3) + MatmulFlops(4, 3, 2));
    }
    EXPECT_TRUE(thrown);
    ExpectCleanAndCountingExactly(before);
  }
}

// A C++ custom formula that throws is treated like one that returns an
// error: the operator call completes normally for the workload, and the
// report names the failure (operator_formula_error), so the total is partial
// instead of silently missing the call.
TEST(FaultTest, ThrowingCustomFormulaBecomesADiagnosticNotAWorkloadError) {
  const ThreadSnapshot before = ThreadSnapshot::Capture();
  CountingOptions options;
  options.custom_formulas.emplace_back(
      "aten.sin", [](const formulas::OperatorCall&) -> absl::StatusOr<Count> {
        throw std::domain_error("formula failed on purpose");
      });
  const at::Tensor x = torch::full({3}, 0.5);
  const at::Tensor a = torch::randn({2, 2});
  at::Tensor sin;
  {
    FlopCountingGuard guard(std::move(options));
    const ThreadSnapshot in_guard = ThreadSnapshot::Capture();
    EXPECT_NO_THROW(sin = at::sin(x));
    EXPECT_EQ(ThreadSnapshot::Capture(), in_guard);
    at::mm(a, a);
    report::FlopReport report = ReportOf(guard);
    EXPECT_EQ(
        report.by_operator,
        (std::map<std::string, Count>{{"aten.mm", MatmulFlops(2, 2, 2)}}));
    EXPECT_EQ(report.total.status(), report::MetricStatus::kPartial);
    EXPECT_EQ(std::get<Count>(*report.total.known_value()),
              MatmulFlops(2, 2, 2));
    ASSERT_EQ(report.diagnostics.size(), 1u);
    EXPECT_EQ(report.diagnostics[0].code, "operator_formula_error");
    EXPECT_NE(report.diagnostics[0].message.find("formula failed on purpose"),
              std::string::npos)
        << report.diagnostics[0].message;
  }
  // The workload got the operator's real result.
  EXPECT_TRUE(at::allclose(sin, torch::full({3}, std::sin(0.5))));
  ExpectCleanAndCountingExactly(before);
}

// An exception that unwinds through two nested guards: each restores the
// state it found, and the inner guard's work still reaches the outer one.
TEST(FaultTest, ExceptionThroughNestedGuardsRestoresEveryLevel) {
  const ThreadSnapshot before = ThreadSnapshot::Capture();
  const at::Tensor a = torch::randn({2, 5});
  try {
    FlopCountingGuard outer;
    const ThreadSnapshot in_outer = ThreadSnapshot::Capture();
    at::mm(a, a.t());
    try {
      FlopCountingGuard inner;
      EXPECT_NE(ThreadSnapshot::Capture(), in_outer);
      at::mm(a.t(), a);
      throw std::out_of_range("inner fault");
    } catch (const std::out_of_range&) {
      EXPECT_EQ(ThreadSnapshot::Capture(), in_outer);
    }
    EXPECT_EQ(ReportOf(outer).by_operator.at("aten.mm"),
              MatmulFlops(2, 5, 2) + MatmulFlops(5, 2, 5));
    throw std::out_of_range("outer fault");
  } catch (const std::out_of_range& error) {
    EXPECT_STREQ(error.what(), "outer fault");
  }
  ExpectCleanAndCountingExactly(before);
}

// Faults of every kind, many times over on one thread: nothing accumulates.
TEST(FaultTest, RepeatedFaultsLeaveNoTrace) {
  const ThreadSnapshot before = ThreadSnapshot::Capture();
  const at::Tensor a = torch::randn({2, 3}, at::requires_grad());
  const at::Tensor b = torch::randn({3, 4});
  const at::Tensor g = torch::ones({2, 4});
  for (int i = 0; i < 200; ++i) {
    try {
      MeasureFlops([&] {
        FlopCountingGuard nested;
        switch (i % 3) {
          case 0:
            FaultyMm::apply(a, b, true, 0);
            break;
          case 1:
            FaultyMm::apply(a, b, false,
                            static_cast<int64_t>(BackwardFault::kThrow))
                .backward(g);
            break;
          default:
            at::mm(b, b);
        }
      }).IgnoreError();
      ADD_FAILURE() << "iteration " << i << " did not throw";
    } catch (const std::exception&) {
    }
    ASSERT_EQ(ThreadSnapshot::Capture(), before) << "iteration " << i;
  }
  ExpectCleanAndCountingExactly(before);
}

}  // namespace
}  // namespace torchscan
