// crawl_module for LibTorch torch::nn::Module models.
//
// The C++ frontend has no call hooks, so what a layer did in a call cannot be
// observed: each module gets one record with its parameters and buffers,
// while its calls, shapes and module formulas are unavailable, and one
// diagnostic says why. The operator FLOPs of the whole call are measured.

#include <ATen/core/grad_mode.h>
#include <torch/nn/module.h>

#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "crawl/crawl_record.h"
#include "report/layer_report.h"
#include "report/metric_result.h"
#include "torchscan/crawl.h"
#include "torchscan/crawl_support.h"
#include "torchscan_dispatch/active_counting.h"

namespace torchscan {
namespace {

constexpr char kUnobservableMessage[] =
    "torch::nn::Module offers no call hooks: calls, shapes and module formulas "
    "of "
    "its layers cannot be observed; crawl a TorchScript module for them.";

// "torch::nn::Conv2dImpl" -> "Conv2d".
std::string ShortName(const std::string& name) {
  absl::string_view view = name;
  const std::size_t colon = view.rfind("::");
  if (colon != absl::string_view::npos) view.remove_prefix(colon + 2);
  absl::ConsumeSuffix(&view, "Impl");
  return std::string(view);
}

report::MetricResult Unavailable(absl::string_view unit,
                                 absl::string_view method) {
  return report::MetricResult::Unavailable(report::MetricKind{
      std::string(unit), std::string(report::kModuleCallScope),
      std::string(method)});
}

}  // namespace

absl::StatusOr<report::AnalysisReport> CrawlLibtorchModule(
    torch::nn::Module& module,
    const std::function<c10::IValue(const std::vector<c10::IValue>&)>& run,
    const CrawlOptions& options) {
  const std::vector<at::Tensor> parameters =
      Deduplicated(module.parameters(true));
  const std::vector<at::Tensor> buffers = Deduplicated(module.buffers(true));
  TS_ASSIGN_OR_RETURN(PreparedInputs inputs,
                      PrepareInputs(options, parameters, buffers));
  const bool full = options.mode == CrawlMode::kFull;
  const bool training_before = module.is_training();

  std::vector<std::pair<std::string, bool>> training_flags;
  for (const auto& named : module.named_modules("", /*include_self=*/true)) {
    training_flags.emplace_back(named.key(), named.value()->is_training());
  }
  std::optional<dispatch::ActiveCounting> counting;
  try {
    module.eval();
    at::NoGradGuard no_grad;
    if (full) counting.emplace();
    run(inputs.args);
    if (counting) counting->Stop();
  } catch (...) {
    counting.reset();
    for (const auto& named : module.named_modules("", true)) {
      for (const auto& [path, training] : training_flags) {
        if (path == named.key()) named.value()->train(training);
      }
    }
    throw;
  }
  for (const auto& named : module.named_modules("", true)) {
    for (const auto& [path, training] : training_flags) {
      // train() recurses; restore parents first, children after.
      if (path == named.key()) named.value()->train(training);
    }
  }

  crawl::CrawlRecord record;
  LayerTensorCounter tensors;
  for (const auto& named : module.named_modules("", /*include_self=*/true)) {
    const std::string& path = named.key();
    const torch::nn::Module& current = *named.value();
    report::LayerReport layer = NewLayerRecord(
        path, /*call_index=*/0, ShortName(current.name()),
        report::CallMetadata(),
        tensors.Parameters(current.parameters(/*recurse=*/false)),
        tensors.Buffers(current.buffers(/*recurse=*/false)));
    layer.metrics.Set("calls", Unavailable("calls", report::kModuleHookMethod));
    if (full && current.children().empty()) {
      for (auto [name, unit] :
           {std::pair{"module_flops", "FLOPs"}, std::pair{"macs", "MACs"},
            std::pair{"dmas", "DMAs"}}) {
        layer.metrics.Set(name,
                          Unavailable(unit, report::kModuleFormulaMethod));
      }
    }
    record.parts.layers.push_back(std::move(layer));
  }
  record.parts.context =
      CrawlContext(module.name(), training_before, parameters, buffers);
  record.parts.inputs = std::move(inputs.metadata);
  record.parts.model = ModelTotals(parameters, buffers);
  record.parts.module_diagnostics.push_back(report::Diagnostic::ForPath(
      "unobservable_module_calls", "calls", "", kUnobservableMessage));
  if (full) {
    TS_ASSIGN_OR_RETURN(record.operator_flops,
                        counting->session().BuildReport());
  }
  return FinishCrawl(std::move(record), options.strict);
}

}  // namespace torchscan
