// Operators through which Python's summary and compare_reports reach the C++
// report library: the summary table and the comparison run here.

#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "python/operators/value_arguments.h"
#include "report/analysis_report.h"
#include "report/compare.h"
#include "report/json_io.h"
#include "report/summary.h"
#include "torchscan_dispatch/own_operators.h"

namespace torchscan::dispatch {
namespace {

using report::Json;

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
    torch::Library::FRAGMENT, {"_render_summary", "_compare_reports"},
    [](torch::Library& library) {
      library.def("_render_summary(str report, str options) -> str",
                  &RenderSummary);
      library.def("_compare_reports(str before, str after) -> str",
                  &CompareReports);
    },
    __FILE__, __LINE__);

}  // namespace
}  // namespace torchscan::dispatch
