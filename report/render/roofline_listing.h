// What `torchscan roofline REPORT.json --device-model NAME` prints and
// writes, for both command lines (the C++ one and python -m
// torchscan_dispatch, which calls this through the extension module, so
// the two print the same bytes).
//
// A FlopReport: the total's lower bound, compute and memory seconds,
// intensity, ridge point, bound and status (with what is missing), then
// the operators by lower bound, slowest first (at most `top`; those whose
// bound is unavailable last, with the reason). A job report: each rank's
// lower bound on its own FLOPs and bytes, and the job's, the largest (ranks
// run side by side).

#ifndef TORCHSCAN_REPORT_RENDER_ROOFLINE_LISTING_H_
#define TORCHSCAN_REPORT_RENDER_ROOFLINE_LISTING_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/field_table.h"
#include "report/job_merge.h"
#include "report/json_io.h"
#include "report/roofline.h"

namespace torchscan::report::render {

// A job report's roofline: each rank's FLOPs (not split by precision: the
// fastest peak among the job's precisions, report/roofline.h) and bytes,
// one point per rank, and the job's lower bound, the largest rank's
// (nullopt when a rank's is unavailable or there are no ranks).
struct JobRoofline {
  RooflineDevice device;
  std::map<std::int64_t, RooflinePoint> per_rank;
  std::optional<double> seconds;
  std::optional<std::int64_t> slowest_rank;
  std::vector<std::int64_t> missing_ranks;

  bool operator==(const JobRoofline&) const = default;
  static constexpr auto kFields =
      std::make_tuple(Field("device", &JobRoofline::device),
                      Field("per_rank", &JobRoofline::per_rank),
                      Field("seconds", &JobRoofline::seconds),
                      Field("slowest_rank", &JobRoofline::slowest_rank),
                      Field("missing_ranks", &JobRoofline::missing_ranks));
};

JobRoofline ComputeJobRoofline(const JobReport& job,
                               const RooflineDevice& device);

// The listing of a FlopReport's roofline (lines end in "\n").
std::string RooflineListing(const Roofline& roofline, int top = 10);

// The listing of a job report's roofline.
std::string JobRooflineListing(const JobRoofline& roofline);

// merge --device-model's line: "roofline on H100 SXM: rank 0 1.2e-06 s,
// rank 1 1.3e-06 s; largest 1.3e-06 s (rank 1)\n".
std::string JobRooflineLine(const JobRoofline& roofline);

// The command: `document` (a FlopReport or a job report) on the device
// table's row `device_name`: the listing and the JSON text (indent 2, as
// Python's json.dumps writes it, and a newline). Errors are one line: an
// unknown name lists the table's names; a crawl report has no bytes.
struct RooflineOutput {
  std::string listing;
  std::string json;
};
absl::StatusOr<RooflineOutput> RooflineOfDocument(
    const Json& document, absl::string_view device_name);
// The same on a report already read (RooflineOfDocument reads a job report
// at path "job", else report::FlopReportForRoofline's FlopReport).
RooflineOutput RooflineOutputOf(const JobReport& job,
                                const RooflineDevice& device);
RooflineOutput RooflineOutputOf(const FlopReport& report,
                                const RooflineDevice& device);

}  // namespace torchscan::report::render

#endif  // TORCHSCAN_REPORT_RENDER_ROOFLINE_LISTING_H_
