// Concurrency: many threads measuring at once, each with its own guard and
// workload, with exact per-thread counts; guarded and unguarded threads side
// by side; backward passes run by the autograd engine; several threads
// recording into one session while it is being read. Also run under
// ThreadSanitizer (--config=tsan, docs/reliability.md).

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/mm.h>
#include <c10/core/TensorOptions.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
// torch::randn and the other torch:: factories honour requires_grad.
#include <torch/csrc/autograd/generated/variable_factories.h>

#include <atomic>
#include <barrier>
#include <cstdint>
#include <future>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/dispatch_key.h"
#include "torchscan_dispatch/flop_counting_guard.h"
#include "torchscan_dispatch/testing/guard_reports.h"
#include "torchscan_dispatch/testing/thread_snapshot.h"

namespace torchscan {
namespace {

using report::Count;
using testing::FlopsOf;
using testing::MatmulFlops;
using testing::ReportOf;
using testing::ThreadSnapshot;

// One thread's workload: calls cycling through mm, addmm and bmm on work
// that differ per thread. The tensors are made before any guard starts.
struct Workload {
  static constexpr std::int64_t kBatch = 2;
  std::int64_t m, k, n;
  at::Tensor a, b, bias, ba, bb;

  explicit Workload(int thread)
      : m(1 + thread % 4),
        k(2 + thread % 3),
        n(3 + thread % 5),
        a(torch::randn({m, k})),
        b(torch::randn({k, n})),
        bias(torch::randn({n})),
        ba(torch::randn({kBatch, m, k})),
        bb(torch::randn({kBatch, k, n})) {}
  Count Mm() const { return MatmulFlops(m, k, n); }
  Count Bmm() const { return kBatch * MatmulFlops(m, k, n); }
};

struct Expected {
  Count mm = 0, addmm = 0, bmm = 0;
};

// Runs operators [begin, end) of the cycle and returns their FLOPs.
Expected RunOps(const Workload& w, int begin, int end) {
  Expected expected;
  for (int i = begin; i < end; ++i) {
    switch (i % 3) {
      case 0:
        at::mm(w.a, w.b);
        expected.mm += w.Mm();
        break;
      case 1:
        at::addmm(w.bias, w.a, w.b);
        expected.addmm += w.Mm();
        break;
      default:
        at::bmm(w.ba, w.bb);
        expected.bmm += w.Bmm();
    }
  }
  return expected;
}

void ExpectCounts(const report::FlopReport& report, const Expected& expected,
                  const std::string& where) {
  EXPECT_EQ(FlopsOf(report, "aten.mm"), expected.mm) << where;
  EXPECT_EQ(FlopsOf(report, "aten.addmm"), expected.addmm) << where;
  EXPECT_EQ(FlopsOf(report, "aten.bmm"), expected.bmm) << where;
  ASSERT_TRUE(report.total.is_complete()) << where;
  EXPECT_EQ(std::get<Count>(*report.total.value()),
            expected.mm + expected.addmm + expected.bmm)
      << where;
}

constexpr int kThreads = 16;
constexpr int kOpsPerThread = 1000;

// 16 threads x 1000 operators, all started together; every thread's outer
// guard also holds an inner guard for the middle half of its operators.
TEST(ConcurrencyTest, SixteenThreadsWithNestedGuardsCountExactlyPerThread) {
  std::barrier start(kThreads);
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &start] {
      const Workload work(t);
      const std::string where = "thread " + std::to_string(t);
      const ThreadSnapshot before = ThreadSnapshot::Capture();
      start.arrive_and_wait();
      Expected outer_expected, inner_expected;
      {
        FlopCountingGuard outer;
        const ThreadSnapshot in_outer = ThreadSnapshot::Capture();
        const Expected first = RunOps(work, 0, kOpsPerThread / 4);
        {
          FlopCountingGuard inner;
          inner_expected =
              RunOps(work, kOpsPerThread / 4, 3 * kOpsPerThread / 4);
          ExpectCounts(ReportOf(inner), inner_expected, where + " inner");
        }
        // The inner guard restored the outer guard's state exactly.
        EXPECT_EQ(ThreadSnapshot::Capture(), in_outer) << where;
        const Expected last =
            RunOps(work, 3 * kOpsPerThread / 4, kOpsPerThread);
        outer_expected = {first.mm + inner_expected.mm + last.mm,
                          first.addmm + inner_expected.addmm + last.addmm,
                          first.bmm + inner_expected.bmm + last.bmm};
        ExpectCounts(ReportOf(outer), outer_expected, where + " outer");
      }
      EXPECT_EQ(ThreadSnapshot::Capture(), before) << where;
      // Hand check of the totals: 334 mm, 333 addmm, 333 bmm calls.
      EXPECT_EQ(outer_expected.mm, 334 * work.Mm()) << where;
      EXPECT_EQ(outer_expected.addmm, 333 * work.Mm()) << where;
      EXPECT_EQ(outer_expected.bmm, 333 * work.Bmm()) << where;
    });
  }
  for (std::thread& thread : threads) thread.join();
}

