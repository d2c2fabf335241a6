// The human-readable summary table (reference 8; released utils.py), the
// same text character for character as TorchScan 0.2.0's format_info.
//
// Widths and cuts count Unicode code points, as Python's len() does.

#ifndef TORCHSCAN_REPORT_SUMMARY_H_
#define TORCHSCAN_REPORT_SUMMARY_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/analysis_report.h"
#include "report/value_metadata.h"

namespace torchscan::report {

// "conv", "├─conv" at depth 1, "|    |    └─conv" at depth 3.
std::string FormatName(absl::string_view name, std::int64_t depth);

// wrap_string(s, max_len, delimiter, wrap, mode). A null mode never wraps;
// "end" keeps the head; "mid" keeps the head and the part after the last
// delimiter; any other mode is an error when wrapping is needed:
// "received an unexpected value of argument `mode`".
absl::StatusOr<std::string> WrapString(absl::string_view text,
                                       std::int64_t max_len,
                                       std::optional<absl::string_view> mode,
                                       absl::string_view delimiter = ".",
                                       absl::string_view wrap = "[...]");

struct ScaledValue {
  double value = 0;
  // "T", "G", "M", "k" or "".
  std::string prefix;
};
// unit_scale: divides by the first of 1e12, 1e9, 1e6, 1e3 that fits.
ScaledValue UnitScale(double value);

// The Output Shape text of a value: "(1, 8, 30, 30)", "{((1,), [none])}".
std::string ShapeText(const ValueMetadata& value);

// aggregate_info: a copy keeping the layers of depth <= max_depth.
// Errors: "max_depth must be non-negative." and "The `max_depth` argument
// cannot be higher than module depth." (no layer has depth max_depth).
absl::StatusOr<AnalysisReport> AggregateInfo(const AnalysisReport& report,
                                             std::int64_t max_depth);

// format_info(report, wrap_mode, receptive_field, effective_rf_stats), with
// no trailing newline. Deviation: a string receptive-field value (Conv2d
// padding="same") is shown as is, where TorchScan 0.2.0 raises ValueError.
absl::StatusOr<std::string> FormatInfo(
    const AnalysisReport& report,
    std::optional<absl::string_view> wrap_mode = "mid",
    bool receptive_field = false, bool effective_rf_stats = false);

struct SummaryOptions {
  // nullopt: never wrap layer names.
  std::optional<std::string> wrap_mode = "mid";
  // Show only layers up to this depth (aggregate_info).
  std::optional<std::int64_t> max_depth;
  bool receptive_field = false;
  bool effective_rf_stats = false;
};

// Exactly what summary() prints: FormatInfo of the (depth-limited) report
// followed by a newline.
absl::StatusOr<std::string> RenderSummary(const AnalysisReport& report,
                                          const SummaryOptions& options = {});

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_SUMMARY_H_
