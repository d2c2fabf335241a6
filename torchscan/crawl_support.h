// The parts every C++ front end shares with Python's crawl_module: input
// preparation with TorchScan 0.2's checks and messages, the report context,
// model totals, and turning a recorded crawl into the final report.

#ifndef TORCHSCAN_TORCHSCAN_CRAWL_SUPPORT_H_
#define TORCHSCAN_TORCHSCAN_CRAWL_SUPPORT_H_

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "report/analysis_report.h"
#include "report/json_io.h"
#include "torchscan/crawl.h"

namespace torchscan {

struct PreparedInputs {
  std::vector<c10::IValue> args;
  // {"source": ..., "args": [...], "kwargs": {}}
  report::Json metadata;
};

// `model_tensors` gives the default device and dtype (first parameter, else
// first buffer, else CPU float32).
absl::StatusOr<PreparedInputs> PrepareInputs(
    const CrawlOptions& options, const std::vector<at::Tensor>& parameters,
    const std::vector<at::Tensor>& buffers);

// {"trainable_parameters": n, ...} over de-duplicated tensors.
report::Json ModelTotals(const std::vector<at::Tensor>& parameters,
                         const std::vector<at::Tensor>& buffers);

// The report context of a C++ crawl (python_version is empty: no Python).
report::Json CrawlContext(const std::string& model_type, bool training_before,
                          const std::vector<at::Tensor>& parameters,
                          const std::vector<at::Tensor>& buffers);

// Builds the report from a crawl record (formulas/analysis_builder.h) and
// applies `strict`.
absl::StatusOr<report::AnalysisReport> FinishCrawl(const report::Json& record,
                                                   bool strict);

// Drops repeated tensors (shared parameters), keeping the first.
std::vector<at::Tensor> Deduplicated(const std::vector<at::Tensor>& tensors);

}  // namespace torchscan

#endif  // TORCHSCAN_TORCHSCAN_CRAWL_SUPPORT_H_