// A guard on one thread while other threads run the same operators without
// one, at the same time: only the guarded thread's work is counted, and the
// other threads never see counting switched on.
TEST(ConcurrencyTest, UnguardedThreadsRunningAlongsideAGuardAreNotCounted) {
  constexpr int kUnguarded = 4;
  constexpr int kGuardedOps = 500;
  std::atomic<bool> guard_active{false};
  std::atomic<bool> done{false};
  std::atomic<int> ops_while_guarded{0};
  std::atomic<int> saw_counting_on{0};
  std::vector<std::thread> unguarded;
  for (int t = 0; t < kUnguarded; ++t) {
    unguarded.emplace_back([&] {
      const at::Tensor a = torch::randn({5, 5});
      while (!done.load()) {
        const bool during = guard_active.load();
        at::mm(a, a);
        if (dispatch::CountingSession::Current() != nullptr ||
            c10::impl::tls_is_dispatch_key_included(dispatch::kCountingKey)) {
          saw_counting_on.fetch_add(1);
        }
        if (during) ops_while_guarded.fetch_add(1);
      }
    });
  }
  const at::Tensor a = torch::randn({3, 7});
  const at::Tensor b = torch::randn({7, 2});
  {
    FlopCountingGuard guard;
    guard_active.store(true);
    // Make sure the other threads really ran while the guard was active.
    while (ops_while_guarded.load() < 50 * kUnguarded)
      std::this_thread::yield();
    for (int i = 0; i < kGuardedOps; ++i) at::mm(a, b);
    report::FlopReport report = ReportOf(guard);
    EXPECT_EQ(report.by_operator.at("aten.mm"),
              kGuardedOps * MatmulFlops(3, 7, 2));
    EXPECT_EQ(report.by_operator.size(), 1u);
    // Not counted, but named: the total is a lower bound (threads_test.cc).
    EXPECT_EQ(report::MetricStatus::kPartial, report.total.status());
    guard_active.store(false);
  }
  done.store(true);
  for (std::thread& thread : unguarded) thread.join();
  EXPECT_EQ(saw_counting_on.load(), 0);
  EXPECT_GE(ops_while_guarded.load(), 50 * kUnguarded);
}

// y = a @ b with a hand-written backward: grad_a = g @ b^T, grad_b = a^T @ g.
struct MmFunction : public torch::autograd::Function<MmFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, at::Tensor a,
                            at::Tensor b) {
    ctx->save_for_backward({a, b});
    return at::mm(a, b);
  }
  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    return {at::mm(grads[0], saved[1].t()), at::mm(saved[0].t(), grads[0])};
  }
};

// Forward and the engine's backward of a C++ custom autograd::Function, on 8
// threads at once, each with its own guard.
TEST(ConcurrencyTest, CustomFunctionBackwardRunByTheEngineCountsPerThread) {
  constexpr int kAutogradThreads = 8;
  constexpr int kSteps = 50;
  std::barrier start(kAutogradThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kAutogradThreads; ++t) {
    threads.emplace_back([t, &start] {
      const Workload work(t);
      at::Tensor a = torch::randn({work.m, work.k}, at::requires_grad());
      at::Tensor b = torch::randn({work.k, work.n}, at::requires_grad());
      const at::Tensor g = torch::ones({work.m, work.n});
      const ThreadSnapshot before = ThreadSnapshot::Capture();
      start.arrive_and_wait();
      {
        FlopCountingGuard guard;
        for (int i = 0; i < kSteps; ++i) {
          MmFunction::apply(a, b).backward(g);
        }
        // Forward [m,k]@[k,n]; backward [m,n]@[n,k] and [k,m]@[m,n].
        report::FlopReport report = ReportOf(guard);
        EXPECT_EQ(report.by_operator.at("aten.mm"), kSteps * 3 * work.Mm())
            << "thread " << t;
        EXPECT_EQ(report.by_operator.size(), 1u) << "thread " << t;
      }
      EXPECT_EQ(ThreadSnapshot::Capture(), before) << "thread " << t;
      EXPECT_TRUE(a.grad().defined());
    });
  }
  for (std::thread& thread : threads) thread.join();
}

