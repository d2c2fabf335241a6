#include "report/render/roofline_listing.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "report/json_io.h"

namespace torchscan::report::render {
namespace {

// "4.096e-06": four significant digits, as Python's format(x, ".4g").
std::string Number(double value) { return absl::StrFormat("%.4g", value); }

std::string Seconds(double value) { return absl::StrCat(Number(value), " s"); }

// "aten.mm: lower bound 4.096e-06 s, memory-bound (compute 1.049e-06 s,
// memory 4.096e-06 s), intensity 25.6 FLOPs/byte, ridge point 295.4
// FLOPs/byte, complete".
std::string PointLine(const RooflinePoint& point) {
  std::string line = absl::StrCat(point.name, ": ");
  if (point.seconds) {
    absl::StrAppend(
        &line, "lower bound ", Seconds(*point.seconds), ", ",
        point.bound ? absl::StrCat(RooflineBoundName(*point.bound), "-bound")
                    : "no work",
        " (compute ", Seconds(*point.compute_seconds), ", memory ",
        Seconds(point.memory_seconds), ")");
  } else {
    absl::StrAppend(&line, "lower bound unknown (", *point.unavailable,
                    "), memory ", Seconds(point.memory_seconds));
  }
  absl::StrAppend(&line, ", intensity ",
                  point.intensity
                      ? absl::StrCat(Number(*point.intensity), " FLOPs/byte")
                      : std::string("n/a (no bytes)"));
  if (point.ridge_point) {
    absl::StrAppend(&line, ", ridge point ", Number(*point.ridge_point),
                    " FLOPs/byte");
  }
  if (point.peak_precision) {
    absl::StrAppend(&line, " (", *point.peak_precision, " peak)");
  }
  absl::StrAppend(&line, ", ", RooflineStatusName(point.status));
  if (!point.partial.empty()) {
    absl::StrAppend(&line, " (missing: ", absl::StrJoin(point.partial, "; "),
                    ")");
  }
  return line;
}

std::string DeviceLine(absl::string_view what, const RooflineDevice& device) {
  return absl::StrCat(what, " on ", device.name,
                      device.source.empty() ? "" : " (",
                      device.source.empty() ? "" : device.source,
                      device.source.empty() ? "" : ")", "\n");
}

// Slowest first; those without a bound (unavailable) last; then by name.
bool Slower(const RooflinePoint* a, const RooflinePoint* b) {
  if (a->seconds.has_value() != b->seconds.has_value()) {
    return a->seconds.has_value();
  }
  if (a->seconds && *a->seconds != *b->seconds) {
    return *a->seconds > *b->seconds;
  }
  return a->name < b->name;
}

Count KnownCount(const MetricResult& metric) {
  if (!metric.known_value()) return 0;
  const Count* count = std::get_if<Count>(&*metric.known_value());
  return count == nullptr ? 0 : *count;
}

}  // namespace

JobRoofline ComputeJobRoofline(const JobReport& job,
                               const RooflineDevice& device) {
  JobRoofline roofline;
  roofline.device = device;
  roofline.missing_ranks = job.missing_ranks;
  std::vector<std::string> present;
  for (const auto& [precision, count] : job.by_precision) {
    if (count != 0) present.push_back(precision);
  }
  bool unavailable = job.per_rank.empty();
  for (const auto& [rank, flops] : job.per_rank) {
    RooflineWork work;
    work.flops = KnownCount(flops);
    work.precisions = present;
    if (!flops.is_complete()) {
      work.partial.push_back(absl::StrCat("flops: rank ", rank, "'s are ",
                                          MetricStatusName(flops.status())));
    }
    if (!job.bytes) {
      work.partial.push_back("bytes: the job report has no bytes");
    } else if (const auto bytes = job.bytes->per_rank.find(rank);
               bytes == job.bytes->per_rank.end()) {
      work.partial.push_back(
          absl::StrCat("bytes: rank ", rank, "'s report has no bytes"));
    } else {
      work.bytes = KnownCount(bytes->second);
      if (!bytes->second.is_complete()) {
        work.partial.push_back(
            absl::StrCat("bytes: rank ", rank, "'s are ",
                         MetricStatusName(bytes->second.status())));
      }
    }
    const RooflinePoint point =
        RooflinePointOf(device, absl::StrCat("rank ", rank), work);
    if (!point.seconds) {
      unavailable = true;
    } else if (!roofline.seconds || *point.seconds > *roofline.seconds) {
      roofline.seconds = point.seconds;
      roofline.slowest_rank = rank;
    }
    roofline.per_rank.emplace(rank, point);
  }
  if (unavailable) {
    roofline.seconds.reset();
    roofline.slowest_rank.reset();
  }
  return roofline;
}

std::string RooflineListing(const Roofline& roofline, int top) {
  std::string text = DeviceLine("roofline", roofline.device);
  absl::StrAppend(&text, PointLine(roofline.total), "\n");
  std::vector<const RooflinePoint*> operators;
  for (const auto& [name, point] : roofline.by_operator) {
    operators.push_back(&point);
  }
  std::sort(operators.begin(), operators.end(), Slower);
  const std::size_t shown =
      std::min(operators.size(), static_cast<std::size_t>(top));
  absl::StrAppend(&text, "operators by lower bound (", shown, " of ",
                  operators.size(), "):\n");
  for (std::size_t i = 0; i < shown; ++i) {
    absl::StrAppend(&text, "  ", PointLine(*operators[i]), "\n");
  }
  return text;
}

std::string JobRooflineListing(const JobRoofline& roofline) {
  std::string text = DeviceLine("job roofline", roofline.device);
  if (roofline.seconds) {
    absl::StrAppend(&text, "job: lower bound ", Seconds(*roofline.seconds),
                    " (rank ", *roofline.slowest_rank,
                    ", the largest: ranks run side by side)\n");
  } else {
    absl::StrAppend(&text,
                    "job: lower bound unknown (a rank's is unavailable, or "
                    "no rank has a report)\n");
  }
  if (!roofline.missing_ranks.empty()) {
    absl::StrAppend(
        &text, "missing ranks: ", absl::StrJoin(roofline.missing_ranks, ", "),
        " (their time is not bounded)\n");
  }
  for (const auto& [rank, point] : roofline.per_rank) {
    absl::StrAppend(&text, "  ", PointLine(point), "\n");
  }
  return text;
}

std::string JobRooflineLine(const JobRoofline& roofline) {
  std::vector<std::string> ranks;
  for (const auto& [rank, point] : roofline.per_rank) {
    ranks.push_back(absl::StrCat(
        "rank ", rank, " ",
        point.seconds ? Seconds(*point.seconds) : std::string("unavailable")));
  }
  return absl::StrCat("roofline on ", roofline.device.name, ": ",
                      absl::StrJoin(ranks, ", "), "; largest ",
                      roofline.seconds
                          ? absl::StrCat(Seconds(*roofline.seconds), " (rank ",
                                         *roofline.slowest_rank, ")")
                          : std::string("unknown"),
                      "\n");
}

absl::StatusOr<RooflineOutput> RooflineOfDocument(
    const Json& document, absl::string_view device_name) {
  TS_ASSIGN_OR_RETURN(const RooflineDevice device,
                      RooflineDeviceNamed(device_name));
  if (document.is_object() && document.value("kind", Json()) == "job_report") {
    TS_ASSIGN_OR_RETURN(const JobReport job, JobReportFromJson(document));
    return RooflineOutputOf(job, device);
  }
  TS_ASSIGN_OR_RETURN(const FlopReport report, FlopReportForRoofline(document));
  return RooflineOutputOf(report, device);
}

RooflineOutput RooflineOutputOf(const JobReport& job,
                                const RooflineDevice& device) {
  const JobRoofline roofline = ComputeJobRoofline(job, device);
  return RooflineOutput{JobRooflineListing(roofline),
                        DumpPythonJson(ToJson(roofline), 2) + "\n"};
}

RooflineOutput RooflineOutputOf(const FlopReport& report,
                                const RooflineDevice& device) {
  const Roofline roofline = ComputeRoofline(report, device);
  return RooflineOutput{RooflineListing(roofline),
                        DumpPythonJson(ToJson(roofline), 2) + "\n"};
}

}  // namespace torchscan::report::render
