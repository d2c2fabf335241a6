#include "torchscan/crawl.h"

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include "gtest/gtest.h"
#include "tools/examples/script_modules.h"
#include "torchscan/report.h"

namespace torchscan {
namespace {

using report::Count;
using report::MetricStatus;

Count Value(const report::MetricResult& metric) {
  return std::get<Count>(*metric.known_value());
}

// Linear(in, out) on a batch of one, TorchScan 0.2's module formulas:
// FLOPs out*(2*in - 1) + out (bias), MACs in*out, DMAs in + params + out.
struct LinearCosts {
  Count flops, macs, dmas, params;
};
LinearCosts Linear(Count in, Count out) {
  const Count params = in * out + out;
  return {out * (2 * in - 1) + out, in * out, in + params + out, params};
}

torch::jit::Module TinyMlp() {
  examples::ScriptModuleBuilder builder;
  return builder.Sequential(
      {builder.Linear(6, 4), builder.ReLU(), builder.Linear(4, 3)});
}

TEST(CrawlScriptModuleTest, MatchesHandComputedCosts) {
  CrawlOptions options;
  options.input_shapes = {{6}};
  absl::StatusOr<report::AnalysisReport> report =
      CrawlScriptModule(TinyMlp(), options);
  ASSERT_TRUE(report.ok()) << report.status();
  const LinearCosts first = Linear(6, 4), second = Linear(4, 3);
  EXPECT_EQ(Value(*report->totals.Find("parameters")),
            first.params + second.params);
  EXPECT_EQ(Value(*report->totals.Find("module_flops")),
            first.flops + 4 + second.flops);
  EXPECT_EQ(Value(*report->totals.Find("macs")), first.macs + second.macs);
  // The operator side: two addmm products (2*m*n*k); relu has no formula.
  EXPECT_EQ(report->operator_flops.by_operator.at("aten.addmm"),
            2 * 6 * 4 + 2 * 4 * 3);
  EXPECT_EQ(report->totals.Find("operator_flops")->status(),
            MetricStatus::kPartial);
  ASSERT_EQ(report->layers.size(), 4u);
  EXPECT_EQ(report->layers[0].path, "");
  EXPECT_EQ(report->layers[0].name, "sequential");
  EXPECT_EQ(report->layers[1].path, "0");
  EXPECT_EQ(report->layers[1].type, "Linear");
  EXPECT_EQ(report->layers[1].output.shape, (std::vector<std::int64_t>{1, 4}));
  ASSERT_TRUE(report->layer_operator_flops.has_value());
  EXPECT_EQ(Value((*report->layer_operator_flops)[3].total), 2 * 4 * 3);
  EXPECT_EQ(report->operator_flops.by_module.at("Sequential.2"), 2 * 4 * 3);
}

TEST(CrawlScriptModuleTest, StrictFailureCarriesTheReport) {
  CrawlOptions options;
  options.input_shapes = {{6}};
  options.strict = true;
  absl::StatusOr<report::AnalysisReport> report =
      CrawlScriptModule(TinyMlp(), options);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(report.status().message(),
            "Analysis is incomplete for: flops, operator_flops.");
  std::optional<report::AnalysisReport> carried =
      IncompleteAnalysisReport(report.status());
  ASSERT_TRUE(carried.has_value());
  EXPECT_EQ(carried->layers.size(), 4u);
}

TEST(CrawlScriptModuleTest, InputChecksUseTorchScansMessages) {
  CrawlOptions neither;
  EXPECT_EQ(CrawlScriptModule(TinyMlp(), neither).status().message(),
            "Exactly one of input_shape or args/kwargs must be provided.");
  CrawlOptions provided;
  provided.args = std::vector<c10::IValue>{at::zeros({1, 6})};
  provided.device = c10::Device("cpu");
  EXPECT_EQ(CrawlScriptModule(TinyMlp(), provided).status().message(),
            "dtype and device apply only to generated input_shape tensors.");
  CrawlOptions lengths;
  lengths.input_shapes = {{6}, {6}};
  lengths.dtypes = {at::kFloat, at::kFloat, at::kFloat};
  EXPECT_EQ(CrawlScriptModule(TinyMlp(), lengths).status().message(),
            "dtype length must match the number of input shapes.");
}

TEST(CrawlScriptModuleTest, ModelErrorsPropagateAndTheModuleIsUntouched) {
  torch::jit::Module module = TinyMlp();
  module.train();
  CrawlOptions options;
  options.input_shapes = {{5}};  // the first Linear takes 6 features
  // The TorchScript interpreter raises the kernel's error as a
  // std::runtime_error.
  EXPECT_THROW(CrawlScriptModule(module, options).IgnoreError(),
               std::runtime_error);
  EXPECT_TRUE(module.is_training());
  options.input_shapes = {{6}};
  ASSERT_TRUE(CrawlScriptModule(module, options).ok());
  EXPECT_TRUE(module.is_training());
}

TEST(CrawlLibtorchModuleTest, StructureAndOperatorFlopsWithCallsUnavailable) {
  torch::nn::Sequential model(torch::nn::Linear(6, 4), torch::nn::ReLU(),
                              torch::nn::Linear(4, 3));
  CrawlOptions options;
  options.input_shapes = {{6}};
  absl::StatusOr<report::AnalysisReport> report = CrawlLibtorchModule(
      *model,
      [&](const std::vector<c10::IValue>& args) -> c10::IValue {
        return model->forward(args[0].toTensor());
      },
      options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(Value(*report->totals.Find("parameters")), 6 * 4 + 4 + 4 * 3 + 3);
  EXPECT_EQ(report->operator_flops.by_operator.at("aten.addmm"),
            2 * 6 * 4 + 2 * 4 * 3);
  ASSERT_EQ(report->layers.size(), 4u);
  EXPECT_EQ(report->layers[1].type, "Linear");
  EXPECT_EQ(report->layers[1].metrics.Find("calls")->status(),
            MetricStatus::kUnavailable);
  EXPECT_EQ(report->totals.Find("module_flops")->status(),
            MetricStatus::kUnavailable);
  ASSERT_FALSE(report->diagnostics.empty());
  EXPECT_EQ(report->diagnostics[0].code, "unobservable_module_calls");
  EXPECT_TRUE(model->is_training());  // restored
}

}  // namespace
}  // namespace torchscan
