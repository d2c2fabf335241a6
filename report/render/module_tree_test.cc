#include "report/render/module_tree.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "report/render/render_test_support.h"
#include "report/test_support.h"

namespace torchscan::report::render {
namespace {

using testing::CallOperatorFlops;
using testing::Flops;
using testing::Layer;
using testing::PartialFlops;
using testing::SmallCnnReport;

std::vector<std::string> ChildNames(const ModuleNode& node) {
  std::vector<std::string> names;
  for (const ModuleNode& child : node.children) names.push_back(child.name);
  return names;
}

TEST(OperatorFlopsTreeTest, NodesHoldEachPathsInclusiveFlopsWithStatus) {
  absl::StatusOr<ModuleTree> tree = OperatorFlopsTree(SmallCnnReport());
  ASSERT_TRUE(tree.ok()) << tree.status();
  ASSERT_EQ(tree->roots.size(), 1u);
  const ModuleNode& root = tree->roots[0];
  EXPECT_EQ("Net", root.name);
  EXPECT_EQ(Count(1400), root.value);
  EXPECT_EQ(MetricStatus::kPartial, root.status);
  EXPECT_EQ((std::vector<std::string>{"features", "pool", "head"}),
            ChildNames(root));
  const ModuleNode& features = root.children[0];
  EXPECT_EQ(Count(1100), features.value);
  EXPECT_EQ(MetricStatus::kPartial, features.status);
  EXPECT_EQ("features.0", features.children[0].path);
  EXPECT_EQ("Conv2d", features.children[0].type);
  EXPECT_EQ(MetricStatus::kComplete, features.children[0].status);
  EXPECT_EQ(Count(280), root.children[2].value);
  EXPECT_EQ(Count(1400), tree->total);
  EXPECT_EQ(MetricStatus::kPartial, tree->status);
  EXPECT_EQ("FLOPs", tree->unit);
}

TEST(OperatorFlopsTreeTest, SumsEveryCallOfAPath) {
  AnalysisReport report = SmallCnnReport();
  report.layers.push_back(Layer("head", "Linear", 1));
  report.layer_operator_flops->push_back(
      CallOperatorFlops("head", Flops(280), {{"aten.addmm", 280}}, 1));
  (*report.layer_operator_flops)[0].total = PartialFlops(1680);
  report.operator_flops.total = PartialFlops(1680, "workload");

  absl::StatusOr<ModuleTree> tree = OperatorFlopsTree(report);
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_EQ(Count(2 * 280), tree->roots[0].children[2].value);
  EXPECT_EQ(Count(1680), tree->total);
}

TEST(OperatorFlopsTreeTest, PathsNeverCalledThemselvesAddUpTheirChildren) {
  AnalysisReport report = SmallCnnReport();
  // Net.forward calls self.block.conv directly: "block" has no call.
  report.layers.push_back(Layer("block.conv", "Conv2d"));
  report.layer_operator_flops->push_back(
      CallOperatorFlops("block.conv", Flops(70), {}));

  absl::StatusOr<ModuleTree> tree = OperatorFlopsTree(report);
  ASSERT_TRUE(tree.ok()) << tree.status();
  const ModuleNode& block = tree->roots[0].children.back();
  EXPECT_EQ("block", block.path);
  EXPECT_EQ("", block.type);
  EXPECT_EQ(Count(70), block.value);
  EXPECT_EQ(MetricStatus::kComplete, block.status);
}

TEST(OperatorFlopsTreeTest, WithoutLayerCallsUsesTheFlopReportsLabels) {
  // TorchScan 0.2's report of SharedBlock: by_module only.
  absl::StatusOr<AnalysisReport> report = ParseAnalysisReport(
      report::testing::ReadTestData("upstream/reports/shared_module.json"));
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_FALSE(report->layer_operator_flops.has_value());

  absl::StatusOr<ModuleTree> tree = OperatorFlopsTree(*report);
  ASSERT_TRUE(tree.ok()) << tree.status();
  ASSERT_EQ(tree->roots.size(), 1u);
  const ModuleNode& root = tree->roots[0];
  EXPECT_EQ("SharedBlock", root.name);
  EXPECT_EQ(Count(96), root.value);
  // The total is partial, so no module's count is known to be exact.
  EXPECT_EQ(MetricStatus::kPartial, root.status);
  EXPECT_EQ((std::vector<std::string>{"fc", "tied"}), ChildNames(root));
  EXPECT_EQ("Linear", root.children[0].type);
  EXPECT_EQ(Count(64), root.children[0].value);
  EXPECT_EQ(MetricStatus::kPartial, root.children[1].status);
}

TEST(OperatorFlopsTreeTest, FlopReportKeepsEveryRootAndTheWorkloadTotal) {
  FlopReport report;
  report.total = Flops(20, "workload");
  report.by_module = {{"A", 10}, {"A.x", 4}, {"B", 5}};

  absl::StatusOr<ModuleTree> tree = OperatorFlopsTree(report);
  ASSERT_TRUE(tree.ok()) << tree.status();
  ASSERT_EQ(tree->roots.size(), 2u);
  EXPECT_EQ("A", tree->roots[0].name);
  EXPECT_EQ("", tree->roots[0].path);
  EXPECT_EQ(Count(10), tree->roots[0].value);
  EXPECT_EQ("x", tree->roots[0].children[0].path);
  EXPECT_EQ(MetricStatus::kComplete, tree->roots[0].children[0].status);
  EXPECT_EQ(Count(5), tree->roots[1].value);
  EXPECT_EQ(Count(20), tree->total);
}

TEST(OperatorFlopsTreeTest, AnEmptyAnalysisIsAnError) {
  AnalysisReport report = SmallCnnReport();
  report.layers.clear();
  absl::StatusOr<ModuleTree> tree = OperatorFlopsTree(report);
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, tree.status().code());
  EXPECT_EQ("the report has no layers", tree.status().message());
}

TEST(OperatorFlopsTreeTest, PathsDeeperThanTheLimitAreAnError) {
  AnalysisReport report = SmallCnnReport();
  std::string path = "a";
  for (int i = 0; i < kMaxModuleDepth; ++i) absl::StrAppend(&path, ".a");
  report.layers.push_back(Layer(path, "Identity"));
  report.layer_operator_flops->push_back(CallOperatorFlops(path, Flops(1), {}));

  absl::StatusOr<ModuleTree> tree = OperatorFlopsTree(report);
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, tree.status().code());
  EXPECT_TRUE(absl::StrContains(tree.status().message(),
                                "is nested deeper than 1000 levels"))
      << tree.status();

