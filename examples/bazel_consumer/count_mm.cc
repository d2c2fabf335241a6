// Counts the operator FLOPs of one matrix product with TorchScan Dispatch and
// prints the report as JSON. Built by a workspace that depends on TorchScan
// Dispatch (docs/bazel.md).

#include <ATen/core/Tensor.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/ones.h>

#include <iostream>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "torchscan_dispatch/flop_counting_guard.h"

int main() {
  const at::Tensor a = at::ones({2, 3});
  const at::Tensor b = at::ones({3, 4});

  absl::StatusOr<torchscan::report::FlopReport> report;
  {
    // Every operator this thread runs while the guard lives is counted.
    torchscan::FlopCountingGuard guard;
    const at::Tensor product = at::mm(a, b);
    report = guard.Report();
  }
  if (!report.ok()) {
    std::cerr << report.status() << "\n";
    return 1;
  }
  std::cout << torchscan::report::DumpJson(
                   torchscan::report::FlopReportToJson(*report), 2)
            << "\n";
  return 0;
}
