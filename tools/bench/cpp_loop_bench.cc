// Per-operator cost of the counter with no Python in the way: a loop of tiny
// at::add calls, uninstrumented and under a FlopCountingGuard, and what
// watching for other threads' work (unseen_threads.h) adds: on the measuring
// thread (the guard with RecordFunction switched off on this thread is the
// guard without the watch), and on a thread that is not measured while
// another thread holds a guard (aten.add has no formula and is not ignored,
// so every call takes the watch's slowest path), against the floor PyTorch
// sets for any global RecordFunction callback (no guard, a callback that
// does nothing installed: the slow path of Dispatcher::call alone). Prints
// the median ns per
// operator call of each, all measured in one run, interleaved. Then the same
// plain-against-guard pair for operators that have a formula (mm, addmm, bmm,
// conv2d, scaled_dot_product_attention on tiny shapes), whose calls take the
// counting path (shapes read, formula evaluated, FLOPs added) instead of the
// by-name path of at::add, each also with RecordFunction off on this thread
// (the counted call without the watch). Part of tools/bench/run_benchmarks.py.

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/add.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/scaled_dot_product_attention.h>
#include <ATen/ops/t.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "torchscan_dispatch/flop_counting_guard.h"

ABSL_FLAG(int, ops, 20000, "operator calls per repeat");
ABSL_FLAG(int, repeats, 15, "repeats; the median is reported");
ABSL_FLAG(std::vector<std::string>, counted_operators,
          std::vector<std::string>({"add", "mm", "addmm", "bmm", "conv2d",
                                    "sdpa"}),
          "operators measured plain against the guard (add has no formula)");
ABSL_FLAG(std::string, profile, "",
          "only run this operator of --counted_operators under one guard, "
          "--repeats times --ops calls, for a profiler (perf record, "
          "valgrind --tool=callgrind); prints nothing");
ABSL_FLAG(bool, profile_uninstrumented, false,
          "with --profile: run the loop without the guard (the plain call, "
          "for an instruction count to subtract)");
ABSL_FLAG(bool, profile_unmeasured_thread, false,
          "with --profile: run the loop without a guard while another "
          "thread holds one (the unseen-thread watch's path)");
ABSL_FLAG(bool, profile_without_watch, false,
          "with --profile: run the guarded loop with RecordFunction off on "
          "this thread (the counted call without the unseen-thread watch)");

namespace {

enum class Run {
  kUninstrumented,
  kGuard,
  // The guard, with RecordFunction off on this thread: its cost before the
  // watch existed.
  kGuardWithoutWatch,
  // No guard here, while another thread holds one.
  kWhileAnotherThreadMeasures,
  // No guard anywhere, a global RecordFunction callback that does nothing
  // installed: what any callback costs a call, before ours does anything.
  kEmptyGlobalCallback,
};

std::unique_ptr<at::ObserverContext> DoNothing(const at::RecordFunction&) {
  return nullptr;
}

// Installs a global callback like the watch's (start only, no inputs,
// FUNCTION scope) that does nothing, for its lifetime.
class EmptyGlobalCallback {
 public:
  EmptyGlobalCallback()
      : handle_(
            at::addGlobalCallback(at::RecordFunctionCallback(&DoNothing)
                                      .needsInputs(false)
                                      .needsOutputs(false)
                                      .scopes({at::RecordScope::FUNCTION}))) {}
  ~EmptyGlobalCallback() { at::removeCallback(handle_); }

 private:
  at::CallbackHandle handle_;
};

// Holds a guard on its own thread for its lifetime.
class GuardOnAnotherThread {
 public:
  GuardOnAnotherThread()
      : thread_([this] {
          torchscan::FlopCountingGuard guard;
          open_.store(true);
          while (!done_.load()) std::this_thread::yield();
        }) {
    while (!open_.load()) std::this_thread::yield();
  }
  ~GuardOnAnotherThread() {
    done_.store(true);
    thread_.join();
  }

