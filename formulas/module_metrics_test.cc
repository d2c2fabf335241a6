// The crawler's per-call metric rules (TorchScan 0.2's per-call evaluation and
// diagnostics order).

#include "formulas/module_metrics.h"

#include <string>
#include <utility>
#include <vector>

#include "formulas/module_json.h"
#include "gtest/gtest.h"
#include "report/field_table.h"
#include "report/json_io.h"
#include "report/json_reader.h"

namespace torchscan::formulas {
namespace {

using report::Diagnostic;
using report::MetricResult;
using report::MetricStatus;

CallValue T(Dims shape) { return CallValue::Tensor(std::move(shape)); }

std::vector<std::string> Names(const ModuleMetrics& metrics) {
  std::vector<std::string> names;
  for (const NamedMetric& metric : metrics.metrics)
    names.push_back(metric.name);
  return names;
}

TEST(ModuleMetrics, ReproducesTheConv2dReportOfSection11) {
  ConvParams conv;
  conv.in_channels = 3;
  conv.kernel_size = HyperParameter::Tuple({3, 3});
  conv.stride = HyperParameter::Tuple({1, 1});
  conv.padding = HyperParameter::Tuple({0, 0});
  conv.dilation = HyperParameter::Tuple({1, 1});
  const CapturedModuleCall captured{
      "", ModuleDescription{"Conv2d", ModuleFamily::kConv, conv, 224},
      ModuleCall{{T({1, 3, 32, 32})}, T({1, 8, 30, 30})}};
  absl::StatusOr<ModuleMetrics> metrics = EvaluateModuleMetrics(captured);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_TRUE(metrics->diagnostics.empty());
  EXPECT_EQ(
      report::DumpJson(ModuleMetricsToJson(*metrics)),
      R"({"metrics":{)"
      R"("module_flops":{"status":"complete","value":388800,"known_value":388800,"unit":"FLOPs","scope":"module_call","method":"torchscan_module_formula"},)"
      R"("macs":{"status":"complete","value":194400,"known_value":194400,"unit":"MACs","scope":"module_call","method":"torchscan_module_formula"},)"
      R"("dmas":{"status":"complete","value":201824,"known_value":201824,"unit":"DMAs","scope":"module_call","method":"torchscan_module_formula"},)"
      R"("receptive_field":{"status":"complete","value":3,"known_value":3,"unit":"elements","scope":"module_call","method":"torchscan_module_formula"},)"
      R"("effective_stride":{"status":"complete","value":1,"known_value":1,"unit":"elements","scope":"module_call","method":"torchscan_module_formula"},)"
      R"("effective_padding":{"status":"complete","value":0,"known_value":0,"unit":"elements","scope":"module_call","method":"torchscan_module_formula"}},)"
      R"("diagnostics":[]})");
}

// The example of docs/modules.md: MaxPool2d(2) counts its raw int kernel in
// FLOPs and MACs but 2x2 in DMAs.
TEST(ModuleMetrics, DocumentedExample) {
  absl::StatusOr<report::Json> json = report::ParseJson(R"(
      {"path": "features.1",
       "module": {"type": "MaxPool2d", "family": "max_pool", "parameter_count": 0,
                  "kernel_size": 2, "stride": 2, "padding": 0, "dilation": 1},
       "call": {"inputs": [{"kind": "tensor", "shape": [1, 8, 4, 4]}],
                "output": {"kind": "tensor", "shape": [1, 8, 2, 2]}}})");
  ASSERT_TRUE(json.ok()) << json.status();
  absl::StatusOr<CapturedModuleCall> captured =
      report::FromJson<CapturedModuleCall>(
          report::JsonValue(*json, "captured_call"));
  ASSERT_TRUE(captured.ok()) << captured.status();
  absl::StatusOr<ModuleMetrics> metrics = EvaluateModuleMetrics(*captured);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_TRUE(metrics->diagnostics.empty());
  const report::MetricValue expected[] = {Count(32), Count(32), Count(160),
                                          Count(2),  Count(2),  Count(0)};
  ASSERT_EQ(metrics->metrics.size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_TRUE(metrics->metrics[i].result.is_complete());
    EXPECT_EQ(metrics->metrics[i].result.value(), expected[i])
        << metrics->metrics[i].name;
  }
}

TEST(ModuleMetrics, MissingTensorsGiveThreeUnavailableMetricsAndDiagnostics) {
  const ModuleDescription identity{"Identity", ModuleFamily::kIdentity, {}, 0};
  // No tensor in the output (a dict of strings).
  absl::StatusOr<ModuleMetrics> metrics = EvaluateModuleMetrics(
      "head", identity,
      ModuleCall{{T({1, 2})},
                 CallValue::Mapping("dict", {CallValue::Scalar("str")})});
  ASSERT_TRUE(metrics.ok());
  EXPECT_EQ(Names(*metrics),
            (std::vector<std::string>{"module_flops", "macs", "dmas"}));
  for (const NamedMetric& metric : metrics->metrics) {
    EXPECT_EQ(metric.result.status(), MetricStatus::kUnavailable);
  }
  ASSERT_EQ(metrics->diagnostics.size(), 3u);
  EXPECT_EQ(metrics->diagnostics[0],
            Diagnostic::ForPath(
                "missing_metric_tensor", "module_flops", "head",
                "The module call did not expose both an input and output "
                "tensor."));
  EXPECT_EQ(metrics->diagnostics[2].metric, "dmas");
  // No tensor among the inputs.
  metrics = EvaluateModuleMetrics(
      "", identity, ModuleCall{{CallValue::Scalar("int")}, T({3})});
  ASSERT_TRUE(metrics.ok());
  EXPECT_EQ(metrics->diagnostics.size(), 3u);
}

TEST(ModuleMetrics, UnsupportedModulesArePartialZerosAndAnUnavailableField) {
  absl::StatusOr<ModuleMetrics> metrics = EvaluateModuleMetrics(
      "embed",
      ModuleDescription{"Embedding", ModuleFamily::kUnsupported, {}, 30},
      ModuleCall{{T({1, 3})}, T({1, 3, 10})});
  ASSERT_TRUE(metrics.ok());
  EXPECT_EQ(Names(*metrics),
            (std::vector<std::string>{"module_flops", "macs", "dmas",
                                      "receptive_field", "effective_stride",
                                      "effective_padding"}));
  EXPECT_EQ(metrics->metrics[0].result.status(), MetricStatus::kPartial);
  EXPECT_EQ(metrics->metrics[0].result.known_value(),
            report::MetricValue(Count(0)));
  EXPECT_EQ(metrics->metrics[3].result.status(), MetricStatus::kUnavailable);
  ASSERT_EQ(metrics->diagnostics.size(), 4u);
  const char* const order[] = {"module_flops", "macs", "dmas",
                               "receptive_field"};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(
        metrics->diagnostics[i],
        Diagnostic::ForPath("unsupported_module_metric", order[i], "embed",
                            "Module type not supported: Embedding"));
  }
}

TEST(ModuleMetrics, MultiheadAttentionFlopsSeeTheWholeOutput) {
  MultiheadAttentionParams mha;
  mha.embed_dim = 4;
  mha.num_heads = 2;
  mha.head_dim = 2;
  mha.batch_first = true;
  mha.out_proj = LinearParams{4, 4, true};
  const std::vector<CallValue> inputs = {T({2, 3, 4}),
                                         T({2, 3, 4}),
                                         T({2, 3, 4}),
                                         CallValue::None(),
                                         CallValue::Scalar("bool"),
                                         CallValue::None(),
                                         CallValue::Scalar("bool"),
                                         CallValue::Scalar("bool")};
  const ModuleDescription module{"MultiheadAttention",
                                 ModuleFamily::kMultiheadAttention, mha, 80};
  absl::StatusOr<ModuleMetrics> with_weights = EvaluateModuleMetrics(
      "attn", module,
      ModuleCall{inputs, CallValue::Tuple({T({2, 3, 4}), T({2, 3, 3})})});
  absl::StatusOr<ModuleMetrics> without = EvaluateModuleMetrics(
      "attn", module,
      ModuleCall{inputs, CallValue::Tuple({T({2, 3, 4}), CallValue::None()})});
  ASSERT_TRUE(with_weights.ok() && without.ok());
  // 1117 plus B*H*L*S = 2*2*3*3 for the head-averaged weights.
  EXPECT_EQ(with_weights->metrics[0].result.value(),
            report::MetricValue(Count(1153)));
  EXPECT_EQ(without->metrics[0].result.value(),
            report::MetricValue(Count(1117)));
  EXPECT_EQ(with_weights->diagnostics.size(),
            3u);  // macs, dmas, receptive field
}

TEST(ModuleMetrics, FormulaErrorsBecomeModuleMetricErrors) {
  absl::StatusOr<ModuleMetrics> metrics = EvaluateModuleMetrics(
      "act",
      ModuleDescription{"ReLU", ModuleFamily::kReLU, ActivationParams{}, 0},
      ModuleCall{{CallValue::None(), T({1, 4})}, T({1, 4})});
  ASSERT_TRUE(metrics.ok());
  EXPECT_EQ(metrics->metrics[0].result.status(), MetricStatus::kUnavailable);
  EXPECT_EQ(metrics->metrics[1].result.status(), MetricStatus::kComplete);
  ASSERT_EQ(metrics->diagnostics.size(), 1u);
  EXPECT_EQ(metrics->diagnostics[0],
            Diagnostic::ForPath(
                "module_metric_error", "module_flops", "act",
                "AttributeError: 'NoneType' object has no attribute 'numel'"));

  // A receptive field failure: metric receptive_field, the three unavailable.
  absl::StatusOr<ModuleMetrics> field = EvaluateModuleMetrics(
      "pool",
      ModuleDescription{
          "AdaptiveAvgPool1d", ModuleFamily::kAdaptiveAvgPool, {}, 0},
      ModuleCall{{T({})}, T({1, 1, 1})});
  ASSERT_TRUE(field.ok());
  ASSERT_EQ(field->metrics.size(), 6u);
  for (std::size_t i = 3; i < 6; ++i) {
    EXPECT_EQ(field->metrics[i].result.status(), MetricStatus::kUnavailable);
  }
  ASSERT_EQ(field->diagnostics.size(), 1u);
  EXPECT_EQ(
      field->diagnostics[0],
      Diagnostic::ForPath("module_metric_error", "receptive_field", "pool",
                          "IndexError: tuple index out of range"));
}

TEST(ModuleMetrics, WarningRulesOfTheCrawler) {
  std::vector<Diagnostic> diagnostics;
  // Warnings other than "not supported": partial, all texts joined.
  MetricResult result = RecordCountMetric(
      "module_flops", "FLOPs", "x",
      FormulaOutcome<Count>::Value(5, {"first caveat", "second caveat"}),
      diagnostics);
  EXPECT_EQ(result.status(), MetricStatus::kPartial);
  EXPECT_EQ(result.known_value(), report::MetricValue(Count(5)));
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0],
            Diagnostic::ForPath("module_metric_warning", "module_flops", "x",
                                "first caveat; second caveat"));
  // A "not supported" warning wins and is quoted alone.
  diagnostics.clear();
  result =
      RecordCountMetric("macs", "MACs", "x",
                        FormulaOutcome<Count>::Value(
                            0, {"other", "Module type not supported: Foo"}),
                        diagnostics);
  EXPECT_EQ(diagnostics[0],
            Diagnostic::ForPath("unsupported_module_metric", "macs", "x",
                                "Module type not supported: Foo"));
  // An exception: unavailable.
  diagnostics.clear();
  result =
      RecordCountMetric("dmas", "DMAs", "x",
                        FormulaOutcome<Count>::Error(
                            {"ZeroDivisionError", "integer modulo by zero"}),
                        diagnostics);
  EXPECT_EQ(result.status(), MetricStatus::kUnavailable);
  EXPECT_EQ(diagnostics[0].message,
            "ZeroDivisionError: integer modulo by zero");
  EXPECT_EQ(result.unit(), "DMAs");
  EXPECT_EQ(result.scope(), "module_call");
  EXPECT_EQ(result.method(), "torchscan_module_formula");
}

TEST(ModuleMetrics, NegativeCountIsUnavailable) {
  // Conv2d(groups=-1) makes TorchScan 0.2's FLOPs formula negative; a count
  // of work cannot be, so the metric is unavailable and says why.
  std::vector<Diagnostic> diagnostics;
  MetricResult result =
      RecordCountMetric("module_flops", "FLOPs", "conv",
                        FormulaOutcome<Count>::Value(-13824), diagnostics);
  EXPECT_EQ(MetricStatus::kUnavailable, result.status());
  EXPECT_EQ(std::nullopt, result.known_value());
  ASSERT_EQ(1u, diagnostics.size());
  EXPECT_EQ(Diagnostic::ForPath("module_metric_error", "module_flops", "conv",
                                "the FLOPs formula gave a negative count "
                                "(-13824): the module's attributes are "
                                "outside what torch accepts"),
            diagnostics[0]);
}

}  // namespace
}  // namespace torchscan::formulas