  report.layers.pop_back();
  report.layer_operator_flops->pop_back();
  path.resize(path.size() - 2);  // 1000 levels below the root: accepted
  report.layers.push_back(Layer(path, "Identity"));
  EXPECT_TRUE(OperatorFlopsTree(report).ok());
}

TEST(ModuleFormulaTreeTest,
     LeafFormulasAddUpAndUnavailableLeavesMakeParentsPartial) {
  absl::StatusOr<ModuleTree> tree =
      ModuleFormulaTree(SmallCnnReport(), "module_flops");
  ASSERT_TRUE(tree.ok()) << tree.status();
  const ModuleNode& root = tree->roots[0];
  EXPECT_EQ(Count(1000 + 200 + 300), root.value);
  EXPECT_EQ(MetricStatus::kPartial, root.status);
  EXPECT_EQ(Count(1200), root.children[0].value);
  EXPECT_EQ(MetricStatus::kComplete, root.children[0].status);
  EXPECT_EQ(MetricStatus::kUnavailable, root.children[1].status);
  EXPECT_EQ(Count(0), root.children[1].value);
  EXPECT_EQ(Count(1500), tree->total);
  EXPECT_EQ("FLOPs", tree->unit);
}

TEST(ModuleFormulaTreeTest, ANonIntegerValueIsAnErrorNamingTheLayer) {
  AnalysisReport report = SmallCnnReport();
  report.layers[2].metrics.Set(
      "module_flops",
      MetricResult::Complete(1.5, {"FLOPs", "module_call", "custom"}));
  absl::StatusOr<ModuleTree> tree = ModuleFormulaTree(report, "module_flops");
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, tree.status().code());
  EXPECT_EQ(
      "layers[2].metrics.module_flops: expected an integer count, got 1.5",
      tree.status().message());
}

TEST(ParameterTreeTest, ParametersAndBytesAddUpTheTree) {
  absl::StatusOr<ModuleTree> parameters = ParameterTree(SmallCnnReport());
  ASSERT_TRUE(parameters.ok()) << parameters.status();
  EXPECT_EQ(Count(84 + 40), parameters->total);
  EXPECT_EQ(Count(84), parameters->roots[0].children[0].value);
  EXPECT_EQ(MetricStatus::kComplete, parameters->status);

  absl::StatusOr<ModuleTree> bytes = TensorBytesTree(SmallCnnReport());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(Count(336 + 160 + 16), bytes->total);
  EXPECT_EQ(Count(160 + 16), bytes->roots[0].children[2].value);
}

TEST(HasOperatorFlopsTest, StructureModeHasNeither) {
  absl::StatusOr<AnalysisReport> report = ParseAnalysisReport(
      report::testing::ReadTestData("upstream/reports/structure_mode.json"));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(HasOperatorFlops(*report));
  EXPECT_FALSE(HasModuleFormulas(*report));
  EXPECT_TRUE(HasOperatorFlops(SmallCnnReport()));
  EXPECT_TRUE(HasModuleFormulas(SmallCnnReport()));
}

}  // namespace
}  // namespace torchscan::report::render
