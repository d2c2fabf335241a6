#include "report/strict.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "report/aggregate.h"

namespace torchscan::report {

bool IsIncomplete(const AnalysisReport& report) {
  if (!report.diagnostics.empty()) return true;
  for (const auto& [name, result] : report.totals) {
    if (!result.is_complete() && result.method() != kNotRequestedMethod) {
      return true;
    }
  }
  return false;
}

std::vector<std::string> IncompleteMetricNames(const AnalysisReport& report) {
  // Byte order of UTF-8 is code-point order, which Python's sorted() uses.
  std::set<std::string> names;
  for (const auto& [name, result] : report.totals) {
    if (!result.is_complete()) names.insert(name);
  }
  for (const Diagnostic& diagnostic : report.diagnostics) {
    names.insert(diagnostic.metric);
  }
  return std::vector<std::string>(names.begin(), names.end());
}

std::string IncompleteAnalysisMessage(const AnalysisReport& report) {
  const std::vector<std::string> names = IncompleteMetricNames(report);
  return absl::StrCat(
      "Analysis is incomplete for: ",
      names.empty() ? "unknown metrics" : absl::StrJoin(names, ", "), ".");
}

absl::Status CheckStrict(const AnalysisReport& report) {
  if (!IsIncomplete(report)) return absl::OkStatus();
  return absl::FailedPreconditionError(IncompleteAnalysisMessage(report));
}

}  // namespace torchscan::report
