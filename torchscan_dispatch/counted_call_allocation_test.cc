// A counted operator call allocates nothing on the heap that the same call
// does not allocate uninstrumented (NOTE [The counted path] in
// call_recording.h): mm, addmm, bmm, convolution and scaled dot-product
// attention, whose calls read shapes and evaluate a formula, and add, which
// has no formula and is recorded by name (the floor).
//
// Allocations are counted by the replaced global operator new of
// allocation_counting.h, on this thread during the loop only. The kernels
// allocate their results (a TensorImpl, its storage and more), so each
// operator's guarded loop is compared with the same loop run plainly; after
// warm-up both are the same every call. Deterministic: no timings.
//
// NOTE [Boxed calls in the allocation test]
// The operators are called boxed (OperatorHandle::callBoxed on a stack whose
// capacity is reserved once), not through at::mm: an unboxed call that
// reaches a boxed fallback is boxed by PyTorch (BoxedKernelWrapper builds a
// std::vector stack, and a c10::List for every int-array argument), which
// our fallback cannot avoid and which a plain unboxed call does not do. On a
// stack that is already boxed, the plain call and the counted one differ by
// our fallback's work alone. Composite operators (conv2d, the
// scaled_dot_product_attention front end) are called as the operators they
// decompose into, which the fallback counts: convolution and the CPU flash
// attention kernel.
//
// Those operators now have unboxed kernels on the key (unboxed_kernels.h):
// a boxed call is unboxed once, for our kernel, as it would be for the CPU
// kernel. The Unboxed tests below call them as C++ callers do (at::mm), which
// before the unboxed kernels made the counted call box itself (one stack, a
// c10::List per int[] argument); now the counted call allocates nothing more
// than the plain one either way.

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>
#include <ATen/core/stack.h>
#include <ATen/ops/add.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/ones.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "report/flop_report.h"
#include "torchscan_dispatch/allocation_counting.h"
#include "torchscan_dispatch/flop_counting_guard.h"
#include "torchscan_dispatch/unboxed_kernels.h"

namespace torchscan {
namespace {

constexpr int kCalls = 64;

// A boxed call of one operator on fixed arguments. The stack is refilled in
// place each call (copying an IValue bumps a reference count and allocates
// nothing), so the loop allocates only what the call does.
class BoxedCall {
 public:
  BoxedCall(const char* name, const char* overload,
            std::vector<c10::IValue> arguments)
      : op_(c10::Dispatcher::singleton().findSchemaOrThrow(name, overload)),
        arguments_(std::move(arguments)) {
    stack_.reserve(arguments_.size() + 4);
  }

  void operator()() {
    stack_.clear();
    stack_.insert(stack_.end(), arguments_.begin(), arguments_.end());
    op_.callBoxed(&stack_);
  }

