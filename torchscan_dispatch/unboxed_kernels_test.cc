// The unboxed kernels (unboxed_kernels.h) count a plain call exactly as the
// boxed fallback counts it, and hand every other call to the fallback.
//
// Each parity test runs one call under two guards, with the unboxed kernels
// on and then off (UnboxedKernelsOff: every call boxed into the fallback, as
// before the kernels existed), and compares the whole reports: FLOPs, bytes,
// precision, modules, diagnostics. UnboxedCallsOnThisThread tells which path
// ran.

#include "torchscan_dispatch/unboxed_kernels.h"

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/_make_dual.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu.h>
#include <ATen/ops/_unsafe_view.h>
#include <ATen/ops/add.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/detach.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/t.h>
#include <ATen/ops/transpose.h>
#include <torch/csrc/autograd/forward_grad.h>

#include <cstdint>
#include <functional>
#include <utility>

#include "absl/status/statusor.h"
#include "formulas/operator_call.h"
#include "gtest/gtest.h"
#include "report/flop_report.h"
#include "torchscan_dispatch/counting_options.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/flop_counting_guard.h"

namespace torchscan {
namespace {

using dispatch::UnboxedCallsOnThisThread;

// One operator call, through the dispatcher.
using Call = std::function<void()>;

struct Counted {
  report::FlopReport report;
  // UnboxedCallsOnThisThread's increase.
  std::uint64_t unboxed = 0;
};

// `run` under one guard with `options`.
Counted CountOf(const std::function<void()>& run,
                CountingOptions options = {}) {
  Counted counted;
  FlopCountingGuard guard(std::move(options));
  const std::uint64_t before = UnboxedCallsOnThisThread();
  run();
  counted.unboxed = UnboxedCallsOnThisThread() - before;
  absl::StatusOr<report::FlopReport> flop_report = guard.Report();
  EXPECT_TRUE(flop_report.ok()) << flop_report.status();
  if (flop_report.ok()) counted.report = *std::move(flop_report);
  return counted;
}

// `call` with the unboxed kernels off: the fallback counts it, boxed.
void CallFallback(const Call& call) {
  dispatch::UnboxedKernelsOff off;
  call();
}

Counted Unboxed(const Call& call, CountingOptions options = {}) {
  return CountOf(call, std::move(options));
}

Counted Fallback(const Call& call, CountingOptions options = {}) {
  return CountOf([&] { CallFallback(call); }, std::move(options));
}

Call Mm(const at::Tensor& a, const at::Tensor& b) {
  return [a, b] { at::mm(a, b); };
}

Call Addmm() {
  const at::Tensor bias = at::ones({6}), a = at::ones({8, 4}),
                   b = at::ones({4, 6});
  return [bias, a, b] { at::addmm(bias, a, b); };
}

Call Bmm() {
  const at::Tensor a = at::ones({2, 8, 4}), b = at::ones({2, 4, 6});
  return [a, b] { at::bmm(a, b); };
}

Call Convolution() {
  const at::Tensor x = at::ones({1, 2, 8, 8}), w = at::ones({3, 2, 3, 3});
  return [x, w] {
    at::convolution(x, w, std::nullopt, {1, 1}, {0, 0}, {1, 1}, false, {0, 0},
                    1);
  };
}

Call Attention(bool is_causal) {
  const at::Tensor q = at::ones({1, 2, 8, 4});
  return [q, is_causal] {
    at::_scaled_dot_product_flash_attention_for_cpu(q, q, q, 0.0, is_causal);
  };
}

Call Add() {
  const at::Tensor a = at::ones({16}), b = at::ones({16});
  return [a, b] { at::add(a, b); };
}

Call Mul() {
  const at::Tensor a = at::ones({16}), b = at::ones({16});
  return [a, b] { at::mul(a, b); };
}

// The calls without a formula a training step makes most: views, and the
// in-place updates of an optimizer step.
Call ViewsAndInPlaceUpdates() {
  const at::Tensor a = at::ones({4, 6}), b = at::ones({4, 6});
  return [a, b] {
    at::Tensor c = a.clone();
    at::t(a);
    a.view({6, 4});
    at::detach(a);
    at::_unsafe_view(a, {24});
    at::transpose(a, 0, 1);
    c.add_(b, 2);
    c.mul_(b);
  };
}

class UnboxedKernelsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { at::set_num_threads(1); }
};

TEST_F(UnboxedKernelsTest, MmCountsWhatTheFallbackCounts) {
  const Call call = Mm(at::ones({8, 4}), at::ones({4, 6}));
  const Counted fallback = Fallback(call);
  const Counted unboxed = Unboxed(call);
  EXPECT_EQ(0u, fallback.unboxed);
  EXPECT_EQ(1u, unboxed.unboxed);
  EXPECT_EQ(fallback.report, unboxed.report);
}

TEST_F(UnboxedKernelsTest, MmCountsByHand) {
  const report::FlopReport counted =
      Unboxed(Mm(at::ones({8, 4}), at::ones({4, 6}))).report;
  // 2 * 8 * 6 * 4; float32 reads 8*4 + 4*6 elements, writes 8*6.
  EXPECT_EQ(report::Count(2 * 8 * 6 * 4), counted.by_operator.at("aten.mm"));
  EXPECT_EQ(report::Count(2 * 8 * 6 * 4), counted.by_precision.at("fp32"));
  EXPECT_EQ(report::Count(4 * (8 * 4 + 4 * 6)),
            counted.bytes->by_operator.at("aten.mm").read);
  EXPECT_EQ(report::Count(4 * 8 * 6),
            counted.bytes->by_operator.at("aten.mm").written);
}

TEST_F(UnboxedKernelsTest, MmOfOneTensorWithItselfReadsItOnce) {
  const at::Tensor a = at::ones({8, 8});
  const report::FlopReport counted = Unboxed(Mm(a, a)).report;
  EXPECT_EQ(report::Count(4 * 8 * 8),
            counted.bytes->by_operator.at("aten.mm").read);
}

TEST_F(UnboxedKernelsTest, AddmmCountsWhatTheFallbackCounts) {
  const Call call = Addmm();
  const Counted unboxed = Unboxed(call);
  EXPECT_EQ(1u, unboxed.unboxed);
  EXPECT_EQ(Fallback(call).report, unboxed.report);
  EXPECT_EQ(report::Count(2 * 8 * 6 * 4),
            unboxed.report.by_operator.at("aten.addmm"));
}

TEST_F(UnboxedKernelsTest, BmmCountsWhatTheFallbackCounts) {
  const Call call = Bmm();
  const Counted unboxed = Unboxed(call);
  EXPECT_EQ(1u, unboxed.unboxed);
  EXPECT_EQ(Fallback(call).report, unboxed.report);
  EXPECT_EQ(report::Count(2 * 2 * 8 * 6 * 4),
            unboxed.report.by_operator.at("aten.bmm"));
}

TEST_F(UnboxedKernelsTest, ConvolutionCountsWhatTheFallbackCounts) {
  const Call call = Convolution();
  const Counted unboxed = Unboxed(call);
  EXPECT_EQ(1u, unboxed.unboxed);
  EXPECT_EQ(Fallback(call).report, unboxed.report);
  // A 6x6 output of 3 channels, each point 2 * (2 * 3 * 3) FLOPs.
  EXPECT_EQ(report::Count(6 * 6 * 3 * 2 * 2 * 3 * 3),
            unboxed.report.by_operator.at("aten.convolution"));
}

TEST_F(UnboxedKernelsTest, Conv2dPassesOnAndItsConvolutionIsCounted) {
  const at::Tensor x = at::ones({1, 2, 8, 8}), w = at::ones({3, 2, 3, 3});
  const Counted counted = CountOf([&] { at::conv2d(x, w); });
  // conv2d passed on with the key active, then its convolution counted.
  EXPECT_EQ(2u, counted.unboxed);
  EXPECT_EQ(Unboxed(Convolution()).report, counted.report);
}

TEST_F(UnboxedKernelsTest, AttentionCountsWhatTheFallbackCounts) {
  const Call call = Attention(false);
  const Counted unboxed = Unboxed(call);
  EXPECT_EQ(1u, unboxed.unboxed);
  EXPECT_EQ(Fallback(call).report, unboxed.report);
  // Two products of 8x4 by 4x8 and 8x8 by 8x4, 2 * 8 * 8 * 4 each, 2 heads.
  EXPECT_EQ(report::Count(2 * 2 * 2 * 8 * 8 * 4),
            unboxed.report.by_operator.at(
                "aten._scaled_dot_product_flash_attention_for_cpu"));
}

TEST_F(UnboxedKernelsTest, CausalAttentionGoesToTheFallback) {
  const Call call = Attention(true);
  const Counted unboxed = Unboxed(call);
  EXPECT_EQ(0u, unboxed.unboxed);
  EXPECT_EQ(Fallback(call).report, unboxed.report);
}

TEST_F(UnboxedKernelsTest, AddWithoutFormulaCountsWhatTheFallbackCounts) {
  const Call call = Add();
  const Counted unboxed = Unboxed(call);
  EXPECT_EQ(1u, unboxed.unboxed);
  EXPECT_EQ(Fallback(call).report, unboxed.report);
}

TEST_F(UnboxedKernelsTest, ViewsAndInPlaceUpdatesCountWhatTheFallbackCounts) {
  const Call call = ViewsAndInPlaceUpdates();
  const Counted unboxed = Unboxed(call);
  // clone has no unboxed kernel; the seven others do.
  EXPECT_EQ(7u, unboxed.unboxed);
  EXPECT_EQ(Fallback(call).report, unboxed.report);
  EXPECT_EQ(report::Count(1),
            unboxed.report.ignored_operators.at("aten.t").calls);
  EXPECT_EQ(report::Count(1),
            unboxed.report.ignored_operators.at("aten.view").calls);
}

TEST_F(UnboxedKernelsTest,
       InPlaceUpdatesUnderTheElementwiseRuleGoToTheFallback) {
  const Call call = ViewsAndInPlaceUpdates();
  CountingOptions elementwise;
  elementwise.elementwise = true;
  const Counted unboxed = Unboxed(call, elementwise);
  // add_ and mul_ write their first argument: their formulas read it after
  // the call, which only the fallback does.
  EXPECT_EQ(5u, unboxed.unboxed);
  EXPECT_EQ(Fallback(call, elementwise).report, unboxed.report);
}

TEST_F(UnboxedKernelsTest, MulUnderTheElementwiseRuleCountsAsTheFallback) {
  const Call call = Mul();
  CountingOptions elementwise;
  elementwise.elementwise = true;
  const Counted unboxed = Unboxed(call, elementwise);
  EXPECT_EQ(1u, unboxed.unboxed);
  EXPECT_EQ(Fallback(call, elementwise).report, unboxed.report);
  EXPECT_EQ(report::Count(16), unboxed.report.by_operator.at("aten.mul"));
}

TEST_F(UnboxedKernelsTest, ModuleScopeCountsWhatTheFallbackCounts) {
  const Call call = Mm(at::ones({8, 4}), at::ones({4, 6}));
  auto in_module = [](std::function<void()> run) {
    return [run] {
      dispatch::CountingSession::Current()->SetScope(
          dispatch::ScopeChannel::kModules, {"block"});
      run();
    };
  };
  const Counted unboxed = CountOf(in_module(call));
  const Counted fallback = CountOf(in_module([&] { CallFallback(call); }));
  EXPECT_EQ(1u, unboxed.unboxed);
  EXPECT_EQ(fallback.report, unboxed.report);
  EXPECT_EQ(report::Count(2 * 8 * 6 * 4), unboxed.report.by_module.at("block"));
}

TEST_F(UnboxedKernelsTest, NestedGuardsCountWhatTheFallbackCounts) {
  const Call call = Mm(at::ones({8, 4}), at::ones({4, 6}));
  auto nested = [](std::function<void()> run) {
    return [run] {
      run();
      FlopCountingGuard inner;
      run();
    };
  };
  const Counted unboxed = CountOf(nested(call));
  EXPECT_EQ(2u, unboxed.unboxed);
  EXPECT_EQ(CountOf(nested([&] { CallFallback(call); })).report,
            unboxed.report);
}

TEST_F(UnboxedKernelsTest, MetaTensorsCountWhatTheFallbackCounts) {
  const Call call =
      Mm(at::empty({8, 4}, at::kMeta), at::empty({4, 6}, at::kMeta));
  const Counted unboxed = Unboxed(call);
  EXPECT_EQ(1u, unboxed.unboxed);
  EXPECT_EQ(Fallback(call).report, unboxed.report);
  EXPECT_EQ(report::Count(2 * 8 * 6 * 4),
            unboxed.report.by_operator.at("aten.mm"));
}

// The typed formulas (NOTE [Typed formulas] in unboxed_kernels.cc) on
// degenerate and large shapes: the whole report is the fallback's, whose
// formula reads OperatorValues.
TEST_F(UnboxedKernelsTest, MmWithNoRowsCountsWhatTheFallbackCounts) {
  const Call call = Mm(at::ones({0, 4}), at::ones({4, 6}));
  const Counted unboxed = Unboxed(call);
  EXPECT_EQ(1u, unboxed.unboxed);
  EXPECT_EQ(Fallback(call).report, unboxed.report);
}

TEST_F(UnboxedKernelsTest, MmWithNoInnerDimensionCountsWhatTheFallbackCounts) {
  const Call call = Mm(at::ones({8, 0}), at::ones({0, 6}));
  const Counted unboxed = Unboxed(call);
  EXPECT_EQ(1u, unboxed.unboxed);
  EXPECT_EQ(Fallback(call).report, unboxed.report);
}

TEST_F(UnboxedKernelsTest, BmmOfOneBatchCountsWhatTheFallbackCounts) {
  const Call call = [a = at::ones({1, 8, 4}), b = at::ones({1, 4, 6})] {
    at::bmm(a, b);
  };
  const Counted unboxed = Unboxed(call);
  EXPECT_EQ(1u, unboxed.unboxed);
  EXPECT_EQ(Fallback(call).report, unboxed.report);
}

TEST_F(UnboxedKernelsTest, MmOfLargeMetaShapesCountsWhatTheFallbackCounts) {
  constexpr std::int64_t kLarge = std::int64_t{1} << 30;
  const Call call = Mm(at::empty({kLarge, kLarge}, at::kMeta),
                       at::empty({kLarge, kLarge}, at::kMeta));
  const Counted unboxed = Unboxed(call);
  EXPECT_EQ(1u, unboxed.unboxed);
  EXPECT_EQ(Fallback(call).report, unboxed.report);
}

TEST_F(UnboxedKernelsTest, AddmmInBfloat16CountsWhatTheFallbackCounts) {
  const Call call =
      [bias = at::ones({6}, at::kBFloat16), a = at::ones({8, 4}, at::kBFloat16),
       b = at::ones({4, 6}, at::kBFloat16)] { at::addmm(bias, a, b); };
  const Counted unboxed = Unboxed(call);
  EXPECT_EQ(1u, unboxed.unboxed);
  EXPECT_EQ(Fallback(call).report, unboxed.report);
}

TEST_F(UnboxedKernelsTest, CustomFormulaGoesToTheFallback) {
  const Call call = Mm(at::ones({8, 4}), at::ones({4, 6}));
  CountingOptions custom;
  custom.custom_formulas.emplace_back(
      "aten::mm",
      [](const formulas::OperatorCall&) -> absl::StatusOr<report::Count> {
        return report::Count(7);
      });
  const Counted unboxed = Unboxed(call, custom);
  EXPECT_EQ(0u, unboxed.unboxed);
  EXPECT_EQ(report::Count(7), unboxed.report.by_operator.at("aten.mm"));
}

TEST_F(UnboxedKernelsTest, DeferredOperatorGoesToTheFallback) {
  const Call call = Mm(at::ones({8, 4}), at::ones({4, 6}));
  CountingOptions deferred;
  deferred.deferred_packets = {"aten::mm"};
  EXPECT_EQ(0u, Unboxed(call, deferred).unboxed);
}

// The call with a tangent goes to the fallback, which passes it on with the
// key active; the tangent's products come back to the kernels.
TEST_F(UnboxedKernelsTest, ForwardAdTangentCountsWhatTheFallbackCounts) {
  const std::uint64_t level = torch::autograd::ForwardADLevel::get_next_idx();
  const at::Tensor a =
      at::_make_dual(at::ones({8, 4}), at::ones({8, 4}), level);
  const at::Tensor b = at::ones({4, 6});
  const Counted unboxed = Unboxed(Mm(a, b));
  const Counted fallback = Fallback(Mm(a, b));
  torch::autograd::ForwardADLevel::release_idx(level);
  EXPECT_EQ(fallback.report, unboxed.report);
}

TEST_F(UnboxedKernelsTest, NoGuardCountsNothing) {
  const std::uint64_t before = UnboxedCallsOnThisThread();
  at::mm(at::ones({8, 4}), at::ones({4, 6}));
  EXPECT_EQ(before, UnboxedCallsOnThisThread());
}

}  // namespace
}  // namespace torchscan
