// The parts every C++ front end shares with Python's crawl_module: input
// preparation with TorchScan 0.2's checks and messages, the report context,
// model totals, layer records, and turning a CrawlRecord into the final
// report.

#ifndef TORCHSCAN_TORCHSCAN_CRAWL_SUPPORT_H_
#define TORCHSCAN_TORCHSCAN_CRAWL_SUPPORT_H_

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "crawl/crawl_record.h"
#include "report/aggregate.h"
#include "report/analysis_report.h"
#include "report/layer_report.h"
#include "torchscan/crawl.h"
#include "torchscan/tensor_identity.h"

namespace torchscan {

struct PreparedInputs {
  std::vector<c10::IValue> args;
  report::InputsMetadata metadata;
};

// `model_tensors` gives the default device and dtype (first parameter, else
// first buffer, else CPU float32).
absl::StatusOr<PreparedInputs> PrepareInputs(
    const CrawlOptions& options, const std::vector<at::Tensor>& parameters,
    const std::vector<at::Tensor>& buffers);

// The model's totals over de-duplicated tensors.
report::ModelTensorTotals ModelTotals(const std::vector<at::Tensor>& parameters,
                                      const std::vector<at::Tensor>& buffers);

// The report context of a C++ crawl (python_version is empty: no Python).
report::ReportContext CrawlContext(const std::string& model_type,
                                   bool training_before,
                                   const std::vector<at::Tensor>& parameters,
                                   const std::vector<at::Tensor>& buffers);

// Builds the report (crawl/crawl_record.h) and applies `strict`: an
// incomplete report then fails with kFailedPrecondition and rides along for
// IncompleteAnalysisReport.
absl::StatusOr<report::AnalysisReport> FinishCrawl(crawl::CrawlRecord record,
                                                   bool strict);

// The parameter and buffer records of layers, as Python's crawl_module makes
// them: each tensor is counted by the first layer that holds it, and later
// holders say "shared".
class LayerTensorCounter {
 public:
  report::ParameterAttribution Parameters(
      const std::vector<at::Tensor>& parameters);
  // Undefined buffers are skipped.
  report::BufferAttribution Buffers(const std::vector<at::Tensor>& buffers);

 private:
  SeenTensors seen_;
};

// A layer record as Python's crawl_module starts it: path, call_index, name,
// depth, type, input, a pending output, parameters, buffers and no metrics.
report::LayerReport NewLayerRecord(const std::string& path,
                                   std::int64_t call_index,
                                   const std::string& type,
                                   report::CallMetadata input,
                                   report::ParameterAttribution parameters,
                                   report::BufferAttribution buffers);

// Drops repeated tensors (shared parameters), keeping the first.
std::vector<at::Tensor> Deduplicated(const std::vector<at::Tensor>& tensors);

}  // namespace torchscan

#endif  // TORCHSCAN_TORCHSCAN_CRAWL_SUPPORT_H_