 private:
  c10::OperatorHandle op_;
  std::vector<c10::IValue> arguments_;
  torch::jit::Stack stack_;
};

// Counts the operator-new calls of `kCalls` calls of `call` on this thread.
std::int64_t AllocationsOfCalls(BoxedCall& call) {
  return dispatch::OperatorNewCallsOf([&] {
    for (int i = 0; i < kCalls; ++i) call();
  });
}

struct Measured {
  // Operator-new calls per call, plain and under the guard.
  double plain = 0;
  double counted = 0;
  report::FlopReport report;
};

// Runs `call` plainly and under one guard, each warmed up first (the
// guard's first calls fill the thread's operator cache and session entries).
Measured Measure(BoxedCall call) {
  Measured measured;
  for (int i = 0; i < 4; ++i) call();
  measured.plain = AllocationsOfCalls(call) / double{kCalls};
  // The kernel allocates its result every call: none seen means the counter
  // is not in use (another operator new won), and the comparisons below
  // would hold vacuously.
  EXPECT_GT(measured.plain, 0);
  FlopCountingGuard guard;
  for (int i = 0; i < 4; ++i) call();
  measured.counted = AllocationsOfCalls(call) / double{kCalls};
  absl::StatusOr<report::FlopReport> flop_report = guard.Report();
  EXPECT_TRUE(flop_report.ok()) << flop_report.status();
  if (flop_report.ok()) measured.report = *std::move(flop_report);
  return measured;
}

// The FLOPs the guard counted for `report_name` over the warm-up and the
// counted loop.
report::Count FlopsOf(const report::FlopReport& flop_report,
                      const std::string& report_name) {
  auto found = flop_report.by_operator.find(report_name);
  return found == flop_report.by_operator.end() ? report::Count(0)
                                                : found->second;
}

constexpr std::int64_t kCountedCalls = 4 + kCalls;

class CountedCallAllocationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { at::set_num_threads(1); }
};

// The values of an int[] argument, boxed as the dispatcher boxes them.
c10::IValue Ints(std::vector<std::int64_t> values) {
  return c10::IValue(std::move(values));
}

TEST_F(CountedCallAllocationTest, AddHasNoFormulaAndAllocatesNothingMore) {
  const Measured measured = Measure(
      BoxedCall("aten::add", "Tensor", {at::ones({16}), at::ones({16}), 1}));
  EXPECT_EQ(measured.plain, measured.counted);
  EXPECT_EQ(report::Count(0), FlopsOf(measured.report, "aten.add"));
}

TEST_F(CountedCallAllocationTest, MmAllocatesNothingMore) {
  const Measured measured =
      Measure(BoxedCall("aten::mm", "", {at::ones({8, 8}), at::ones({8, 8})}));
  EXPECT_EQ(measured.plain, measured.counted);
  // By hand: 2 * 8 * 8 * 8 per call.
  EXPECT_EQ(report::Count(kCountedCalls * 2 * 8 * 8 * 8),
            FlopsOf(measured.report, "aten.mm"));
}

TEST_F(CountedCallAllocationTest, AddmmAllocatesNothingMore) {
  const Measured measured = Measure(
      BoxedCall("aten::addmm", "",
                {at::ones({8}), at::ones({8, 8}), at::ones({8, 8}), 1, 1}));
  EXPECT_EQ(measured.plain, measured.counted);
  // By hand: the product, 2 * 8 * 8 * 8; the bias addition is not counted.
  EXPECT_EQ(report::Count(kCountedCalls * 2 * 8 * 8 * 8),
            FlopsOf(measured.report, "aten.addmm"));
}

TEST_F(CountedCallAllocationTest, BmmAllocatesNothingMore) {
  const Measured measured = Measure(
      BoxedCall("aten::bmm", "", {at::ones({2, 8, 8}), at::ones({2, 8, 8})}));
  EXPECT_EQ(measured.plain, measured.counted);
  // By hand: 2 batches of 2 * 8 * 8 * 8.
  EXPECT_EQ(report::Count(kCountedCalls * 2 * 2 * 8 * 8 * 8),
            FlopsOf(measured.report, "aten.bmm"));
}

TEST_F(CountedCallAllocationTest, ConvolutionAllocatesNothingMore) {
  // convolution(input, weight, bias, stride, padding, dilation, transposed,
  // output_padding, groups), as conv2d calls it.
  const Measured measured = Measure(BoxedCall(
      "aten::convolution", "",
      {at::ones({1, 2, 8, 8}), at::ones({2, 2, 3, 3}), c10::IValue(),
       Ints({1, 1}), Ints({0, 0}), Ints({1, 1}), false, Ints({0, 0}), 1}));
  EXPECT_EQ(measured.plain, measured.counted);
  // By hand: a 6x6 output of 2 channels, each point 2 * (2 * 3 * 3) FLOPs.
  EXPECT_EQ(report::Count(kCountedCalls * 6 * 6 * 2 * 2 * 2 * 3 * 3),
            FlopsOf(measured.report, "aten.convolution"));
}

TEST_F(CountedCallAllocationTest, AttentionAllocatesNothingMore) {
  // (query, key, value, dropout_p, is_causal, attn_mask, scale), as
  // scaled_dot_product_attention calls it on the CPU.
  const at::Tensor q = at::ones({1, 1, 8, 8});
  const Measured measured =
      Measure(BoxedCall("aten::_scaled_dot_product_flash_attention_for_cpu", "",
                        {q, q, q, 0.0, false, c10::IValue(), c10::IValue()}));
  EXPECT_EQ(measured.plain, measured.counted);
  // By hand: two products of 8x8 by 8x8 (scores, then values), 2 * 8 * 8 * 8
  // each, on one batch and one head.
  EXPECT_EQ(report::Count(kCountedCalls * 2 * 2 * 8 * 8 * 8),
            FlopsOf(measured.report,
                    "aten._scaled_dot_product_flash_attention_for_cpu"));
}

// An unboxed call (at::mm), as C++ code makes it, plainly and under one
// guard; `unboxed` is what the unboxed kernels took of the counted loop.
struct MeasuredUnboxed {
  double plain = 0;
  double counted = 0;
  std::uint64_t unboxed = 0;
};

MeasuredUnboxed MeasureUnboxed(const std::function<void()>& call) {
  MeasuredUnboxed measured;
  auto loop = [&] {
    return dispatch::OperatorNewCallsOf([&] {
             for (int i = 0; i < kCalls; ++i) call();
           }) /
           double{kCalls};
  };
  for (int i = 0; i < 4; ++i) call();
  measured.plain = loop();
  EXPECT_GT(measured.plain, 0);
  FlopCountingGuard guard;
  for (int i = 0; i < 4; ++i) call();
  const std::uint64_t before = dispatch::UnboxedCallsOnThisThread();
  measured.counted = loop();
  measured.unboxed = dispatch::UnboxedCallsOnThisThread() - before;
  return measured;
}

TEST_F(CountedCallAllocationTest, UnboxedMmAllocatesNothingMore) {
  const at::Tensor a = at::ones({8, 8}), b = at::ones({8, 8});
  const MeasuredUnboxed measured = MeasureUnboxed([&] { at::mm(a, b); });
  EXPECT_EQ(measured.plain, measured.counted);
  EXPECT_EQ(std::uint64_t{kCalls}, measured.unboxed);
}

TEST_F(CountedCallAllocationTest, UnboxedAddmmAllocatesNothingMore) {
  const at::Tensor bias = at::ones({8}), a = at::ones({8, 8}),
                   b = at::ones({8, 8});
  const MeasuredUnboxed measured =
      MeasureUnboxed([&] { at::addmm(bias, a, b); });
  EXPECT_EQ(measured.plain, measured.counted);
  EXPECT_EQ(std::uint64_t{kCalls}, measured.unboxed);
}

TEST_F(CountedCallAllocationTest, UnboxedBmmAllocatesNothingMore) {
  const at::Tensor a = at::ones({2, 8, 8}), b = at::ones({2, 8, 8});
  const MeasuredUnboxed measured = MeasureUnboxed([&] { at::bmm(a, b); });
  EXPECT_EQ(measured.plain, measured.counted);
  EXPECT_EQ(std::uint64_t{kCalls}, measured.unboxed);
}

TEST_F(CountedCallAllocationTest, UnboxedConv2dAllocatesNothingMore) {
  const at::Tensor x = at::ones({1, 2, 8, 8}), w = at::ones({2, 2, 3, 3});
  const MeasuredUnboxed measured = MeasureUnboxed([&] { at::conv2d(x, w); });
  EXPECT_EQ(measured.plain, measured.counted);
  // conv2d passed on, its convolution counted.
  EXPECT_EQ(std::uint64_t{2 * kCalls}, measured.unboxed);
}

TEST_F(CountedCallAllocationTest, UnboxedAddAllocatesNothingMore) {
  const at::Tensor a = at::ones({16}), b = at::ones({16});
  const MeasuredUnboxed measured = MeasureUnboxed([&] { at::add(a, b); });
  EXPECT_EQ(measured.plain, measured.counted);
  EXPECT_EQ(std::uint64_t{kCalls}, measured.unboxed);
}

}  // namespace
}  // namespace torchscan
