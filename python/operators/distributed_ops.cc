// The operator through which Python merges per-rank reports into one job
// report (torchscan_dispatch.merge_rank_reports, gather_job_report): the
// merge itself is report/job_merge.h.

#include <c10/util/Exception.h>
#include <torch/library.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "report/job_merge.h"
#include "report/json_io.h"
#include "torchscan_dispatch/own_operators.h"

namespace torchscan::dispatch {
namespace {

// Bad reports are ValueErrors in Python.
std::string MergeRankReports(std::vector<std::string> reports,
                             std::vector<std::string> names) {
  std::vector<report::Json> documents;
  documents.reserve(reports.size());
  for (std::size_t i = 0; i < reports.size(); ++i) {
    absl::StatusOr<report::Json> parsed = report::ParseJson(reports[i]);
    TORCH_CHECK_VALUE(parsed.ok(), i < names.size() ? names[i] : "report", ": ",
                      std::string(parsed.status().message()));
    documents.push_back(*std::move(parsed));
  }
  absl::StatusOr<report::JobReport> job =
      report::MergeRankReportsJson(documents, names);
  TORCH_CHECK_VALUE(job.ok(), std::string(job.status().message()));
  return report::DumpJson(report::JobReportToJson(*job));
}

const OwnOperators registration(
    torch::Library::FRAGMENT, {"_merge_rank_reports"},
    [](torch::Library& library) {
      library.def("_merge_rank_reports(str[] reports, str[] names) -> str",
                  &MergeRankReports);
    },
    __FILE__, __LINE__);

}  // namespace
}  // namespace torchscan::dispatch