// torch::autograd::grad from inside the guard: the engine runs the built-in
// mm backward (only the input that needs a gradient gets one) and the custom
// Function's backward (which always computes both).
TEST(ConcurrencyTest, AutogradGradInsideTheGuardIsCounted) {
  at::Tensor a = torch::randn({4, 6}, at::requires_grad());
  const at::Tensor b = torch::randn({6, 3});
  at::Tensor c = torch::randn({6, 3}, at::requires_grad());
  const at::Tensor g = torch::ones({4, 3});
  FlopCountingGuard guard;
  at::Tensor y = at::mm(a, b);
  torch::autograd::variable_list grad_a = torch::autograd::grad({y}, {a}, {g});
  ASSERT_EQ(grad_a.size(), 1u);
  EXPECT_EQ(grad_a[0].sizes(), a.sizes());
  // Forward 2*4*6*3; backward grad_a = g [4,3] @ b^T [3,6].
  EXPECT_EQ(ReportOf(guard).by_operator.at("aten.mm"),
            MatmulFlops(4, 6, 3) + MatmulFlops(4, 3, 6));
  at::Tensor z = MmFunction::apply(a, c);
  torch::autograd::grad({z}, {a, c}, {g});
  EXPECT_EQ(ReportOf(guard).by_operator.at("aten.mm"),
            MatmulFlops(4, 6, 3) + MatmulFlops(4, 3, 6) +      // as above
                MatmulFlops(4, 6, 3) +                         // forward
                MatmulFlops(4, 3, 6) + MatmulFlops(6, 4, 3));  // backward
}

// Several inter-op pool tasks record into one session (each on its own
// thread entry) while the owning thread reads reports of it.
TEST(ConcurrencyTest, TasksRecordIntoOneSessionWhileItIsRead) {
  constexpr int kTasks = 4;
  constexpr int kOpsPerTask = 250;
  const at::Tensor a = torch::randn({3, 3});
  FlopCountingGuard guard;
  std::vector<std::promise<void>> done(kTasks);
  for (int t = 0; t < kTasks; ++t) {
    at::launch([&, t] {
      for (int i = 0; i < kOpsPerTask; ++i) at::mm(a, a);
      done[t].set_value();
    });
  }
  Count last = 0;
  for (int t = 0; t < kTasks; ++t) {
    std::future<void> finished = done[t].get_future();
    while (finished.wait_for(std::chrono::milliseconds(0)) !=
           std::future_status::ready) {
      const Count now = FlopsOf(ReportOf(guard), "aten.mm");
      EXPECT_GE(now, last);  // counts only grow
      EXPECT_LE(now, kTasks * kOpsPerTask * MatmulFlops(3, 3, 3));
      last = now;
    }
  }
  EXPECT_EQ(ReportOf(guard).by_operator.at("aten.mm"),
            kTasks * kOpsPerTask * MatmulFlops(3, 3, 3));
}

// Threads come and go while a long-lived session on another thread and
// short-lived sessions on the new threads are recorded: the per-thread
// caches never hand a thread another session's entry.
TEST(ConcurrencyTest, ShortLivedThreadsAndSessionsKeepCountsApart) {
  const at::Tensor a = torch::randn({2, 2});
  FlopCountingGuard outer;
  for (int round = 0; round < 20; ++round) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&a, t] {
        FlopCountingGuard guard;
        for (int i = 0; i <= t; ++i) at::mm(a, a);
        EXPECT_EQ(ReportOf(guard).by_operator.at("aten.mm"),
                  (t + 1) * MatmulFlops(2, 2, 2));
      });
    }
    at::mm(a, a);
    for (std::thread& thread : threads) thread.join();
  }
  EXPECT_EQ(ReportOf(outer).by_operator.at("aten.mm"),
            20 * MatmulFlops(2, 2, 2));
}

}  // namespace
}  // namespace torchscan
