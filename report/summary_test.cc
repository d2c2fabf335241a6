#include "report/summary.h"

#include "gtest/gtest.h"
#include "report/test_support.h"

namespace torchscan::report {
namespace {

using testing::ReadTestData;
using testing::UnavailableMetric;

AnalysisReport Upstream(absl::string_view name) {
  absl::StatusOr<AnalysisReport> report = ParseAnalysisReport(
      ReadTestData(absl::StrCat("upstream/reports/", name, ".json")));
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *std::move(report) : AnalysisReport();
}

// Reference 8.7, first example (also the seed README's table).
TEST(SummaryTest, Conv2dTableIsTheReferenceText) {
  absl::StatusOr<std::string> text = RenderSummary(Upstream("conv2d_3_8_3"));
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, ReadTestData("reference/summary_conv2d.txt"));
}

// Reference 8.7: with both receptive-field flags the width is 118.
TEST(SummaryTest, Conv2dReceptiveFieldRow) {
  SummaryOptions options;
  options.receptive_field = true;
  options.effective_rf_stats = true;
  absl::StatusOr<std::string> text =
      RenderSummary(Upstream("conv2d_3_8_3"), options);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(text->substr(0, 119), std::string(118, '_') + "\n");
  EXPECT_NE(
      text->find("\nconv2d    Conv2d    (1, 8, 30, 30)    224        True   "
                 "      3                  1                   0" +
                 std::string(16, ' ') + "\n"),
      std::string::npos);
}

// Reference 8.7, second example.
TEST(SummaryTest, SequentialWithReceptiveFieldIsTheReferenceText) {
  SummaryOptions options;
  options.receptive_field = true;
  absl::StatusOr<std::string> text =
      RenderSummary(Upstream("linear_relu_linear"), options);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, ReadTestData("reference/summary_linear_relu_linear_rf.txt"));
}

// tests/test_utils.py: format_name.
TEST(SummaryTest, FormatName) {
  EXPECT_EQ(FormatName("conv", 0), "conv");
  EXPECT_EQ(FormatName("conv", 1), "\u251c\u2500conv");
  EXPECT_EQ(FormatName("conv", 3), "|    |    \u2514\u2500conv");
}

// tests/test_utils.py: wrap_string.
TEST(SummaryTest, WrapString) {
  EXPECT_EQ(*WrapString("a.a.a.a.a.a.a.a.a.a", 10, "mid"), "a.a[...].a");
  EXPECT_EQ(*WrapString("a.a.a.a.a.a.a.a.a.a", 10, "end"), "a.a.a[...]");
  EXPECT_EQ(*WrapString("a.a.a", 5, "end"), "a.a.a");
  EXPECT_EQ(*WrapString("a.a.a.a.a.a", 5, std::nullopt), "a.a.a.a.a.a");
  absl::StatusOr<std::string> bad = WrapString("a.a.a.a.a.a", 5, "bogus");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "received an unexpected value of argument `mode`");
  EXPECT_TRUE(WrapString("short", 10, "bogus").ok());
  // Python slices with a negative stop (values from torchscan.utils).
  EXPECT_EQ(*WrapString("abcdefghijkl", 10, "mid"), "abcd[...].abcdefghijkl");
  EXPECT_EQ(*WrapString("abcdefghijkl", 3, "end"), "abcdefghij[...]");
  EXPECT_EQ(*WrapString("abcdefghijkl", 3, "mid"), "[...].abcdefghijkl");
}

// tests/test_utils.py: unit_scale [5].
TEST(SummaryTest, UnitScale) {
  const std::tuple<double, double, const char*> cases[] = {{3e14, 300, "T"},
                                                           {3e10, 30, "G"},
                                                           {3e7, 30, "M"},
                                                           {15e3, 15, "k"},
                                                           {500, 500, ""}};
  for (const auto& [value, scaled, prefix] : cases) {
    const ScaledValue result = UnitScale(value);
    EXPECT_DOUBLE_EQ(result.value, scaled);
    EXPECT_EQ(result.prefix, prefix);
  }
  EXPECT_EQ(UnitScale(-5e6).prefix, "");
}

// tests/test_utils.py:
// format_info_handles_nested_outputs_and_unavailable_totals.
TEST(SummaryTest, NestedOutputsAndUnavailableTotals) {
  AnalysisReport report = Upstream("conv2d_3_8_3");
  report.layers[0].output = ValueMetadata::Mapping(
      "dict",
      {MappingItem{
          std::string("features"), "str",
          ValueMetadata::Tuple(
              {ValueMetadata::Tensor({1}, "torch.float32", "cpu", false),
               ValueMetadata::List({ValueMetadata::None()})})}});
  report.totals.Set("module_flops", UnavailableMetric("FLOPs"));
  absl::StatusOr<std::string> text = FormatInfo(report, "mid", true);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_NE(text->find("{((1,), [none])}"), std::string::npos);
  EXPECT_NE(text->find("Receptive field"), std::string::npos);
  EXPECT_NE(text->find("\nModule-formula forward FLOPs: unavailable\n"),
            std::string::npos);
  EXPECT_EQ(AggregateInfo(report, -1).status().message(),
            "max_depth must be non-negative.");
}

TEST(SummaryTest, MaxDepthFiltersAndChecks) {
  const AnalysisReport report = Upstream("linear_relu_linear");
  absl::StatusOr<AnalysisReport> top = AggregateInfo(report, 0);
  ASSERT_TRUE(top.ok());
  EXPECT_EQ(top->layers.size(), 1u);
  EXPECT_EQ(top->totals, report.totals);
  EXPECT_EQ(AggregateInfo(report, 2).status().message(),
            "The `max_depth` argument cannot be higher than module depth.");
  AnalysisReport empty = report;
  empty.layers.clear();
  EXPECT_TRUE(AggregateInfo(empty, 5).ok());
}

TEST(SummaryTest, MissingTotalsAndAbsurdDepthsAreErrors) {
  AnalysisReport report = Upstream("conv2d_3_8_3");
  report.layers[0].depth = 1000000;
  EXPECT_EQ(FormatInfo(report).status().message(),
            "layers[0].depth: is too deep to render (at most 10000)");
  AnalysisReport no_totals = Upstream("conv2d_3_8_3");
  no_totals.totals = MetricMap();
  EXPECT_EQ(FormatInfo(no_totals).status().message(),
            "totals.trainable_parameters: is missing");
}

// Deviation: TorchScan 0.2.0 raises ValueError for padding="same"; we show it.
TEST(SummaryTest, StringPaddingIsShownInsteadOfRaising) {
  SummaryOptions options;
  options.receptive_field = true;
  options.effective_rf_stats = true;
  absl::StatusOr<std::string> text =
      RenderSummary(Upstream("conv_same_padding"), options);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_NE(
      text->find(
          "    3                  1                   same             \n"),
      std::string::npos);
}

}  // namespace
}  // namespace torchscan::report
