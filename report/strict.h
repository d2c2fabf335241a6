// Strict checking (reference 2.8 and 4.9): whether an analysis is complete
// enough for automation, and TorchScan's IncompleteAnalysisError message.

#ifndef TORCHSCAN_REPORT_STRICT_H_
#define TORCHSCAN_REPORT_STRICT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "report/analysis_report.h"

namespace torchscan::report {

// crawl_module(strict=True)'s test: true when the report has any diagnostic
// or any total that is not complete, except totals structure mode did not
// request (method "not_requested").
bool IsIncomplete(const AnalysisReport& report);

// The names IncompleteAnalysisError lists, sorted and unique: every total
// that is not complete (not_requested ones included, as TorchScan 0.2.0
// does) and the metric of every diagnostic ("flops" for operators).
std::vector<std::string> IncompleteMetricNames(const AnalysisReport& report);

// "Analysis is incomplete for: dmas, macs, module_flops, receptive_field."
// or "Analysis is incomplete for: unknown metrics." when no name applies.
std::string IncompleteAnalysisMessage(const AnalysisReport& report);

// OK for a report strict mode accepts, else FailedPrecondition carrying
// IncompleteAnalysisMessage.
absl::Status CheckStrict(const AnalysisReport& report);

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_STRICT_H_
