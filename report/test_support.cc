#include "report/test_support.h"

#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "report/aggregate.h"

namespace torchscan::report::testing {

std::string ReadTestData(absl::string_view relative_path) {
  const std::string path = "report/testdata/" + std::string(relative_path);
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    ADD_FAILURE() << "cannot read " << path;
    return "";
  }
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

Json ParseOrFail(absl::string_view text) {
  absl::StatusOr<Json> document = ParseJson(text);
  if (!document.ok()) {
    ADD_FAILURE() << document.status();
    return Json();
  }
  return *std::move(document);
}

MetricResult CompleteMetric(MetricValue value, absl::string_view unit,
                            absl::string_view scope, absl::string_view method) {
  return MetricResult::Complete(
      std::move(value),
      MetricKind{std::string(unit), std::string(scope), std::string(method)});
}

MetricResult PartialMetric(MetricValue known_value, absl::string_view unit,
                           absl::string_view scope, absl::string_view method) {
  return MetricResult::Partial(
      std::move(known_value),
      MetricKind{std::string(unit), std::string(scope), std::string(method)});
}

MetricResult UnavailableMetric(absl::string_view unit, absl::string_view scope,
                               absl::string_view method) {
  return MetricResult::Unavailable(
      MetricKind{std::string(unit), std::string(scope), std::string(method)});
}

AnalysisReport Conv2dReportFromParts() {
  const ValueMetadata input =
      ValueMetadata::Tensor({1, 3, 32, 32}, "torch.float32", "cpu", false);
  AnalysisParts parts;
  parts.context.torchscan_version = "0.2.0";
  parts.context.torch_version = "2.13.0+cpu";
  parts.context.python_version = "3.11.7";
  parts.context.model_type = "torch.nn.modules.conv.Conv2d";
  parts.context.training_before = true;
  parts.context.devices = {"cpu"};
  parts.context.dtypes = {"torch.float32"};
  parts.inputs.source = "generated";
  parts.inputs.call.args = {input};

  LayerReport layer;
  layer.path = "";
  layer.call_index = 0;
  layer.name = LayerName("", "Conv2d");
  layer.depth = LayerDepth("");
  layer.type = "Conv2d";
  layer.input.args = {input};
  layer.output =
      ValueMetadata::Tensor({1, 8, 30, 30}, "torch.float32", "cpu", false);
  layer.parameters = ParameterAttribution{224, 0, 896, false};
  layer.buffers = BufferAttribution{0, 0, false};
  layer.metrics.Set("calls", CompleteMetric(Count(1), "calls", "module_call",
                                            "pytorch_hook"));
  const auto formula = [](MetricValue value, absl::string_view unit) {
    return CompleteMetric(std::move(value), unit, "module_call");
  };
  layer.metrics.Set("module_flops", formula(Count(388800), "FLOPs"));
  layer.metrics.Set("macs", formula(Count(194400), "MACs"));
  layer.metrics.Set("dmas", formula(Count(201824), "DMAs"));
  layer.metrics.Set("receptive_field", formula(Count(3), "elements"));
  layer.metrics.Set("effective_stride", formula(Count(1), "elements"));
  layer.metrics.Set("effective_padding", formula(Count(0), "elements"));
  parts.layers = {layer};
  parts.model = ModelTensorTotals{224, 0, 896, 0, 0};

  FlopReport flops;
  flops.torch_version = "2.13.0+cpu";
  flops.total = MetricResult::Complete(Count(388800), OperatorFlopsKind());
  flops.by_module = {{"Conv2d", 388800}};
  flops.by_operator = {{"aten.convolution", 388800}};

  absl::StatusOr<AnalysisReport> report =
      AssembleAnalysisReport(std::move(parts), std::move(flops));
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *std::move(report) : AnalysisReport();
}

FlopReport FlopReportWithEveryMember() {
  OperatorObservation mm;
  mm.name = "aten.mm";
  mm.calls = 1;
  mm.counted_calls = 1;
  mm.flops = 48;
  mm.bytes_read = 224;
  mm.bytes_written = 48;
  mm.mask_unread_calls = 1;
  mm.mask_unread_message = "a tensor subclass";
  OperatorObservation sparse;
  sparse.name = "aten._sparse_mm";
  sparse.calls = 1;
  sparse.counted_calls = 1;
  sparse.flops = 2;
  sparse.bytes_unknown_calls = 1;
  sparse.bytes_unknown_message = "a sparse tensor";
  OperatorObservation view;
  view.name = "aten.view";
  view.calls = 2;
  view.ignored_reason = "a view";
  absl::StatusOr<FlopReport> report = BuildFlopReport(
      "2.13.0", {mm, sparse, view}, {{"L", 50}}, {}, {{"L", 272}});
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *std::move(report) : FlopReport{};
}

}  // namespace torchscan::report::testing
