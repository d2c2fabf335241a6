// compare_reports(before, after) (reference 10, released compare.py).
//
// Layer calls are matched by (path, call_index); a numeric delta exists only
// when both sides are complete; incomplete states propagate. Error messages
// are TorchScan's, word for word:
//   schema versions differ: 1 != 2
//   unsupported schema version: 99
//   before contains duplicate layer call ('x', 0)
//   metric 'macs' has incompatible unit
//   unsupported operand type(s) for -: 'int' and 'str'

#ifndef TORCHSCAN_REPORT_COMPARE_H_
#define TORCHSCAN_REPORT_COMPARE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/analysis_report.h"
#include "report/field_table.h"
#include "report/json_io.h"
#include "report/metric_map.h"
#include "report/report_diff.h"

namespace torchscan::report {

// The part of a report compare_reports reads. TorchScan's own tests compare
// hand-built reports holding only these fields, so they are all we require;
// every other key is accepted and dropped, as upstream ignores it.
struct ComparableLayer {
  std::string path;
  std::int64_t call_index = 0;
  MetricMap metrics;

  bool operator==(const ComparableLayer&) const = default;
  static constexpr bool kAcceptsUnknownKeys = true;
  static constexpr auto kFields = std::make_tuple(
      Field("path", &ComparableLayer::path),
      FieldAs<IndexCodec>("call_index", &ComparableLayer::call_index),
      Field("metrics", &ComparableLayer::metrics));
};

struct ComparableReport {
  // Any integer: CompareReports decides which versions it accepts.
  Count schema_version = 1;
  MetricMap totals;
  std::vector<ComparableLayer> layers;

  bool operator==(const ComparableReport&) const = default;
  static constexpr bool kAcceptsUnknownKeys = true;
  // schema_version first: read before the rest, so that a report of
  // another schema gets the version error, not a parse error of its body.
  static constexpr auto kFields = std::make_tuple(
      Field("schema_version", &ComparableReport::schema_version),
      Field("totals", &ComparableReport::totals),
      Field("layers", &ComparableReport::layers));
};

ComparableReport ComparableView(const AnalysisReport& report);
// FromJson<ComparableReport> at path `field`.
absl::StatusOr<ComparableReport> ComparableReportFromJson(
    const Json& node, absl::string_view field);

// Upstream's check of two reports' schema versions, made before anything
// else is read: "schema versions differ: 1 != 2", "unsupported schema
// version: 99".
absl::Status CheckSchemaVersions(Count before, Count after);

// InvalidArgument with upstream's message for a version mismatch, a
// duplicate layer call, incompatible unit/scope/method or non-numeric
// complete values; OutOfRange if an integer delta overflows 128 bits.
absl::StatusOr<ReportDiff> CompareReports(const ComparableReport& before,
                                          const ComparableReport& after);
absl::StatusOr<ReportDiff> CompareReports(const AnalysisReport& before,
                                          const AnalysisReport& after);

// Reports as JSON documents from any producer (Python's torchscan 0.2 or
// ours). Versions are checked before anything else is read, so a report of
// another schema gets the version error, not a parse error of its body.
// Parse errors name the path under "before" / "after".
absl::StatusOr<ReportDiff> CompareReportDocuments(const Json& before,
                                                  const Json& after);
// The same on JSON text, which must parse ("before: invalid JSON ...").
absl::StatusOr<ReportDiff> CompareReportTexts(absl::string_view before,
                                              absl::string_view after);

// JSON out: ReportDiffToJson of CompareReportDocuments, and the text
// json.dumps would write for CompareReportTexts.
absl::StatusOr<Json> CompareReportsJson(const Json& before, const Json& after);
absl::StatusOr<std::string> CompareReportsText(absl::string_view before,
                                               absl::string_view after);

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_COMPARE_H_
