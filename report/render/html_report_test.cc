#include "report/render/html_report.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
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

TEST(RenderHtmlTest, ModuleFormulaChartNamesTheLayersWithoutFormulas) {
  const std::string html = RenderOrFail(SmallCnnReport());
  // 1500 of a 1500 scale: drawn, with the note under its caption.
  EXPECT_TRUE(absl::StrContains(
      html,
      "</figcaption><p class=\"chart-note\">No module formula for "
      "AdaptiveAvgPool2d (1 call): their module FLOPs are unknown"));
  EXPECT_FALSE(absl::StrContains(html, "<details class=\"chart-fold\""));
  EXPECT_NE(Chart(ChartData(html), "module_flops"), nullptr);
}

TEST(RenderHtmlTest, AChartUnderATenthOfTheScaleIsFolded) {
  AnalysisReport report = SmallCnnReport();
  testing::SetModuleFormulas(report.layers[2], 50, 25);
  testing::SetModuleFormulas(report.layers[3], 20, 0);
  testing::SetModuleFormulas(report.layers[5], 30, 15);
  testing::SetTotals(report);
  const std::string html = RenderOrFail(report);
  // 100 module-formula FLOPs on the operators' 1400.
  EXPECT_TRUE(absl::StrContains(
      html,
      "<details class=\"chart-fold\" data-chart=\"module_flops\"><summary>"
      "Module formulas: <span class=\"chart-total partial\">\u2265 100 "
      "FLOPs</span> (7.1% of the scale: folded, click to show). No module "
      "formula for AdaptiveAvgPool2d (1 call)"))
      << html;
  EXPECT_EQ("1400", (*Chart(ChartData(html), "module_flops"))["scale"]);
}

TEST(RenderHtmlTest, AnEmptyChartIsALineSayingWhy) {
  AnalysisReport report = SmallCnnReport();
  for (LayerReport& layer : report.layers) {
    if (layer.metrics.Find("module_flops") == nullptr) continue;
    layer.metrics.Set(
        "module_flops",
        MetricResult::Partial(Count{0}, {"FLOPs", "module_call",
                                         std::string(kModuleFormulaMethod)}));
  }
  testing::SetTotals(report);
  const std::string html = RenderOrFail(report);
  EXPECT_TRUE(absl::StrContains(
      html,
      "<figure class=\"chart empty-chart\" data-chart=\"module_flops\">"
      "<figcaption>Module formulas: <span class=\"chart-total partial\">"
      "\u2265 0 FLOPs</span></figcaption><p class=\"chart-note\">No module "
      "formula for AdaptiveAvgPool2d (1 call), Conv2d (1 call), Linear (1 "
      "call), ReLU (1 call):"))
      << html;
  const Json data = ChartData(html);
  for (const Json& chart : data["charts"]) {
    EXPECT_NE("module_flops", chart["id"]);  // nothing to draw
  }
}

// SmallCnn with a stack of three blocks after its head, each one Linear of
// 10 module FLOPs and 8 operator FLOPs; the last one's `last_flops`.
AnalysisReport Stacked(Count last_flops) {
  AnalysisReport report = SmallCnnReport();
  report.layers.push_back(Layer("stack", "Sequential"));
  report.layer_operator_flops->push_back(
      CallOperatorFlops("stack", Flops(16 + last_flops), {}));
  for (int i = 0; i < 3; ++i) {
    const std::string block = absl::StrCat("stack.", i);
    const Count flops = i == 2 ? last_flops : 8;
    report.layers.push_back(Layer(block, "Block"));
    report.layers.push_back(Layer(block + ".fc", "Linear"));
    testing::SetModuleFormulas(report.layers.back(), 10, 5);
    report.layer_operator_flops->push_back(
        CallOperatorFlops(block, Flops(flops), {}));
    report.layer_operator_flops->push_back(
        CallOperatorFlops(block + ".fc", Flops(flops), {}));
  }
  testing::SetTotals(report);
  return report;
}

