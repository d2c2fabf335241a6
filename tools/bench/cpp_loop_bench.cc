// Per-operator cost of the counter with no Python in the way: a loop of tiny
// at::add calls, uninstrumented and under a FlopCountingGuard. Prints the
// median ns per operator call of each, and the ratio. Part of
// tools/bench/run_benchmarks.py.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "torchscan_dispatch/flop_counting_guard.h"

ABSL_FLAG(int, ops, 20000, "operator calls per repeat");
ABSL_FLAG(int, repeats, 15, "repeats; the median is reported");

namespace {

double NanosecondsPerOp(bool counted, int ops) {
  at::Tensor a = at::ones({16});
  at::Tensor b = at::ones({16});
  auto run = [&] {
    for (int i = 0; i < ops; ++i) at::add(a, b);
  };
  const auto start = std::chrono::steady_clock::now();
  if (counted) {
    torchscan::FlopCountingGuard guard;
    run();
  } else {
    run();
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
  NanosecondsPerOp(false, ops);  // warm up both paths
  NanosecondsPerOp(true, ops);
  std::vector<double> plain, counted;
  for (int r = 0; r < absl::GetFlag(FLAGS_repeats); ++r) {
    plain.push_back(NanosecondsPerOp(false, ops));
    counted.push_back(NanosecondsPerOp(true, ops));
  }
  const double base = Median(plain), ours = Median(counted);
  std::printf(
      "{\"uninstrumented_ns_per_op\": %.1f, \"counted_ns_per_op\": %.1f, "
      "\"added_ns_per_op\": %.1f, \"ratio\": %.3f}\n",
      base, ours, ours - base, ours / base);
  return 0;
}
