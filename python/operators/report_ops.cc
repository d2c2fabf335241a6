// Operators through which Python's summary and compare_reports reach the C++
// report library: the summary table and the comparison run here.

#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "python/operators/value_arguments.h"
#include "report/analysis_report.h"
#include "report/compare.h"
#include "report/json_io.h"
#include "report/json_reader.h"
#include "report/summary.h"
#include "torchscan_dispatch/own_operators.h"

namespace torchscan::dispatch {
namespace {

using report::Json;
using report::JsonObject;
using report::JsonValue;

// Options: {"wrap_mode": str|null, "max_depth": int|null,
//           "receptive_field": bool, "effective_rf_stats": bool}, each
// optional (absent: SummaryOptions' default).
absl::StatusOr<report::SummaryOptions> ReadSummaryOptions(
    const Json& document) {
  TS_ASSIGN_OR_RETURN(JsonObject options,
                      JsonValue(document, "options").Object());
  TS_RETURN_IF_ERROR(options.RejectUnknownKeys(
      {"wrap_mode", "max_depth", "receptive_field", "effective_rf_stats"}));
  report::SummaryOptions summary;
  if (std::optional<JsonValue> wrap = options.OptionalMember("wrap_mode")) {
    summary.wrap_mode = std::nullopt;
    if (!wrap->is_null()) {
      TS_ASSIGN_OR_RETURN(summary.wrap_mode, wrap->String());
    }
  }
  if (std::optional<JsonValue> depth = options.OptionalMember("max_depth");
      depth && !depth->is_null()) {
    TS_ASSIGN_OR_RETURN(summary.max_depth, depth->Int64());
  }
  if (options.Contains("receptive_field")) {
    TS_ASSIGN_OR_RETURN(summary.receptive_field,
                        options.Bool("receptive_field"));
  }
  if (options.Contains("effective_rf_stats")) {
    TS_ASSIGN_OR_RETURN(summary.effective_rf_stats,
                        options.Bool("effective_rf_stats"));
  }
  return summary;
}

std::string RenderSummary(std::string report_json, std::string options_json) {
  absl::StatusOr<report::AnalysisReport> report =
      report::AnalysisReportFromJson(ParseJsonArgument(report_json));
  CheckValue(report.status());
  absl::StatusOr<report::SummaryOptions> summary =
      ReadSummaryOptions(ParseJsonArgument(options_json));
  CheckValue(summary.status());
  absl::StatusOr<std::string> text = report::RenderSummary(*report, *summary);
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
