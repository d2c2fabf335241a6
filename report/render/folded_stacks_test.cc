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
  EXPECT_TRUE(folded->partial);
  EXPECT_TRUE(folded->notes.empty());
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
  EXPECT_FALSE(folded->partial);
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
     ASubmoduleCalledByAnEnclosingModuleIsTakenFromIt) {
  // M's forward calls block (no FLOPs of its own) and self.block.inner
  // directly (12), and has 8 of its own: the 12 count in M and in
  // block.inner, not in block.
  FlopReport report;
  report.total = Flops(20, "workload");
  report.by_module = {{"M", 20}, {"M.block", 0}, {"M.block.inner", 12}};
  absl::StatusOr<FoldedStacks> folded = FoldedOperatorFlops(report);
  ASSERT_TRUE(folded.ok()) << folded.status();
  EXPECT_EQ(
      "M 8\n"
      "M;block;inner 12\n",
      folded->text);
  EXPECT_EQ(
      std::vector<std::string>{
          "'block': its submodules hold 12 more than it (a submodule "
          "called from outside it); the difference is taken from the "
          "enclosing modules' own values"},
      folded->notes);
}

TEST(FoldedOperatorFlopsTest, TheLinesKeepTheTotalWhenOwnFlopsHideTheCall) {
  // As above, but block has 10 FLOPs of its own: only 2 of inner's 12 show
  // as a difference, so 10 of M's own stay in block's place. Inclusive
  // numbers cannot tell them apart; the lines still add up to 30.
  FlopReport report;
  report.total = Flops(30, "workload");
  report.by_module = {{"M", 30}, {"M.block", 10}, {"M.block.inner", 12}};
  absl::StatusOr<FoldedStacks> folded = FoldedOperatorFlops(report);
  ASSERT_TRUE(folded.ok()) << folded.status();
  EXPECT_EQ(
      "M 18\n"
      "M;block;inner 12\n",
      folded->text);
  EXPECT_EQ(1u, folded->notes.size());
}

TEST(FoldedOperatorFlopsTest, WhatNoEnclosingModuleHoldsIsNamed) {
  // A sibling, not an ancestor, called a.shared: the enclosing modules'
  // own values cannot cover the difference.
  FlopReport report;
  report.total = Flops(10, "workload");
  report.by_module = {{"M", 10}, {"M.a", 0}, {"M.a.shared", 6}, {"M.b", 10}};
  absl::StatusOr<FoldedStacks> folded = FoldedOperatorFlops(report);
  ASSERT_TRUE(folded.ok()) << folded.status();
  EXPECT_EQ(
      "M;a;shared 6\n"
      "M;b 10\n",
      folded->text);
  ASSERT_EQ(2u, folded->notes.size());
  EXPECT_EQ(
      "'M': 6 counted in its submodules could not be taken from any "
      "enclosing module, so the lines add up to that much more than the "
      "total",
      folded->notes[1]);
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
  EXPECT_TRUE(folded->partial);
}

}  // namespace
}  // namespace torchscan::report::render
