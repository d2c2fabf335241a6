// Operators through which Python's crawl_module, summary and
// compare_reports reach the C++ report library: the module formulas, the
// report assembly, the summary table and the comparison all run here.

#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "crawl/crawl_json.h"
#include "python/operators/open_measurements.h"
#include "python/operators/value_arguments.h"
#include "report/analysis_report.h"
#include "report/compare.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "report/summary.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/own_operators.h"

namespace torchscan::dispatch {
namespace {

using report::Json;

// The computed parts of a crawl's report (crawl/crawl_json.h).
std::string EvaluateCrawl(std::string crawl_json) {
  absl::StatusOr<Json> parts =
      crawl::EvaluateCrawlParts(ParseJsonArgument(crawl_json));
  CheckValue(parts.status());
  return report::DumpJson(*parts);
}

// The same for a full-mode crawl measured by session `handle`: its
// operator FlopReport and layer calls' operator FLOPs are read from the
// session, not from the record.
std::string EvaluateMeasuredCrawl(std::int64_t handle, std::string crawl_json) {
  CountingSession& session = OpenMeasurements::Get().Session(handle);
  absl::StatusOr<report::FlopReport> flops = session.BuildReport();
  TORCH_CHECK(flops.ok(), "torchscan: ", flops.status().ToString());
  absl::StatusOr<std::map<std::size_t, report::LayerOperatorFlops>>
      layer_call_flops = session.BuildLayerCallFlops();
  TORCH_CHECK(layer_call_flops.ok(),
              "torchscan: ", layer_call_flops.status().ToString());
  absl::StatusOr<std::string> parts = crawl::EvaluateMeasuredCrawlText(
      ParseJsonArgument(crawl_json), *std::move(flops),
      *std::move(layer_call_flops));
  CheckValue(parts.status());
  return *std::move(parts);
}

// Options: {"wrap_mode": str|null, "max_depth": int|null,
//           "receptive_field": bool, "effective_rf_stats": bool}
std::string RenderSummary(std::string report_json, std::string options_json) {
  absl::StatusOr<report::AnalysisReport> report =
      report::AnalysisReportFromJson(ParseJsonArgument(report_json));
  CheckValue(report.status());
  const Json options = ParseJsonArgument(options_json);
  report::SummaryOptions summary;
  if (options.contains("wrap_mode")) {
    summary.wrap_mode = options["wrap_mode"].is_null()
                            ? std::nullopt
                            : std::optional<std::string>(
                                  options["wrap_mode"].get<std::string>());
  }
  if (options.contains("max_depth") && !options["max_depth"].is_null()) {
    summary.max_depth = options["max_depth"].get<std::int64_t>();
  }
  summary.receptive_field = options.value("receptive_field", false);
  summary.effective_rf_stats = options.value("effective_rf_stats", false);
  absl::StatusOr<std::string> text = report::RenderSummary(*report, summary);
  CheckValue(text.status());
  return *std::move(text);
}

std::string CompareReports(std::string before, std::string after) {
  absl::StatusOr<Json> diff = report::CompareReportsJson(
      ParseJsonArgument(before), ParseJsonArgument(after));
  CheckValue(diff.status());
  return report::DumpJson(*diff);
}

const OwnOperators registration(
    torch::Library::FRAGMENT,
    {"_evaluate_crawl", "_evaluate_measured_crawl", "_render_summary",
     "_compare_reports"},
    [](torch::Library& library) {
      library.def("_evaluate_crawl(str crawl) -> str", &EvaluateCrawl);
      library.def("_evaluate_measured_crawl(int handle, str crawl) -> str",
                  &EvaluateMeasuredCrawl);
      library.def("_render_summary(str report, str options) -> str",
                  &RenderSummary);
      library.def("_compare_reports(str before, str after) -> str",
                  &CompareReports);
    },
    __FILE__, __LINE__);

}  // namespace
}  // namespace torchscan::dispatch
