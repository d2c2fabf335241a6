#include "report/render/html_report.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "report/compare.h"
#include "report/render/render_test_support.h"
#include "report/test_support.h"

namespace torchscan::report::render {
namespace {

using testing::CallOperatorFlops;
using testing::Flops;
using testing::Layer;
using testing::PartialFlops;
using testing::SmallCnnReport;

constexpr char kDataOpen[] =
    "<script type=\"application/json\" id=\"torchscan-data\">";

std::string RenderOrFail(const AnalysisReport& report) {
  absl::StatusOr<std::string> html = RenderHtml(report);
  EXPECT_TRUE(html.ok()) << html.status();
  return html.ok() ? *html : "";
}

// The page's chart data, parsed back.
Json ChartData(const std::string& html) {
  const std::size_t open = html.find(kDataOpen);
  EXPECT_NE(open, std::string::npos);
  const std::size_t begin = open + std::string(kDataOpen).size();
  const std::size_t end = html.find("</script>", begin);
  return report::testing::ParseOrFail(html.substr(begin, end - begin));
}

const Json* Chart(const Json& data, absl::string_view id) {
  for (const Json& chart : data["charts"]) {
    if (chart["id"] == std::string(id)) return &chart;
  }
  ADD_FAILURE() << "no chart " << id;
  return nullptr;
}

// The HTML of the table row whose `attribute` is `value`.
std::string Row(const std::string& html, absl::string_view attribute,
                absl::string_view value) {
  const std::string key = absl::StrCat("<tr ", attribute, "=\"", value, "\"");
  const std::size_t begin = html.find(key);
  if (begin == std::string::npos) return "";
  return html.substr(begin, html.find("</tr>", begin) - begin);
}

TEST(RenderHtmlTest, IsOneSelfContainedPage) {
  const std::string html = RenderOrFail(SmallCnnReport());
  EXPECT_TRUE(absl::StartsWith(html, "<!DOCTYPE html>"));
  for (absl::string_view external :
       {"http:", "https:", "src=", "<link", "@import", "url("}) {
    EXPECT_FALSE(absl::StrContains(html, external)) << external;
  }
  EXPECT_TRUE(absl::StrContains(html, "<style>"));
  EXPECT_TRUE(absl::StrContains(html, "JSON.parse"));
  EXPECT_TRUE(absl::StrContains(html, "<title>__main__.Net</title>"));
}

TEST(RenderHtmlTest, ChartsCarryEachModulesFlopsAndStatus) {
  const Json data = ChartData(RenderOrFail(SmallCnnReport()));
  const Json* module_flops = Chart(data, "module_flops");
  const Json* operator_flops = Chart(data, "operator_flops");
  ASSERT_NE(module_flops, nullptr);
  ASSERT_NE(operator_flops, nullptr);
  // One scale for both: the larger top bar (module formulas, 1500).
  EXPECT_EQ("1500", (*module_flops)["scale"]);
  EXPECT_EQ("1500", (*operator_flops)["scale"]);
  const Json& modules = (*module_flops)["root"];
  EXPECT_EQ("Net", modules["name"]);
  EXPECT_EQ("1500", modules["value"]);
  EXPECT_EQ("partial", modules["status"]);
  EXPECT_EQ("features", modules["children"][0]["name"]);
  EXPECT_EQ("1200", modules["children"][0]["value"]);
  EXPECT_EQ("complete", modules["children"][0]["status"]);
  EXPECT_EQ("unavailable", modules["children"][1]["status"]);
  const Json& operators = (*operator_flops)["root"];
  EXPECT_EQ("1400", operators["value"]);
  EXPECT_EQ("1100", operators["children"][0]["children"][0]["value"]);
  EXPECT_EQ("features.0", operators["children"][0]["children"][0]["path"]);
  EXPECT_EQ("Conv2d", operators["children"][0]["children"][0]["type"]);
  EXPECT_EQ("280", operators["children"][2]["value"]);

  const Json* parameters = Chart(data, "parameters");
  ASSERT_NE(parameters, nullptr);
  EXPECT_EQ("124", (*parameters)["root"]["value"]);
  // Parameters and bytes are different units: each on its own scale.
  EXPECT_EQ("124", (*parameters)["scale"]);
  EXPECT_EQ("parameters", (*parameters)["unit"]);
  EXPECT_EQ("512", (*Chart(data, "bytes"))["root"]["value"]);
}

TEST(RenderHtmlTest, TotalsShowLowerBoundsAsSuch) {
  const std::string html = RenderOrFail(SmallCnnReport());
  const std::string operators = Row(html, "data-metric", "operator_flops");
  EXPECT_TRUE(absl::StrContains(operators, ">\u2265 1,400<")) << operators;
  EXPECT_TRUE(absl::StrContains(operators, "partial (lower bound)"));
  EXPECT_TRUE(
      absl::StrContains(Row(html, "data-metric", "parameters"), ">124<"));
  EXPECT_TRUE(absl::StrContains(Row(html, "data-metric", "dmas"), ">n/a<"));
}

TEST(RenderHtmlTest, LayerRowsHoldParametersMemoryAndFlops) {
  const std::string html = RenderOrFail(SmallCnnReport());
  const std::string head = Row(html, "data-path", "head");
  // Parameters, parameter + buffer bytes, module FLOPs, MACs, operators.
  for (absl::string_view cell : {">40<", ">176<", ">300<", ">150<", ">280<"}) {
    EXPECT_TRUE(absl::StrContains(head, cell)) << cell << " in " << head;
  }
  EXPECT_TRUE(
      absl::StrContains(Row(html, "data-path", "features.1"), ">\u2265 0<"));
}

TEST(RenderHtmlTest, OperatorsAreRankedByFlopsThenUncountedAndIgnored) {
  const std::string html = RenderOrFail(SmallCnnReport());
  const std::size_t convolution =
      html.find("data-operator=\"aten.convolution\"");
  const std::size_t addmm = html.find("data-operator=\"aten.addmm\"");
  const std::size_t add = html.find("data-operator=\"aten.add\"");
  const std::size_t relu = html.find("data-operator=\"aten.relu\"");
  ASSERT_NE(relu, std::string::npos);
  EXPECT_LT(convolution, addmm);
  EXPECT_LT(addmm, add);
  EXPECT_LT(add, relu);
  // 1100 of 1400 known FLOPs.
  EXPECT_TRUE(absl::StrContains(Row(html, "data-operator", "aten.convolution"),
                                ">78.6%<"));
  EXPECT_TRUE(absl::StrContains(Row(html, "data-operator", "aten.relu"),
                                "not counted"));
  EXPECT_TRUE(
      absl::StrContains(Row(html, "data-operator", "aten.view"),
                        "ignored (1 calls): Metadata-only tensor view."));
}

TEST(RenderHtmlTest, DiagnosticsAreGroupedByCode) {
  const std::string html = RenderOrFail(SmallCnnReport());
  EXPECT_TRUE(absl::StrContains(html, "<h2>Diagnostics (4)</h2>"));
  EXPECT_TRUE(absl::StrContains(
      html,
      "<code>unsupported_module_metric</code>: <span class=\"count\">3</span> "
      "on 1 module (dmas, macs, module_flops)"));
}

TEST(RenderHtmlTest, MarkupInModuleNamesStaysText) {
  AnalysisReport report = SmallCnnReport();
  const std::string evil = "</script><script>alert(1)</script>";
  report.layers.push_back(Layer(evil, "Identity"));
  report.layer_operator_flops->push_back(CallOperatorFlops(evil, Flops(0), {}));
  const std::string html = RenderOrFail(report);
  EXPECT_FALSE(absl::StrContains(html, "<script>alert")) << html;
  const Json data = ChartData(html);
  EXPECT_EQ(evil,
            (*Chart(data, "operator_flops"))["root"]["children"][3]["path"]);
}

TEST(RenderHtmlTest, StructureModeSaysFlopsWereNotComputed) {
  absl::StatusOr<AnalysisReport> report = ParseAnalysisReport(
      report::testing::ReadTestData("upstream/reports/structure_mode.json"));
  ASSERT_TRUE(report.ok()) << report.status();
  const std::string html = RenderOrFail(*report);
  EXPECT_TRUE(absl::StrContains(html, "the analysis ran in structure mode"));
  const Json data = ChartData(html);
  ASSERT_EQ(2u, data["charts"].size());
  EXPECT_EQ("parameters", data["charts"][0]["id"]);
}

TEST(RenderHtmlTest, FlopReportShowsTheWorkloadAboveItsRoots) {
  FlopReport report;
  report.total = PartialFlops(20, "workload");
  report.by_module = {{"A", 10}, {"A.x", 4}, {"B", 5}};
  report.by_operator = {{"aten.mm", 20}};
  absl::StatusOr<std::string> html = RenderHtml(report);
  ASSERT_TRUE(html.ok()) << html.status();
  const Json data = ChartData(*html);
  ASSERT_EQ(1u, data["charts"].size());
  const Json& root = data["charts"][0]["root"];
  EXPECT_EQ("(workload)", root["name"]);
  EXPECT_EQ("20", root["value"]);
  EXPECT_EQ("partial", root["status"]);
  EXPECT_EQ("A", root["children"][0]["name"]);
  EXPECT_EQ("partial", root["children"][0]["status"]);
  EXPECT_EQ("B", root["children"][1]["name"]);
  EXPECT_TRUE(absl::StrContains(*html, "<title>Operator FLOPs</title>"));
}

// Before: SmallCnn. After: a head twice as wide, no pool, a new dropout.
AnalysisReport WiderHead() {
  AnalysisReport after = SmallCnnReport();
  after.layers.erase(after.layers.begin() + 4);
  after.layer_operator_flops->erase(after.layer_operator_flops->begin() + 4);
  testing::SetModuleFormulas(after.layers[4], 600, 300);
  (*after.layer_operator_flops)[0].total = PartialFlops(1680);
  (*after.layer_operator_flops)[4].total = Flops(560);
  after.layers.push_back(Layer("drop", "Dropout"));
  after.layer_operator_flops->push_back(
      CallOperatorFlops("drop", Flops(0), {}));
  after.operator_flops.total = PartialFlops(1680, "workload");
  testing::SetTotals(after);
  return after;
}

TEST(RenderHtmlTest, CompareOutlinesChangedAddedAndRemovedModules) {
  const AnalysisReport before = SmallCnnReport();
  const AnalysisReport after = WiderHead();
  absl::StatusOr<ReportDiff> diff = CompareReports(before, after);
  ASSERT_TRUE(diff.ok()) << diff.status();
  absl::StatusOr<std::string> html = RenderHtml(*diff, &before, &after);
  ASSERT_TRUE(html.ok()) << html.status();

  const Json data = ChartData(*html);
  const Json* old_modules = Chart(data, "before_module_flops");
  const Json* new_modules = Chart(data, "after_module_flops");
  ASSERT_NE(old_modules, nullptr);
  ASSERT_NE(new_modules, nullptr);
  // Both on the larger side's scale: 1000 + 200 + 600.
  EXPECT_EQ("1800", (*old_modules)["scale"]);
  EXPECT_EQ("1800", (*new_modules)["scale"]);
  EXPECT_EQ("removed", (*old_modules)["root"]["children"][1]["mark"]);
  EXPECT_EQ("changed", (*old_modules)["root"]["children"][2]["mark"]);
  EXPECT_EQ("changed", (*new_modules)["root"]["children"][1]["mark"]);
  EXPECT_EQ("added", (*new_modules)["root"]["children"][2]["mark"]);
  EXPECT_FALSE((*new_modules)["root"]["children"][0].contains("mark"));

  EXPECT_TRUE(absl::StrContains(*html, "1 changed, 1 added, 1 removed"));
  const std::string macs = Row(*html, "data-metric", "macs");
  EXPECT_TRUE(absl::StrContains(macs, ">650<") &&
              absl::StrContains(macs, ">800<") &&
              absl::StrContains(macs, ">+150<"))
      << macs;
}

TEST(RenderHtmlTest, CompareWithoutReportsShowsTheTables) {
  absl::StatusOr<ReportDiff> diff =
      CompareReports(SmallCnnReport(), WiderHead());
  ASSERT_TRUE(diff.ok()) << diff.status();
  absl::StatusOr<std::string> html = RenderHtml(*diff, nullptr, nullptr);
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_TRUE(ChartData(*html)["charts"].empty());
  EXPECT_TRUE(
      absl::StrContains(*html, "<tr class=\"added\" data-path=\"drop\">"));
  EXPECT_TRUE(
      absl::StrContains(*html, "<tr class=\"removed\" data-path=\"pool\">"));
}

TEST(RenderHtmlTest, CompareRejectsReportsTheDiffDoesNotComeFrom) {
  const AnalysisReport before = SmallCnnReport();
  const AnalysisReport after = WiderHead();
  absl::StatusOr<ReportDiff> diff = CompareReports(before, after);
  ASSERT_TRUE(diff.ok()) << diff.status();
  absl::StatusOr<std::string> swapped = RenderHtml(*diff, &after, &before);
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, swapped.status().code());
  EXPECT_EQ(
      "the before and after reports are not the ones this diff was computed "
      "from (compare_reports(before, after) differs)",
      swapped.status().message());
  EXPECT_EQ(absl::StatusCode::kInvalidArgument,
            RenderHtml(*diff, &before, nullptr).status().code());
}

}  // namespace
}  // namespace torchscan::report::render
