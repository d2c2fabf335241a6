// Helpers shared by the report/ tests: fixture files and small builders.

#ifndef TORCHSCAN_REPORT_TEST_SUPPORT_H_
#define TORCHSCAN_REPORT_TEST_SUPPORT_H_

#include <string>

#include "absl/strings/string_view.h"
#include "report/analysis_report.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "report/metric_result.h"

namespace torchscan::report::testing {

// The contents of a file under report/testdata/ (a Bazel data dependency);
// fails the current test and returns "" when it cannot be read.
std::string ReadTestData(absl::string_view relative_path);
// ParseJson that fails the current test on error.
Json ParseOrFail(absl::string_view text);

MetricResult CompleteMetric(
    MetricValue value, absl::string_view unit,
    absl::string_view scope = "forward",
    absl::string_view method = "torchscan_module_formula");
MetricResult PartialMetric(
    MetricValue known_value, absl::string_view unit,
    absl::string_view scope = "forward",
    absl::string_view method = "torchscan_module_formula");
MetricResult UnavailableMetric(
    absl::string_view unit, absl::string_view scope = "forward",
    absl::string_view method = "torchscan_module_formula");

// A FlopReport that writes every key of its table: mm counted with bytes
// and an unread mask, a sparse mm whose bytes are not known, a view
// ignored, by_module "L".
FlopReport FlopReportWithEveryMember();

// crawl_module(nn.Conv2d(3, 8, 3), (3, 32, 32)) as TorchScan 0.2's full report
// example gives it, assembled by our code from its parts, with the context
// strings of the environment that made report/testdata/upstream (torchscan
// 0.2.0, torch 2.13.0+cpu, Python 3.11.7).
AnalysisReport Conv2dReportFromParts();

}  // namespace torchscan::report::testing

#endif  // TORCHSCAN_REPORT_TEST_SUPPORT_H_
