// A strict crawl's failure, carrying its report.
//
// Python's crawl_module(strict=True) raises IncompleteAnalysisError with the
// finished report attached; the C++ crawls return an absl::Status instead,
// and the report rides along with it, as the same typed object.

#ifndef TORCHSCAN_CRAWL_STRICT_FAILURE_H_
#define TORCHSCAN_CRAWL_STRICT_FAILURE_H_

#include <optional>

#include "absl/status/status.h"
#include "report/analysis_report.h"

namespace torchscan::crawl {

// kFailedPrecondition with report::IncompleteAnalysisMessage(report),
// carrying `report`.
absl::Status StrictFailure(report::AnalysisReport report);

// The report StrictFailure attached to `status` (or to a copy of it);
// nullopt for any other status.
std::optional<report::AnalysisReport> StrictFailureReport(
    const absl::Status& status);

}  // namespace torchscan::crawl

#endif  // TORCHSCAN_CRAWL_STRICT_FAILURE_H_
