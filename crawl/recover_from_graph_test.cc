#include "crawl/recover_from_graph.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "formulas/module_description.h"
#include "gtest/gtest.h"
#include "report/field_table.h"
#include "report/field_table_testing.h"
#include "report/json_io.h"

namespace torchscan::crawl {
namespace {

using formulas::ModuleFamily;
using Ints = std::vector<std::int64_t>;

GraphValue Tensor(Ints sizes) { return TensorValue{std::move(sizes)}; }

using Values = std::vector<std::pair<std::string, GraphValue>>;
using Keys = std::vector<std::string>;

// The recovered value of `key`; fails the test when there is none.
GraphValue Recovered(const RecoveredAttributes& recovered,
                     const std::string& key) {
  for (const auto& [name, value] : recovered.values) {
    if (name == key) return value;
  }
  ADD_FAILURE() << "no " << key;
  return UnknownValue{};
}

Keys KeysOf(const RecoveredAttributes& recovered) {
  Keys keys;
  for (const auto& [name, value] : recovered.values) keys.push_back(name);
  return keys;
}

ModuleGraph GroupedConvolution() {
  return ModuleGraph{
      .family = ModuleFamily::kConv,
      .operators = {{"aten::convolution",
                     {{"input", Tensor({1, 4, 8, 8})},
                      {"weight", Tensor({8, 2, 3, 3})},
                      {"bias", GraphValue()},
                      {"stride", Ints{2, 2}},
                      {"padding", std::int64_t{1}},
                      {"dilation", Ints{1, 1}},
                      {"groups", std::int64_t{2}}}}},
      .tensors = {{"weight", {8, 2, 3, 3}}},
  };
}

TEST(RecoverFromGraphTest, AConvolutionIsItsOperatorsArgumentsAndWeight) {
  const RecoveredAttributes recovered = RecoverAttributes(GroupedConvolution());
  EXPECT_EQ((Keys{"in_channels", "kernel_size", "stride", "padding", "dilation",
                  "groups", "bias"}),
            KeysOf(recovered));
  EXPECT_EQ(Keys{}, recovered.unrecovered);
  EXPECT_EQ(GraphValue(std::int64_t{4}), Recovered(recovered, "in_channels"));
  EXPECT_EQ(GraphValue(Ints{3, 3}), Recovered(recovered, "kernel_size"));
  EXPECT_EQ(GraphValue(Ints{2, 2}), Recovered(recovered, "stride"));
  // An int padding means the same on every side.
  EXPECT_EQ(GraphValue(Ints{1, 1}), Recovered(recovered, "padding"));
  EXPECT_EQ(GraphValue(std::int64_t{2}), Recovered(recovered, "groups"));
  EXPECT_EQ(GraphValue(false), Recovered(recovered, "bias"));
}

TEST(RecoverFromGraphTest, ATransposedConvolutionsInputChannelsLeadItsWeight) {
  ModuleGraph graph = GroupedConvolution();
  graph.family = ModuleFamily::kConvTranspose;
  EXPECT_EQ(GraphValue(std::int64_t{8}),
            Recovered(RecoverAttributes(graph), "in_channels"));
}

TEST(RecoverFromGraphTest, AStringPaddingIsKept) {
  ModuleGraph graph = GroupedConvolution();
  graph.operators[0].name = "aten::_convolution_mode";
  graph.operators[0].arguments[4].second = std::string("same");
  EXPECT_EQ(GraphValue(std::string("same")),
            Recovered(RecoverAttributes(graph), "padding"));
}

TEST(RecoverFromGraphTest, AConvolutionThatRanNoOperatorKeepsOnlyItsTensors) {
  const RecoveredAttributes recovered = RecoverAttributes(ModuleGraph{
      .family = ModuleFamily::kConv,
      .tensors = {{"weight", {8, 2, 3}}, {"bias", {8}}},
  });
  EXPECT_EQ(GraphValue(Ints{3}), Recovered(recovered, "kernel_size"));
  EXPECT_EQ(GraphValue(), Recovered(recovered, "stride"));
  EXPECT_EQ(GraphValue(true), Recovered(recovered, "bias"));
  EXPECT_EQ((Keys{"in_channels", "stride", "padding", "dilation", "groups"}),
            recovered.unrecovered);
}

TEST(RecoverFromGraphTest, AComputedWeightFallsBackToTheModulesOwn) {
  ModuleGraph graph = GroupedConvolution();
  graph.operators[0].arguments[1].second = TensorValue{};
  graph.tensors["weight"] = {6, 1, 5, 5};
  const RecoveredAttributes recovered = RecoverAttributes(graph);
  EXPECT_EQ(GraphValue(Ints{5, 5}), Recovered(recovered, "kernel_size"));
  EXPECT_EQ(GraphValue(std::int64_t{2}), Recovered(recovered, "in_channels"));
}

TEST(RecoverFromGraphTest, ALinearIsItsWeightsShape) {
  const RecoveredAttributes recovered = RecoverAttributes(ModuleGraph{
      .family = ModuleFamily::kLinear,
      .operators = {{"aten::linear",
                     {{"input", Tensor({2, 16})},
                      {"weight", Tensor({4, 16})},
                      {"bias", Tensor({4})}}}},
  });
  EXPECT_EQ((RecoveredAttributes{{{"in_features", std::int64_t{16}},
                                  {"out_features", std::int64_t{4}},
                                  {"bias", true}},
                                 {}}),
            recovered);
}

TEST(RecoverFromGraphTest, APoolsEmptyStrideIsItsKernel) {
  const RecoveredAttributes recovered = RecoverAttributes(ModuleGraph{
      .family = ModuleFamily::kMaxPool,
      .operators = {{"aten::max_pool2d_with_indices",
                     {{"self", Tensor({1, 3, 8, 8})},
                      {"kernel_size", std::int64_t{3}},
                      {"stride", Ints{}},
                      {"padding", std::int64_t{0}},
                      {"dilation", Ints{1, 1}},
                      {"ceil_mode", false}}}},
  });
  EXPECT_EQ((Values{{"kernel_size", Ints{3}},
                    {"stride", Ints{3}},
                    {"padding", Ints{0}},
                    {"dilation", Ints{1, 1}}}),
            recovered.values);
}

TEST(RecoverFromGraphTest, AnAveragePoolHasNoDilation) {
  const RecoveredAttributes recovered = RecoverAttributes(ModuleGraph{
      .family = ModuleFamily::kAvgPool,
      .operators = {{"aten::avg_pool1d",
                     {{"kernel_size", Ints{2}}, {"stride", Ints{1}}}}},
  });
  EXPECT_EQ((Keys{"kernel_size", "stride", "padding"}), KeysOf(recovered));
  EXPECT_EQ(GraphValue(Ints{1}), Recovered(recovered, "stride"));
  // No padding argument here: it is not recovered.
  EXPECT_EQ(Keys{"padding"}, recovered.unrecovered);
}

TEST(RecoverFromGraphTest, ABatchNormWithoutAffineIsItsRunningStatistics) {
  const RecoveredAttributes recovered = RecoverAttributes(ModuleGraph{
      .family = ModuleFamily::kBatchNorm,
      .operators = {{"aten::_batch_norm_with_update",
                     {{"input", Tensor({2, 6, 4, 4})},
                      {"weight", GraphValue()},
                      {"bias", GraphValue()},
                      {"running_mean", Tensor({6})},
                      {"running_var", Tensor({6})},
                      {"momentum", std::int64_t{1}},
                      {"eps", 1e-5}}}},
  });
  EXPECT_EQ((Values{{"num_features", std::int64_t{6}},
                    {"affine", false},
                    {"track_running_stats", true},
                    // Named after its mode: it updates.
                    {"training", true},
                    {"momentum", 1.0},
                    {"running_mean_numel", std::int64_t{6}},
                    {"running_var_numel", std::int64_t{6}},
                    {"weight_numel", GraphValue()},
                    {"bias_numel", GraphValue()}}),
            recovered.values);
  // Without affine parameters, their numels are None: that is recovered.
  EXPECT_EQ(Keys{}, recovered.unrecovered);
}

TEST(RecoverFromGraphTest, ABatchNormOfNoStatisticsCountsTheInputsChannels) {
  const RecoveredAttributes recovered = RecoverAttributes(ModuleGraph{
      .family = ModuleFamily::kBatchNorm,
      .operators = {{"aten::batch_norm",
                     {{"input", Tensor({2, 5, 7})},
                      {"weight", GraphValue()},
                      {"bias", GraphValue()},
                      {"running_mean", GraphValue()},
                      {"running_var", GraphValue()},
                      {"training", true},
                      {"momentum", GraphValue()}}}},
  });
  EXPECT_EQ(GraphValue(std::int64_t{5}), Recovered(recovered, "num_features"));
  EXPECT_EQ(GraphValue(false), Recovered(recovered, "track_running_stats"));
  // momentum=None: a cumulative average, a value the graph shows.
  EXPECT_EQ(GraphValue(), Recovered(recovered, "momentum"));
  EXPECT_EQ(Keys{}, recovered.unrecovered);
}

TEST(RecoverFromGraphTest, AZeroAveragingFactorIsNoMomentum) {
  ModuleGraph graph{.family = ModuleFamily::kBatchNorm,
                    .operators = {{"aten::batch_norm",
                                   {{"input", Tensor({2, 3})},
                                    {"running_mean", Tensor({3})},
                                    {"training", false},
                                    {"momentum", 0.0}}}}};
  // momentum=None evaluates with 0.0, as momentum=0.0 does.
  EXPECT_EQ(Keys{"momentum"}, RecoverAttributes(graph).unrecovered);
  graph.operators[0].arguments[3].second = UnknownValue{};
  EXPECT_EQ(Keys{"momentum"}, RecoverAttributes(graph).unrecovered);
}

TEST(RecoverFromGraphTest, ABatchNormThatRanNoOperatorRecoversNothing) {
  const RecoveredAttributes recovered = RecoverAttributes(ModuleGraph{
      .family = ModuleFamily::kBatchNorm,
      .tensors = {{"weight", {3}}, {"running_mean", {3}}},
  });
  EXPECT_EQ(KeysOf(recovered), recovered.unrecovered);
}

TEST(RecoverFromGraphTest, ADropoutWithoutItsTrainArgumentDropsAsInTraining) {
  const RecoveredAttributes recovered = RecoverAttributes(ModuleGraph{
      .family = ModuleFamily::kDropout,
      .operators =
          {{"aten::native_dropout",
            {{"input", Tensor({4})}, {"p", 0.25}, {"train", GraphValue()}}}},
  });
  EXPECT_EQ((Values{{"p", 0.25}, {"inplace", false}, {"training", true}}),
            recovered.values);
}

TEST(RecoverFromGraphTest, AnActivationIsInPlaceWhenItRanTheUnderscoreVariant) {
  ModuleGraph graph{.family = ModuleFamily::kReLU6,
                    .operators = {{"aten::hardtanh_", {}}}};
  EXPECT_EQ((RecoveredAttributes{{{"inplace", true}}, {}}),
            RecoverAttributes(graph));
  graph.operators = {{"aten::relu6", {}}};
  EXPECT_EQ((RecoveredAttributes{{{"inplace", false}}, {}}),
            RecoverAttributes(graph));
  // Another activation's operator is not this one's.
  graph.operators = {{"aten::relu_", {}}};
  EXPECT_EQ((RecoveredAttributes{{{"inplace", GraphValue()}}, {"inplace"}}),
            RecoverAttributes(graph));
}

TEST(RecoverFromGraphTest, AnAttentionsHeadsAreItsQuerysSecondSize) {
  const RecoveredAttributes recovered = RecoverAttributes(ModuleGraph{
      .family = ModuleFamily::kMultiheadAttention,
      .operators = {{"aten::scaled_dot_product_attention",
                     {{"query", Tensor({2, 4, 5, 8})},
                      {"key", Tensor({2, 4, 5, 8})},
                      {"value", Tensor({2, 4, 5, 8})},
                      {"dropout_p", 0.0}}}},
      .tensors = {{"in_proj_weight", {96, 32}},
                  {"in_proj_bias", {96}},
                  {"out_proj.weight", {32, 32}}},
  });
  EXPECT_EQ(GraphValue(std::int64_t{32}), Recovered(recovered, "embed_dim"));
  EXPECT_EQ(GraphValue(std::int64_t{4}), Recovered(recovered, "num_heads"));
  EXPECT_EQ(GraphValue(std::int64_t{8}), Recovered(recovered, "head_dim"));
  EXPECT_EQ(GraphValue(), Recovered(recovered, "batch_first"));
  EXPECT_EQ(GraphValue(true), Recovered(recovered, "in_proj_bias"));
  EXPECT_EQ(GraphValue(0.0), Recovered(recovered, "dropout"));
  EXPECT_EQ(GraphValue(std::int64_t{32}),
            Recovered(recovered, "out_proj.in_features"));
  EXPECT_EQ(GraphValue(false), Recovered(recovered, "out_proj.bias"));
  EXPECT_EQ((Keys{"batch_first", "add_zero_attn", "training"}),
            recovered.unrecovered);
}

TEST(RecoverFromGraphTest, AnAttentionOfMatrixProductsHasNoHeadCount) {
  const RecoveredAttributes recovered = RecoverAttributes(ModuleGraph{
      .family = ModuleFamily::kMultiheadAttention,
      .operators = {{"aten::scaled_dot_product_attention",
                     {{"query", TensorValue{}}, {"dropout_p", 0.0}}}},
      .tensors = {{"in_proj_weight", {96, 32}}},
  });
  EXPECT_EQ((Keys{"num_heads", "head_dim", "batch_first", "add_zero_attn",
                  "training", "out_proj.in_features", "out_proj.out_features"}),
            recovered.unrecovered);
}

TEST(RecoverFromGraphTest, AFamilyWithoutHyperParametersRecoversNothing) {
  EXPECT_EQ(RecoveredAttributes{},
            RecoverAttributes(ModuleGraph{.family = ModuleFamily::kFlatten}));
}

TEST(RecoverFromGraphTest, AnUnknownFamilyIsNamed) {
  const report::Json json = report::Json::parse(
      R"({"family": "bilinear", "operators": [], "tensors": {}})");
  EXPECT_EQ("graph.family: is not a module family: 'bilinear'",
            report::FromJson<ModuleGraph>(report::JsonValue(json, "graph"))
                .status()
                .message());
}

TEST(RecoverFromGraphTest, AValueOfNoKindIsNamed) {
  const report::Json json = report::Json::parse(R"({"shape": [1]})");
  EXPECT_EQ(
      "value: expected null, a bool, a number, a string, a list of ints, "
      "{\"tensor\": sizes} or {\"unknown\": true}",
      report::FromJson<GraphValue>(report::JsonValue(json, "value"))
          .status()
          .message());
}

}  // namespace
}  // namespace torchscan::crawl

