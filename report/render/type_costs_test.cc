#include "report/render/type_costs.h"

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "report/render/render_test_support.h"

namespace torchscan::report::render {
namespace {

using testing::CallOperatorFlops;
using testing::Flops;
using testing::Layer;
using testing::PartialFlops;
using testing::SmallCnnReport;

TypeCosts CostsOrFail(const AnalysisReport& report) {
  absl::StatusOr<TypeCosts> costs = CostsByModuleType(report);
  EXPECT_TRUE(costs.ok()) << costs.status();
  return costs.ok() ? *costs : TypeCosts{};
}

TEST(CostsByModuleTypeTest, SmallCnnByClass) {
  const TypeCosts costs = CostsOrFail(SmallCnnReport());
  std::vector<std::string> order;
  for (const TypeCost& type : costs.types) order.push_back(type.type);
  // 1400, then 1100 twice (by name), 280, then the zeros.
  EXPECT_EQ((std::vector<std::string>{"Net", "Conv2d", "Sequential", "Linear",
                                      "AdaptiveAvgPool2d", "ReLU"}),
            order);
  const TypeCost& net = costs.types[0];
  EXPECT_EQ(Count{1400}, net.flops);
  EXPECT_EQ(Count{20}, net.self_flops);  // Net.forward's own aten.add
  EXPECT_EQ(MetricStatus::kPartial, net.status);
  const TypeCost& conv = costs.types[1];
  EXPECT_EQ(1, conv.modules);
  EXPECT_EQ(Count{1100}, conv.flops);
  EXPECT_EQ(Count{1100}, conv.self_flops);
  EXPECT_EQ(MetricStatus::kComplete, conv.status);
  EXPECT_EQ(Count{0},
            costs.types[2].self_flops);  // features runs no operator itself
  EXPECT_EQ((std::map<std::string, Count>{{"aten.addmm", 280}}),
            costs.types[3].by_operator);
  // Each operator's self FLOPs by type add up to its total.
  EXPECT_EQ((std::map<std::string, Count>{
                {"Conv2d", 1100}, {"Net", 0}, {"Sequential", 0}}),
            costs.operator_types.at("aten.convolution"));
  EXPECT_EQ((std::map<std::string, Count>{{"Linear", 280}, {"Net", 0}}),
            costs.operator_types.at("aten.addmm"));
  EXPECT_EQ((std::map<std::string, Count>{{"Net", 20}}),
            costs.operator_types.at("aten.add"));
}

TEST(CostsByModuleTypeTest, NestedModulesOfOneTypeCountOnce) {
  AnalysisReport report;
  report.layers = {Layer("", "Net"), Layer("a", "Sequential"),
                   Layer("a.b", "Sequential"), Layer("a.b.c", "Linear")};
  report.layer_operator_flops = std::vector<LayerOperatorFlops>{
      CallOperatorFlops("", Flops(10), {{"aten.mm", 10}}),
      CallOperatorFlops("a", Flops(10), {{"aten.mm", 10}}),
      CallOperatorFlops("a.b", Flops(10), {{"aten.mm", 10}}),
      CallOperatorFlops("a.b.c", Flops(8), {{"aten.mm", 8}}),
  };
  const TypeCosts costs = CostsOrFail(report);
  ASSERT_EQ(3u, costs.types.size());
  const TypeCost& sequential = costs.types[1];
  EXPECT_EQ("Sequential", sequential.type);
  EXPECT_EQ(2, sequential.modules);
  EXPECT_EQ(Count{10}, sequential.flops);          // a, not a + a.b
  EXPECT_EQ(Count{2}, sequential.self_flops);      // a.b ran 2 outside a.b.c
  EXPECT_EQ(Count{0}, costs.types[0].self_flops);  // Net
  EXPECT_EQ(Count{8}, costs.types[2].self_flops);  // Linear
}

TEST(CostsByModuleTypeTest, CallsOfOnePathAddUpAndAParentHoldingLessIsZero) {
  // A shared activation called twice (two calls of one path); the root
  // holds less aten.mm than "x" (x is also called from outside the model's
  // forward): the root's own aten.mm is 0, not negative.
  AnalysisReport report;
  report.layers = {Layer("", "Net"), Layer("act", "ReLU"),
                   Layer("act", "ReLU", 1), Layer("x", "Linear")};
  report.layer_operator_flops = std::vector<LayerOperatorFlops>{
      CallOperatorFlops("", PartialFlops(5), {{"aten.mm", 5}}),
      CallOperatorFlops("act", Flops(3), {{"aten.relu", 3}}),
      CallOperatorFlops("act", Flops(4), {{"aten.relu", 4}}, 1),
      CallOperatorFlops("x", Flops(8), {{"aten.mm", 8}}),
  };
  const TypeCosts costs = CostsOrFail(report);
  ASSERT_EQ(3u, costs.types.size());
  EXPECT_EQ("Linear", costs.types[0].type);
  EXPECT_EQ("ReLU", costs.types[1].type);
  EXPECT_EQ(2, costs.types[1].calls);
  EXPECT_EQ(Count{7}, costs.types[1].flops);
  EXPECT_EQ(Count{0}, costs.types[2].self_flops);
  EXPECT_EQ(MetricStatus::kPartial, costs.types[2].status);
}

TEST(CostsByModuleTypeTest, NeedsLayerOperatorFlops) {
  AnalysisReport report = SmallCnnReport();
  report.layer_operator_flops.reset();
  EXPECT_EQ(absl::StatusCode::kInvalidArgument,
            CostsByModuleType(report).status().code());
}

}  // namespace
}  // namespace torchscan::report::render
