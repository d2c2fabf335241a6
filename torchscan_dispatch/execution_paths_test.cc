// The rules that decide when a call is counted, on real LibTorch: functorch
// transforms, forward-mode AD, PyTorch's own compilation, hidden regions.
// Each expected value is a hand computation (testing/guard_reports.h).

#include <ATen/functorch/BatchedTensorImpl.h>
#include <ATen/functorch/DynamicLayer.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/forward_grad.h>
// NOTE: torch::nn::functional::linear brings <torch/types.h> and with it
// <ATen/ATen.h>, so this test cannot take the per-operator route (NOTE
// [Per-operator headers] in tools/torch_defs.bzl); it
// includes the one functional header it uses instead of <torch/torch.h>.
#include <torch/nn/functional/linear.h>

#include "gtest/gtest.h"
#include "torchscan_dispatch/dispatch_key.h"
#include "torchscan_dispatch/flop_counting_guard.h"
#include "torchscan_dispatch/hidden_region.h"
#include "torchscan_dispatch/testing/guard_reports.h"
#include "torchscan_dispatch/thread_state.h"

namespace torchscan {
namespace {

using report::Count;
using testing::FlopsOf;
using testing::MatmulFlops;
using testing::ReportOf;

// vmap of x -> w @ x over 8 rows, through functorch's C++ API: one vmap
// layer, a batched input, the result unwrapped after the layer is popped.
torch::Tensor VmapMatrixVector(const torch::Tensor& w,
                               const torch::Tensor& rows) {
  const int64_t level = at::functorch::initAndPushDynamicLayer(
      at::functorch::TransformType::Vmap, rows.size(0),
      at::functorch::RandomnessType::Error);
  torch::Tensor batched = at::functorch::addBatchDim(rows, 0, level);
  torch::Tensor result = torch::mv(w, batched);
  at::functorch::popDynamicLayerAndDeleteMetadata();
  const at::functorch::BatchedTensorImpl* physical =
      at::functorch::maybeGetBatchedImpl(result);
  return physical->value().movedim(physical->bdim(), 0);
}

TEST(ExecutionPathsTest, VmapCountsThePhysicalCallOnly) {
  // Small integers: every product and sum is exact in float32, so the
  // batched and the plain product agree in any summation order (random
  // normals broke allclose's default tolerance now and then).
  torch::Tensor w = torch::randint(-4, 5, {16, 32}, torch::kFloat);
  torch::Tensor rows = torch::randint(-4, 5, {8, 32}, torch::kFloat);
  FlopCountingGuard guard;
  torch::Tensor result = VmapMatrixVector(w, rows);
  report::FlopReport report = ReportOf(guard);
  // The batching rule runs one [8,32] @ [32,16] product; the logical
  // per-row matrix-vector product is never counted.
  EXPECT_EQ(MatmulFlops(8, 32, 16), FlopsOf(report, "aten.mm"));
  EXPECT_EQ(0, FlopsOf(report, "aten.mv"));
  EXPECT_TRUE(torch::equal(torch::matmul(rows, w.t()), result));
}

TEST(ExecutionPathsTest, ForwardAdCountsPrimalAndTangentProducts) {
  torch::Tensor x = torch::randn({8, 32});
  torch::Tensor w = torch::randn({32, 16});
  const uint64_t level = torch::autograd::ForwardADLevel::get_next_idx();
  torch::Tensor dual_x = at::_make_dual(x, torch::randn({8, 32}), level);
  torch::Tensor dual_w = at::_make_dual(w, torch::randn({32, 16}), level);
  {
    FlopCountingGuard guard;
    at::mm(dual_x, dual_w);
    report::FlopReport report = ReportOf(guard);
    // The primal x @ w and the tangent x_t @ w + x @ w_t: three products.
    EXPECT_EQ(3 * MatmulFlops(8, 32, 16), FlopsOf(report, "aten.mm"));
  }
  torch::autograd::ForwardADLevel::release_idx(level);
}

TEST(ExecutionPathsTest, NothingIsCountedWhilePyTorchCompiles) {
  torch::Tensor a = torch::randn({4, 8});
  torch::Tensor b = torch::randn({8, 2});
  FlopCountingGuard guard;
  {
    dispatch::DepthGuard compiling(
        dispatch::ThisThreadState().execution.compiling_depth);
    torch::mm(a, b);
  }
  torch::mm(a, b);
  EXPECT_EQ(MatmulFlops(4, 8, 2), FlopsOf(ReportOf(guard), "aten.mm"));
}

TEST(ExecutionPathsTest, HiddenRegionCountsCallsTheKeyCannotSee) {
  torch::Tensor input = torch::randn({3, 4});
  torch::Tensor weight = torch::randn({2, 4});
  torch::Tensor bias = torch::randn({2});
  FlopCountingGuard guard;
  {
    // What a tensor subclass's __torch_dispatch__ runs under: the counting
    // key excluded.
    dispatch::HiddenRegion region;
    c10::impl::ExcludeDispatchKeyGuard hidden(dispatch::kCountingKey);
    torch::nn::functional::linear(input, weight, bias);
  }
  report::FlopReport report = ReportOf(guard);
  // linear decomposes to t + addmm; addmm's own internal calls are not
  // counted a second time.
  EXPECT_EQ(MatmulFlops(3, 4, 2), FlopsOf(report, "aten.addmm"));
  EXPECT_EQ(1u, report.by_operator.size());
}

TEST(ExecutionPathsTest, HiddenRegionIgnoresKernelInternals) {
  torch::Tensor a = torch::randn({4, 8});
  torch::Tensor b = torch::randn({8, 2});
  FlopCountingGuard guard;
  {
    dispatch::HiddenRegion region;
    c10::impl::ExcludeDispatchKeyGuard hidden(dispatch::kCountingKey);
    dispatch::DepthGuard inside_a_kernel(
        dispatch::ThisThreadState().execution.kernel_depth);
    torch::mm(a, b);
  }
  EXPECT_EQ(0, FlopsOf(ReportOf(guard), "aten.mm"));
}

TEST(ExecutionPathsTest, HiddenRegionLeavesNoCallbackBehind) {
  torch::Tensor a = torch::randn({4, 8});
  torch::Tensor b = torch::randn({8, 2});
  FlopCountingGuard guard;
  { dispatch::HiddenRegion region; }
  c10::impl::ExcludeDispatchKeyGuard hidden(dispatch::kCountingKey);
  torch::mm(a, b);
  EXPECT_EQ(0, FlopsOf(ReportOf(guard), "aten.mm"));
  EXPECT_EQ(0, dispatch::ThisThreadState().execution.hidden_depth);
}

}  // namespace
}  // namespace torchscan
