#include "crawl/crawl_json.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "report/analysis_report.h"
#include "report/count.h"
#include "report/field_table.h"
#include "report/field_table_testing.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "report/metric_map.h"
#include "report/strict.h"
#include "report/test_support.h"

namespace torchscan::crawl {
namespace {

using report::Json;

// What the crawler gets back is the report's own members, in this order:
// each one's JSON is the report's.
TEST(CrawlPartsTest, WritesTheReportsComputedParts) {
  const report::AnalysisReport built = report::testing::Conv2dReportFromParts();
  const Json parts = report::ToJson(CrawlPartsOf(built));
  std::vector<std::string> keys;
  for (const auto& [key, value] : parts.items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"layer_metrics", "operator_flops",
                                            "totals", "diagnostics",
                                            "analysis_mode", "incomplete"}));
  const Json whole = report::ToJson(built);
  EXPECT_EQ(parts["operator_flops"], whole["operator_flops"]);
  EXPECT_EQ(parts["totals"], whole["totals"]);
  EXPECT_EQ(parts["diagnostics"], whole["diagnostics"]);
  EXPECT_EQ(parts["analysis_mode"], Json());
  EXPECT_EQ(parts["incomplete"],
            report::IsIncomplete(built)
                ? Json(report::IncompleteAnalysisMessage(built))
                : Json());
  // The layers that have metrics, by index.
  Json layer_metrics = Json::object();
  for (std::size_t i = 0; i < built.layers.size(); ++i) {
    if (built.layers[i].metrics.empty()) continue;
    layer_metrics[std::to_string(i)] = whole["layers"][i]["metrics"];
  }
  EXPECT_EQ(parts["layer_metrics"], layer_metrics);
}

}  // namespace
}  // namespace torchscan::crawl

namespace torchscan::report {

// A built report's parts, and parts with every key: two layers' metrics
// past index 9 (numeric order), per-layer operator FLOPs, structure mode and
// a strict message.
template <>
struct FieldTableSamples<crawl::CrawlParts> {
  static std::vector<crawl::CrawlParts> Get() {
    crawl::CrawlParts every;
    every.layer_metrics[2].Set("module_flops",
                               testing::CompleteMetric(Count(10), "flops"));
    every.layer_metrics[10].Set("macs",
                                testing::PartialMetric(Count(4), "macs"));
    every.operator_flops = testing::FlopReportWithEveryMember();
    LayerOperatorFlops call;
    call.total = testing::CompleteMetric(Count(12), "flops", "forward",
                                         "torch_dispatch_operator_count");
    call.by_operator = {{"aten.mm", 12}};
    every.layer_operator_flops = {{call, LayerOperatorFlops{}}};
    every.totals.Set("module_flops", testing::UnavailableMetric("flops"));
    every.analysis_mode = "structure";
    every.incomplete = "incomplete: flops";
    return {crawl::CrawlPartsOf(testing::Conv2dReportFromParts()),
            std::move(every)};
  }
};
INSTANTIATE_TYPED_TEST_SUITE_P(CrawlParts, FieldTableRoundTrip,
                               ::testing::Types<crawl::CrawlParts>);

}  // namespace torchscan::report