TEST(RenderHtmlTest, IdenticalBlocksAreFoldedBehindOneRow) {
  const std::string html = RenderOrFail(Stacked(8));
  EXPECT_TRUE(absl::StrContains(
      html,
      "<tr class=\"fold\" data-fold=\"fold-7\"><td colspan=\"8\" "
      "style=\"padding-left:2.7em\"><button type=\"button\" "
      "class=\"fold-toggle\" aria-expanded=\"true\">3 \u00d7 Block, "
      "identical</button> <span class=\"fold-range\">stack.0 to stack.2, 2 "
      "rows each"))
      << html;
  // The first block stays; the other two are folded into it.
  EXPECT_FALSE(absl::StrContains(Row(html, "data-path", "stack.0.fc"),
                                 "data-folded-in"));
  for (absl::string_view path : {"stack.1", "stack.1.fc", "stack.2.fc"}) {
    EXPECT_TRUE(absl::StrContains(Row(html, "data-path", path),
                                  "data-folded-in=\"fold-7\""))
        << path;
  }
}

TEST(RenderHtmlTest, BlocksWithOtherNumbersAreNotFolded) {
  const std::string html = RenderOrFail(Stacked(9));
  EXPECT_TRUE(absl::StrContains(
      html,
      "2 \u00d7 Block, identical</button> <span class=\"fold-range\">"
      "stack.0 to stack.1, 2 rows each"));
  EXPECT_FALSE(
      absl::StrContains(Row(html, "data-path", "stack.2"), "data-folded-in"));
}

TEST(RenderHtmlTest, TableCellsCarryTheValuesTheyAreSortedBy) {
  const std::string html = RenderOrFail(SmallCnnReport());
  const std::string head = Row(html, "data-path", "head");
  // Parameters, bytes, module FLOPs, MACs, operator FLOPs; a lower bound
  // sorts by its known value, a missing one by nothing (last).
  for (absl::string_view value :
       {"data-value=\"40\">", "data-value=\"176\">", "data-value=\"300\" ",
        "data-value=\"150\" ", "data-value=\"280\" "}) {
    EXPECT_TRUE(absl::StrContains(head, value)) << value << " in " << head;
  }
  EXPECT_TRUE(absl::StrContains(Row(html, "data-path", "features"),
                                "<td class=\"num\" data-value=\"\"></td>"));
  EXPECT_TRUE(
      absl::StrContains(Row(html, "data-operator", "aten.relu"),
                        "<td class=\"num\" data-value=\"\">not counted"));
}

