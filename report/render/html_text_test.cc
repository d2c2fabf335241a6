#include "report/render/html_text.h"

#include "gtest/gtest.h"

namespace torchscan::report::render {
namespace {

TEST(EscapeHtmlTest, EscapesMarkupAndQuotes) {
  EXPECT_EQ("&lt;b a=&quot;1&quot; b=&#39;2&#39;&gt;x &amp; y&lt;/b&gt;",
            EscapeHtml("<b a=\"1\" b='2'>x & y</b>"));
}

TEST(JsonForScriptTest, NoScriptEndOrCommentCanAppear) {
  Json document = Json::object();
  document["name"] = "</script><!--&";
  EXPECT_EQ("{\"name\":\"\\u003c/script\\u003e\\u003c!--\\u0026\"}",
            JsonForScript(document));
  // And it reads back as the same text.
  absl::StatusOr<Json> parsed = ParseJson(JsonForScript(document));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(document, *parsed);
}

TEST(MetricTextTest, PartialIsALowerBoundAndUnavailableIsNotANumber) {
  const MetricKind kind{"FLOPs", "forward", "m"};
  EXPECT_EQ("1,234,567",
            MetricText(MetricResult::Complete(Count(1234567), kind)));
  EXPECT_EQ("\u2265 1,000",
            MetricText(MetricResult::Partial(Count(1000), kind)));
  EXPECT_EQ("n/a", MetricText(MetricResult::Unavailable(kind)));
  EXPECT_EQ("0.5", MetricText(MetricResult::Complete(0.5, kind)));
}

TEST(ScaledCountTest, UsesTheSummaryTablesPrefixes) {
  EXPECT_EQ("3.64 GFLOPs", ScaledCount(Count(3638342528), "FLOPs"));
  EXPECT_EQ("999 B", ScaledCount(Count(999), "B"));
  EXPECT_EQ("1.00 kB", ScaledCount(Count(1000), "B"));
  EXPECT_EQ("11.69 M parameters", ScaledCount(Count(11689512), "parameters"));
}

TEST(PercentTextTest, OneDecimalOfTheWhole) {
  EXPECT_EQ("78.6%", PercentText(1100, 1400));
  EXPECT_EQ("100.0%", PercentText(5, 5));
  EXPECT_EQ("", PercentText(5, 0));
}

}  // namespace
}  // namespace torchscan::report::render
