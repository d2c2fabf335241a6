#include "report/render/folded_stacks.h"

#include <string>
#include <vector>

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

constexpr char kPartialNote[] =
    "the FLOPs are partial: each value is a lower bound (the report's "
    "diagnostics name what is missing)";

TEST(FoldedOperatorFlopsTest, LinesAreSelfFlopsByModulePath) {
  absl::StatusOr<FoldedStacks> folded = FoldedOperatorFlops(SmallCnnReport());
  ASSERT_TRUE(folded.ok()) << folded.status();
  // Net: 1400 - features 1100 - pool 0 - head 280 = its own aten.add (20);
  // features: 1100 - its conv's 1100 = 0, left out, as are the zeros.
  EXPECT_EQ(
      "Net 20\n"
      "Net;features;0 1100\n"
      "Net;head 280\n",
      folded->text);
  EXPECT_EQ(std::vector<std::string>{kPartialNote}, folded->notes);
}

TEST(FoldedOperatorFlopsTest, AnalysisAndItsFlopReportGiveTheSameLines) {
  const AnalysisReport report = SmallCnnReport();
  absl::StatusOr<FoldedStacks> from_layers = FoldedOperatorFlops(report);
  absl::StatusOr<FoldedStacks> from_labels =
      FoldedOperatorFlops(report.operator_flops);
  ASSERT_TRUE(from_layers.ok()) << from_layers.status();
  ASSERT_TRUE(from_labels.ok()) << from_labels.status();
  EXPECT_EQ(from_layers->text, from_labels->text);
}

TEST(FoldedOperatorFlopsTest, FlopsOutsideEveryModuleHaveTheirOwnStack) {
  FlopReport report;
  report.total = Flops(20, "workload");
  report.by_module = {{"A", 10}, {"A.x", 4}, {"B", 5}};
  absl::StatusOr<FoldedStacks> folded = FoldedOperatorFlops(report);
  ASSERT_TRUE(folded.ok()) << folded.status();
  EXPECT_EQ(
      "(no module) 5\n"
      "A 6\n"
      "A;x 4\n"
      "B 5\n",
      folded->text);
  EXPECT_TRUE(folded->notes.empty());
}

TEST(FoldedOperatorFlopsTest, LinesAddUpToTheTotal) {
  FlopReport report;
  report.total = Flops(1000, "workload");
  report.by_module = {{"M", 900}, {"M.a", 500}, {"M.a.b", 120}, {"M.c", 300}};
  absl::StatusOr<FoldedStacks> folded = FoldedOperatorFlops(report);
  ASSERT_TRUE(folded.ok()) << folded.status();
  EXPECT_EQ(
      "(no module) 100\n"
      "M 100\n"
      "M;a 380\n"
      "M;a;b 120\n"
      "M;c 300\n",
      folded->text);
}

TEST(FoldedOperatorFlopsTest,
     ChildrenAboveTheirParentAreWrittenAsZeroWithANote) {
  // "act" is owned by the root but also called from "block"'s forward: the
  // counter puts those FLOPs in block, and act's path sits under the root.
  FlopReport report;
  report.total = Flops(30, "workload");
  report.by_module = {{"M", 30}, {"M.block", 10}, {"M.block.inner", 12}};
  absl::StatusOr<FoldedStacks> folded = FoldedOperatorFlops(report);
  ASSERT_TRUE(folded.ok()) << folded.status();
  EXPECT_EQ(
      "M 20\n"
      "M;block;inner 12\n",
      folded->text);
  EXPECT_EQ(
      std::vector<std::string>{
          "'block': its submodules hold 2 more than it (a submodule "
          "also called from outside it); its own value is written as "
          "0, so the lines add up to more than the total"},
      folded->notes);
}

TEST(FoldedOperatorFlopsTest, SeparatorsInModuleNamesAreReplaced) {
  AnalysisReport report = SmallCnnReport();
  report.layers.push_back(Layer("odd;name", "Identity"));
  report.layer_operator_flops->push_back(
      CallOperatorFlops("odd;name", Flops(7), {}));
  absl::StatusOr<FoldedStacks> folded = FoldedOperatorFlops(report);
  ASSERT_TRUE(folded.ok()) << folded.status();
  EXPECT_NE(folded->text.find("\nNet;odd_name 7\n"), std::string::npos)
      << folded->text;
}

TEST(FoldedOperatorFlopsTest, StructureModeHasNoOperatorFlops) {
  absl::StatusOr<AnalysisReport> report = ParseAnalysisReport(
      report::testing::ReadTestData("upstream/reports/structure_mode.json"));
  ASSERT_TRUE(report.ok()) << report.status();
  absl::StatusOr<FoldedStacks> folded = FoldedOperatorFlops(*report);
  EXPECT_EQ(absl::StatusCode::kFailedPrecondition, folded.status().code());
  EXPECT_EQ(
      "the report has no operator FLOPs (it was made with mode='structure')",
      folded.status().message());
}

TEST(FoldedOperatorFlopsDiffTest, EveryStackOfEitherSideWithBothValues) {
  const AnalysisReport before = SmallCnnReport();
  AnalysisReport after = SmallCnnReport();
  // A head twice as wide, and a new dropout with no FLOPs.
  (*after.layer_operator_flops)[0].total = PartialFlops(1680);
  (*after.layer_operator_flops)[5].total = Flops(560);
  after.layers.push_back(Layer("drop", "Dropout"));
  after.layer_operator_flops->push_back(
      CallOperatorFlops("drop", Flops(0), {}));
  after.operator_flops.total = PartialFlops(1680, "workload");

  absl::StatusOr<FoldedStacks> folded = FoldedOperatorFlopsDiff(before, after);
  ASSERT_TRUE(folded.ok()) << folded.status();
  EXPECT_EQ(
      "Net 20 20\n"
      "Net;features;0 1100 1100\n"
      "Net;head 280 560\n",
      folded->text);
  EXPECT_EQ((std::vector<std::string>{absl::StrCat("before: ", kPartialNote),
                                      absl::StrCat("after: ", kPartialNote)}),
            folded->notes);
}

}  // namespace
}  // namespace torchscan::report::render
