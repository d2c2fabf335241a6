// crawl_module for C++: the TorchScan 0.2 report of one forward call of a
// TorchScript module (a saved model file, or one built in C++), or the
// structure and operator FLOPs of a LibTorch torch::nn::Module.
//
//   torch::jit::Module model = torch::jit::load("model.pt");
//   torchscan::CrawlOptions options;
//   options.input_shapes = {{3, 224, 224}};
//   absl::StatusOr<torchscan::report::AnalysisReport> report =
//       torchscan::CrawlScriptModule(model, options);
//
// The report has the schema Python's crawl_module returns; the summary table
// is report::RenderSummary. Exceptions thrown by the model's forward (e.g. a
// shape it rejects) propagate unchanged; every other problem is a status.

#ifndef TORCHSCAN_TORCHSCAN_CRAWL_H_
#define TORCHSCAN_TORCHSCAN_CRAWL_H_

#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "report/analysis_report.h"

namespace torch::jit {
struct Module;
}  // namespace torch::jit
namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace torchscan {

enum class CrawlMode {
  kFull,       // operator FLOPs and module formulas
  kStructure,  // shapes, calls, parameters and buffers only
};

struct CrawlOptions {
  // Exactly one of `input_shapes` (without the batch dimension; a batch of 1
  // is added) and `args` (passed to forward unchanged).
  std::vector<std::vector<std::int64_t>> input_shapes;
  std::optional<std::vector<c10::IValue>> args;
  // Generated inputs only. dtypes: empty for the model's (its first
  // parameter's, else first buffer's, else float32), one for every input, or
  // one per input. device: the model's if unset.
  std::vector<c10::ScalarType> dtypes;
  std::optional<c10::Device> device;
  CrawlMode mode = CrawlMode::kFull;
  // Fail (kFailedPrecondition, "Analysis is incomplete for: ...") when a
  // requested metric is incomplete; the report rides along with the status
  // (IncompleteAnalysisReport).
  bool strict = false;
};

// Crawls a TorchScript module. The module itself is not modified: a clone
// that shares its parameters is instrumented (its submodule calls are
// observed exactly, as Python's forward hooks would) and run in evaluation
// mode without gradients.
absl::StatusOr<report::AnalysisReport> CrawlScriptModule(
    const torch::jit::Module& module, const CrawlOptions& options);

// Crawls a LibTorch module whose forward `run` calls with the given inputs.
// torch::nn::Module offers no call hooks, so layers come from the module
// tree with their parameters and buffers, while per-call data (calls,
// shapes, module formulas) is unavailable with a diagnostic; the operator
// FLOPs of the whole call are measured.
absl::StatusOr<report::AnalysisReport> CrawlLibtorchModule(
    torch::nn::Module& module,
    const std::function<c10::IValue(const std::vector<c10::IValue>&)>& run,
    const CrawlOptions& options);

// The report of a strict crawl that failed for incompleteness (carried by
// the status and its copies); nullopt for any other status.
std::optional<report::AnalysisReport> IncompleteAnalysisReport(
    const absl::Status& status);

}  // namespace torchscan

#endif  // TORCHSCAN_TORCHSCAN_CRAWL_H_
