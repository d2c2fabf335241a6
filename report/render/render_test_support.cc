#include "report/render/render_test_support.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "report/aggregate.h"
#include "report/diagnostic.h"

namespace torchscan::report::render::testing {

MetricResult Flops(Count value, absl::string_view scope) {
  return MetricResult::Complete(value,
                                MetricKind{"FLOPs", std::string(scope),
                                           std::string(kOperatorFlopsMethod)});
}

MetricResult PartialFlops(Count known, absl::string_view scope) {
  return MetricResult::Partial(known,
                               MetricKind{"FLOPs", std::string(scope),
                                          std::string(kOperatorFlopsMethod)});
}

LayerReport Layer(const std::string& path, const std::string& type,
                  std::int64_t call_index) {
  LayerReport layer;
  layer.path = path;
  layer.call_index = call_index;
  layer.name = LayerName(path, type);
  layer.depth = LayerDepth(path);
  layer.type = type;
  layer.output = ValueMetadata::Tensor({1, 4}, "torch.float32", "cpu", false);
  layer.metrics.Set("calls",
                    MetricResult::Complete(
                        Count(1), {"calls", "module_call", "pytorch_hook"}));
  return layer;
}

void SetModuleFormulas(LayerReport& layer, Count flops, Count macs) {
  const MetricKind kind{"", "module_call", std::string(kModuleFormulaMethod)};
  layer.metrics.Set(
      "module_flops",
      MetricResult::Complete(flops, {"FLOPs", kind.scope, kind.method}));
  layer.metrics.Set(
      "macs", MetricResult::Complete(macs, {"MACs", kind.scope, kind.method}));
}

LayerOperatorFlops CallOperatorFlops(const std::string& path,
                                     MetricResult total,
                                     std::map<std::string, Count> by_operator,
                                     std::int64_t call_index) {
  return LayerOperatorFlops{path, call_index, std::move(total),
                            std::move(by_operator)};
}

void SetTotals(AnalysisReport& report) {
  Count trainable = 0, bytes = 0, buffers = 0, buffer_bytes = 0;
  for (const LayerReport& layer : report.layers) {
    trainable += layer.parameters.trainable;
    bytes += layer.parameters.bytes;
    buffers += layer.buffers.elements;
    buffer_bytes += layer.buffers.bytes;
  }
  const MetricKind model_elements{"elements", "model", "pytorch"};
  const MetricKind model_bytes{"bytes", "model", "pytorch"};
  report.totals.Set("parameters",
                    MetricResult::Complete(trainable, model_elements));
  report.totals.Set("trainable_parameters",
                    MetricResult::Complete(trainable, model_elements));
  report.totals.Set("frozen_parameters",
                    MetricResult::Complete(Count(0), model_elements));
  report.totals.Set("parameter_bytes",
                    MetricResult::Complete(bytes, model_bytes));
  report.totals.Set("buffer_elements",
                    MetricResult::Complete(buffers, model_elements));
  report.totals.Set("buffer_bytes",
                    MetricResult::Complete(buffer_bytes, model_bytes));
  for (auto [name, unit] :
       {std::pair{"module_flops", "FLOPs"}, std::pair{"macs", "MACs"},
        std::pair{"dmas", "DMAs"}}) {
    report.totals.Set(name, *AggregateLayerMetric(report.layers, name, unit));
  }
  report.totals.Set("operator_flops", report.operator_flops.total);
}

AnalysisReport SmallCnnReport() {
  AnalysisReport report;
  report.context.torchscan_version = "0.1.0";
  report.context.torch_version = "2.13.0+cpu";
  report.context.model_type = "__main__.Net";
  report.inputs.call.args.push_back(
      ValueMetadata::Tensor({1, 3, 8, 8}, "torch.float32", "cpu", false));

  LayerReport root = Layer("", "Net");
  LayerReport features = Layer("features", "Sequential");
  LayerReport conv = Layer("features.0", "Conv2d");
  SetModuleFormulas(conv, 1000, 500);
  conv.parameters = {84, 0, 336, false};
  LayerReport relu = Layer("features.1", "ReLU");
  SetModuleFormulas(relu, 200, 0);
  LayerReport pool = Layer("pool", "AdaptiveAvgPool2d");
  pool.metrics.Set("module_flops", MetricResult::Unavailable(
                                       {"FLOPs", "module_call",
                                        std::string(kModuleFormulaMethod)}));
  LayerReport head = Layer("head", "Linear");
  SetModuleFormulas(head, 300, 150);
  head.parameters = {40, 0, 160, false};
  head.buffers = {4, 16, false};
  report.layers = {root, features, conv, relu, pool, head};

  report.layer_operator_flops = std::vector<LayerOperatorFlops>{
      CallOperatorFlops(
          "", PartialFlops(1400),
          {{"aten.add", 20}, {"aten.addmm", 280}, {"aten.convolution", 1100}}),
      CallOperatorFlops("features", PartialFlops(1100),
                        {{"aten.convolution", 1100}}),
      CallOperatorFlops("features.0", Flops(1100),
                        {{"aten.convolution", 1100}}),
      CallOperatorFlops("features.1", PartialFlops(0), {}),
      CallOperatorFlops("pool", PartialFlops(0), {}),
      CallOperatorFlops("head", Flops(280), {{"aten.addmm", 280}}),
  };

  FlopReport& flops = report.operator_flops;
  flops.torch_version = "2.13.0+cpu";
  flops.total = PartialFlops(1400, "workload");
  flops.by_module = {{"Net", 1400},
                     {"Net.features", 1100},
                     {"Net.features.0", 1100},
                     {"Net.head", 280}};
  flops.by_operator = {
      {"aten.add", 20}, {"aten.addmm", 280}, {"aten.convolution", 1100}};
  flops.ignored_operators = {{"aten.view", {1, "Metadata-only tensor view."}}};
  flops.diagnostics = {Diagnostic::ForOperator(
      std::string(kUncountedOperator), "flops", "aten.relu",
      "aten.relu was observed 1 time(s), but no FLOP formula is registered.")};

  for (const char* metric : {"module_flops", "macs", "dmas"}) {
    report.diagnostics.push_back(Diagnostic::ForPath(
        std::string(kUnsupportedModuleMetric), metric, "pool",
        absl::StrCat("AdaptiveAvgPool2d has no ", metric, " formula.")));
  }
  report.diagnostics.push_back(flops.diagnostics[0]);
  SetTotals(report);
  return report;
}

}  // namespace torchscan::report::render::testing