namespace torchscan::report {

// Every kind of value, in a graph of each kind of row.
template <>
struct FieldTableSamples<crawl::GraphOperator> {
  static std::vector<crawl::GraphOperator> Get() {
    return {{"aten::convolution",
             {{"none", crawl::GraphValue()},
              {"bool", true},
              {"int", std::int64_t{-3}},
              {"float", 0.5},
              {"inf", 1.0 / 0.0},
              {"text", std::string("same")},
              {"ints", std::vector<std::int64_t>{1, 2}},
              {"tensor", crawl::TensorValue{{{2, 3}}}},
              {"computed_tensor", crawl::TensorValue{}},
              {"unknown", crawl::UnknownValue{}}}},
            {"aten::relu", {}}};
  }
};
template <>
struct FieldTableSamples<crawl::ModuleGraph> {
  static std::vector<crawl::ModuleGraph> Get() {
    return {{.family = formulas::ModuleFamily::kConv,
             .operators = FieldTableSamples<crawl::GraphOperator>::Get(),
             .tensors = {{"weight", {8, 2, 3, 3}}, {"out_proj.bias", {}}}},
            {}};
  }
};
template <>
struct FieldTableSamples<crawl::RecoveredAttributes> {
  static std::vector<crawl::RecoveredAttributes> Get() {
    return {{{{"stride", std::vector<std::int64_t>{2}},
              {"momentum", crawl::GraphValue()},
              {"padding", std::string("same")}},
             {"stride"}},
            {}};
  }
};
using GraphRecords = ::testing::Types<crawl::GraphOperator, crawl::ModuleGraph,
                                      crawl::RecoveredAttributes>;
INSTANTIATE_TYPED_TEST_SUITE_P(RecoverFromGraph, FieldTableRoundTrip,
                               GraphRecords);

}  // namespace torchscan::report