TEST(RenderHtmlTest, FlopsByModuleTypeAndWhereEachOperatorRan) {
  const std::string html = RenderOrFail(SmallCnnReport());
  // Conv2d: 1 module, 1 call, 1100 FLOPs, all its own: 78.6% of 1400.
  const std::string conv = Row(html, "data-type", "Conv2d");
  for (absl::string_view cell : {">1<", "data-value=\"1100\">1,100<", "78.6%<",
                                 "<td>aten.convolution 100.0%</td>"}) {
    EXPECT_TRUE(absl::StrContains(conv, cell)) << cell << " in " << conv;
  }
  // Net holds everything (partial) and ran only its aten.add itself.
  const std::string net = Row(html, "data-type", "Net");
  EXPECT_TRUE(absl::StrContains(net, ">\u2265 1,400<")) << net;
  EXPECT_TRUE(absl::StrContains(net, ">\u2265 20<")) << net;
  EXPECT_TRUE(absl::StrContains(Row(html, "data-operator", "aten.convolution"),
                                "</td><td>Conv2d 100.0%</td>"));
  EXPECT_TRUE(absl::StrContains(Row(html, "data-operator", "aten.add"),
                                "</td><td>Net 100.0%</td>"));
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

// A FlopReport with bytes: aten.mm's 1,048,576 FLOPs over 24,576 + 16,384
// bytes (25.6 per byte), a compiled graph's lower bound (3,072 bytes, no
// FLOPs of its own) and an upper bound of 5,120 + 40,960.
FlopReport ReportWithBytes() {
  FlopReport report;
  report.total = Flops(1048576, "workload");
  report.by_module = {{"Net", 1048576}};
  report.by_operator = {{"aten.mm", 1048576}};
  report.by_operator_precision = {{"aten.mm", {{"bf16", 1048576}}}};
  BytesMoved bytes;
  bytes.read = 24576 + 2048;
  bytes.written = 16384 + 1024;
  bytes.by_operator = {{"aten.mm", {24576, 16384}},
                       {std::string(kCompiledGraphOperator), {2048, 1024}}};
  bytes.by_module = {{"Net", 44032}};
  bytes.total = MetricResult::Partial(Count(44032), BytesMovedKind());
  bytes.upper_bound = MetricResult::Complete(Count(46080), UnfusedBytesKind());
  bytes.diagnostics.push_back(Diagnostic::ForOperator(
      std::string(kCompiledRegionBytes), "bytes",
      std::string(kCompiledGraphOperator), "compiled graph 0/0 ran 1 time(s)"));
  report.bytes = bytes;
  return report;
}

TEST(RenderHtmlTest, FlopReportShowsBytesBesideFlops) {
  absl::StatusOr<std::string> html = RenderHtml(ReportWithBytes());
  ASSERT_TRUE(html.ok()) << html.status();
  // Totals: the bytes a lower bound, the upper bound complete.
  EXPECT_TRUE(absl::StrContains(
      *html,
      "<tr data-metric=\"bytes\"><th>Bytes moved</th><td class=\"num "
      "partial\" data-value=\"44032\" title=\"partial (lower bound)\">"
      "\u2265 44,032</td>"));
  EXPECT_TRUE(absl::StrContains(
      *html,
      "<tr data-metric=\"bytes_upper_bound\"><th>Bytes moved, upper bound "
      "(compiled graphs unfused)</th><td class=\"num complete\" "
      "data-value=\"46080\" title=\"complete\">46,080</td>"));
  // The operator's bytes and FLOPs per byte; the compiled graph's bytes a
  // lower bound, with no FLOPs of its own.
  EXPECT_TRUE(absl::StrContains(
      *html,
      "<td class=\"num\" data-value=\"40960\">40,960</td><td class=\"num\" "
      "data-value=\"25.6\">25.60</td>"));
  EXPECT_TRUE(absl::StrContains(
      *html,
      "<td class=\"num partial\" data-value=\"3072\">\u2265 3,072</td>"));
  // The bytes by module, a chart of its own.
  const Json data = ChartData(*html);
  ASSERT_EQ(2u, data["charts"].size());
  EXPECT_EQ("bytes_moved", data["charts"][1]["id"]);
  EXPECT_EQ("B", data["charts"][1]["unit"]);
  EXPECT_EQ("44032", data["charts"][1]["root"]["value"]);
  EXPECT_EQ("partial", data["charts"][1]["root"]["status"]);
  // No device, no roofline.
  EXPECT_FALSE(absl::StrContains(*html, "id=\"roofline\""));
}

TEST(RenderHtmlTest, FlopReportWithADeviceShowsItsRoofline) {
  HtmlOptions options;
  options.roofline = RooflineDevice{"toy", {{"bf16", 1e12}}, 1e10};
  absl::StatusOr<std::string> html = RenderHtml(ReportWithBytes(), options);
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_TRUE(absl::StrContains(*html, "<h2>Roofline on toy</h2>"));
  // aten.mm is the one operator with FLOPs and bytes; hollow, as a
  // compiled graph ran (report/roofline.h: its bytes may be the graph's).
  EXPECT_TRUE(absl::StrContains(
      *html,
      "<circle class=\"point partial\" data-operator=\"aten.mm\" "
      "data-intensity=\"25.6\" data-flops-per-second=\"2.56e+11\""));
  const std::vector<absl::string_view> around =
      absl::StrSplit(*html, "<circle");
  EXPECT_EQ(2u, around.size());  // one circle
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