 private:
  std::atomic<bool> open_{false};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

double NanosecondsPerOp(Run kind, int ops) {
  at::Tensor a = at::ones({16});
  at::Tensor b = at::ones({16});
  std::optional<GuardOnAnotherThread> other;
  if (kind == Run::kWhileAnotherThreadMeasures) other.emplace();
  std::optional<EmptyGlobalCallback> empty_callback;
  if (kind == Run::kEmptyGlobalCallback) empty_callback.emplace();
  auto run = [&] {
    for (int i = 0; i < ops; ++i) at::add(a, b);
  };
  const auto start = std::chrono::steady_clock::now();
  if (kind == Run::kGuard) {
    torchscan::FlopCountingGuard guard;
    run();
  } else if (kind == Run::kGuardWithoutWatch) {
    torchscan::FlopCountingGuard guard;
    at::RecordFunctionGuard record_function_off(false);
    run();
  } else {
    run();
  }
  const std::chrono::duration<double, std::nano> elapsed =
      std::chrono::steady_clock::now() - start;
  return elapsed.count() / ops;
}

// One call of a tiny operator, by its name in --counted_operators.
std::function<void()> TinyCall(const std::string& name) {
  if (name == "add") {
    return [a = at::ones({16}), b = at::ones({16})] { at::add(a, b); };
  }
  // Without a formula too: a view and an in-place update, the calls a
  // training step makes most of besides its products.
  if (name == "t") {
    return [a = at::ones({8, 8})] { at::t(a); };
  }
  if (name == "add_") {
    return [a = at::ones({16}), b = at::ones({16})]() mutable { a.add_(b); };
  }
  if (name == "mm") {
    return [a = at::ones({8, 8}), b = at::ones({8, 8})] { at::mm(a, b); };
  }
  if (name == "addmm") {
    return [bias = at::ones({8}), a = at::ones({8, 8}), b = at::ones({8, 8})] {
      at::addmm(bias, a, b);
    };
  }
  if (name == "bmm") {
    return
        [a = at::ones({2, 8, 8}), b = at::ones({2, 8, 8})] { at::bmm(a, b); };
  }
  if (name == "conv2d") {
    return [x = at::ones({1, 2, 8, 8}), w = at::ones({2, 2, 3, 3})] {
      at::conv2d(x, w);
    };
  }
  if (name == "sdpa") {
    return [q = at::ones({1, 1, 8, 8})] {
      at::scaled_dot_product_attention(q, q, q);
    };
  }
  std::fprintf(stderr, "unknown operator '%s' in --counted_operators\n",
               name.c_str());
  std::exit(2);
}

// kUninstrumented, kGuard or kGuardWithoutWatch (this thread only).
double NanosecondsPerCall(const std::function<void()>& call, Run kind,
                          int ops) {
  const auto start = std::chrono::steady_clock::now();
  if (kind == Run::kGuard) {
    torchscan::FlopCountingGuard guard;
    for (int i = 0; i < ops; ++i) call();
  } else if (kind == Run::kGuardWithoutWatch) {
    torchscan::FlopCountingGuard guard;
    at::RecordFunctionGuard record_function_off(false);
    for (int i = 0; i < ops; ++i) call();
  } else {
    for (int i = 0; i < ops; ++i) call();
  }
  const std::chrono::duration<double, std::nano> elapsed =
      std::chrono::steady_clock::now() - start;
  return elapsed.count() / ops;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  at::set_num_threads(1);
  const int ops = absl::GetFlag(FLAGS_ops);
  if (const std::string profiled = absl::GetFlag(FLAGS_profile);
      !profiled.empty()) {
    const std::function<void()> call = TinyCall(profiled);
    std::optional<torchscan::FlopCountingGuard> guard;
    std::optional<GuardOnAnotherThread> other;
    if (absl::GetFlag(FLAGS_profile_unmeasured_thread)) {
      other.emplace();
    } else if (!absl::GetFlag(FLAGS_profile_uninstrumented)) {
      guard.emplace();
    }
    std::optional<at::RecordFunctionGuard> record_function_off;
    if (absl::GetFlag(FLAGS_profile_without_watch)) {
      record_function_off.emplace(false);
    }
    for (int r = 0; r < absl::GetFlag(FLAGS_repeats); ++r) {
      for (int i = 0; i < ops; ++i) call();
    }
    return 0;
  }
  constexpr Run kRuns[] = {
      Run::kUninstrumented, Run::kGuard, Run::kGuardWithoutWatch,
      Run::kWhileAnotherThreadMeasures, Run::kEmptyGlobalCallback};
  for (Run kind : kRuns) NanosecondsPerOp(kind, ops);  // warm up every path
  std::vector<std::vector<double>> times(std::size(kRuns));
  for (int r = 0; r < absl::GetFlag(FLAGS_repeats); ++r) {
    for (std::size_t i = 0; i < std::size(kRuns); ++i) {
      times[i].push_back(NanosecondsPerOp(kRuns[i], ops));
    }
  }
  const double base = Median(times[0]), ours = Median(times[1]);
  const double without_watch = Median(times[2]), other = Median(times[3]);
  const double empty_callback = Median(times[4]);
  std::printf(
      "{\"uninstrumented_ns_per_op\": %.1f, \"counted_ns_per_op\": %.1f, "
      "\"added_ns_per_op\": %.1f, \"ratio\": %.3f, "
      "\"counted_without_watch_ns_per_op\": %.1f, "
      "\"unmeasured_while_another_thread_measures_ns_per_op\": %.1f, "
      "\"uninstrumented_with_empty_global_callback_ns_per_op\": %.1f, "
      "\"operators\": {",
      base, ours, ours - base, ours / base, without_watch, other,
      empty_callback);
  // Each operator: plain and guarded rounds alternate, so that drift in the
  // machine's speed hits both alike.
  const char* separator = "";
  for (const std::string& name : absl::GetFlag(FLAGS_counted_operators)) {
    const std::function<void()> call = TinyCall(name);
    constexpr Run kCallRuns[] = {Run::kUninstrumented, Run::kGuard,
                                 Run::kGuardWithoutWatch};
    for (Run kind : kCallRuns) NanosecondsPerCall(call, kind, ops);  // warm up
    std::vector<std::vector<double>> call_times(std::size(kCallRuns));
    for (int r = 0; r < absl::GetFlag(FLAGS_repeats); ++r) {
      for (std::size_t i = 0; i < std::size(kCallRuns); ++i) {
        call_times[i].push_back(NanosecondsPerCall(call, kCallRuns[i], ops));
      }
    }
    const double plain_ns = Median(call_times[0]);
    const double guarded_ns = Median(call_times[1]);
    const double unwatched_ns = Median(call_times[2]);
    std::printf(
        "%s\"%s\": {\"uninstrumented_ns_per_op\": %.1f, "
        "\"counted_ns_per_op\": %.1f, \"added_ns_per_op\": %.1f, "
        "\"counted_without_watch_ns_per_op\": %.1f, "
        "\"added_without_watch_ns_per_op\": %.1f}",
        separator, name.c_str(), plain_ns, guarded_ns, guarded_ns - plain_ns,
        unwatched_ns, unwatched_ns - plain_ns);
    separator = ", ";
  }
  std::printf("}}\n");
  return 0;
}
