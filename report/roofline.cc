#include "report/roofline.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "report/diagnostic.h"
#include "report/metric_result.h"
#include "report/python_text.h"

namespace torchscan::report {
namespace {

constexpr std::pair<RooflineStatus, absl::string_view> kStatusNames[] = {
    {RooflineStatus::kComplete, "complete"},
    {RooflineStatus::kPartial, "partial"},
    {RooflineStatus::kUnavailable, "unavailable"},
};

constexpr std::pair<RooflineBound, absl::string_view> kBoundNames[] = {
    {RooflineBound::kCompute, "compute"},
    {RooflineBound::kMemory, "memory"},
};

// a + b, held at the largest Count where it would overflow (a hostile
// report's per-operator bytes; a report's own totals are checked sums).
Count Add(Count a, Count b) {
  return CheckedAdd(a, b).value_or(std::numeric_limits<Count>::max());
}

double AsDouble(Count value) { return CountToDouble(value); }

// The FLOP term of a point: its seconds, the peak its FLOPs ran at on
// average, the fastest precision an unsplit count used, or why it is
// unavailable.
struct ComputeTerm {
  std::optional<double> seconds;
  std::optional<double> average_peak;
  std::optional<std::string> fastest;
  std::optional<std::string> unavailable;
};

// FLOPs split by precision: each against its precision's peak.
ComputeTerm SplitTerm(const RooflineDevice& device,
                      const std::map<std::string, Count>& split) {
  const std::vector<std::string> missing = MissingPeaks(device, split);
  ComputeTerm term;
  if (!missing.empty()) {
    term.unavailable = absl::StrCat(
        device.name, " has no peak for ",
        absl::StrJoin(
            missing, ", ", [&](std::string* out, const std::string& precision) {
              absl::StrAppend(out, precision, " (",
                              PythonThousands(split.at(precision)), " FLOPs)");
            }));
    return term;
  }
  double seconds = 0;
  Count total = 0;
  for (const auto& [precision, count] : split) {
    if (count == 0) continue;
    seconds += AsDouble(count) / device.peak_flops.at(precision);
    total = Add(total, count);
  }
  term.seconds = seconds;
  if (total != 0) term.average_peak = AsDouble(total) / seconds;
  return term;
}

// NOTE [The fastest peak for an unsplit count]
// A module's FLOPs (or a total without by_precision) are not split by
// precision: measured against the fastest peak among the precisions the
// report's FLOPs ran in, the FLOP term is never overstated, so the time
// stays a lower bound. Ties go to the first precision in name order, as
// Python's max() over sorted names.
ComputeTerm UnsplitTerm(const RooflineDevice& device, Count flops,
                        const std::vector<std::string>& precisions) {
  ComputeTerm term;
  if (flops == 0) {
    term.seconds = 0.0;
    return term;
  }
  const std::set<std::string> present(precisions.begin(), precisions.end());
  if (present.empty()) {
    term.unavailable =
        "the report does not split its FLOPs by precision (no by_precision)";
    return term;
  }
  std::vector<std::string> missing;
  for (const std::string& precision : present) {
    if (device.peak_flops.count(precision) == 0) missing.push_back(precision);
  }
  if (!missing.empty()) {
    term.unavailable = absl::StrCat(
        device.name, " has no peak for ", absl::StrJoin(missing, ", "),
        ", which the report's FLOPs ran in (this row is not split by "
        "precision)");
    return term;
  }
  const std::string* fastest = nullptr;
  for (const std::string& precision : present) {
    if (fastest == nullptr ||
        device.peak_flops.at(precision) > device.peak_flops.at(*fastest)) {
      fastest = &precision;
    }
  }
  const double peak = device.peak_flops.at(*fastest);
  term.seconds = AsDouble(flops) / peak;
  term.average_peak = peak;
  term.fastest = *fastest;
  return term;
}

// "uncounted_operator: aten.relu": the code and what it names, if anything.
std::string DiagnosticName(const Diagnostic& diagnostic) {
  return diagnostic.subject.empty()
             ? diagnostic.code
             : absl::StrCat(diagnostic.code, ": ", diagnostic.subject);
}

bool NamesAnOperator(const Diagnostic& diagnostic) {
  return diagnostic.subject_kind == DiagnosticSubject::kOperator &&
         !diagnostic.subject.empty();
}

Count KnownCount(const MetricResult& metric) {
  if (!metric.known_value()) return 0;
  const Count* count = std::get_if<Count>(&*metric.known_value());
  return count == nullptr ? 0 : *count;
}

// What the report's FLOPs and bytes miss, for the modules and the total
// (the report does not say which module ran a missing call).
std::vector<std::string> EverythingMissing(const FlopReport& report,
                                           const BytesMoved& moved) {
  std::vector<std::string> missing;
  for (const Diagnostic& diagnostic : report.diagnostics) {
    missing.push_back(DiagnosticName(diagnostic));
  }
  if (missing.empty() && !report.total.is_complete()) {
    missing.push_back(absl::StrCat("flops: the total is ",
                                   MetricStatusName(report.total.status())));
  }
  if (!report.bytes) {
    missing.push_back(
        "bytes: the report has no bytes (written before they existed)");
    return missing;
  }
  const std::size_t flop_missing = missing.size();
  for (const Diagnostic& diagnostic : moved.diagnostics) {
    missing.push_back(absl::StrCat("bytes ", DiagnosticName(diagnostic)));
  }
  if (missing.size() == flop_missing && !moved.total.is_complete()) {
    missing.push_back(
        absl::StrCat("bytes: ", MetricStatusName(moved.total.status())));
  }
  return missing;
}

// What each operator's own counts miss: the diagnostics naming it; every
// operator's bytes when the report has none; and, when a compiled graph
// ran, every operator's bytes too (NOTE below).
std::map<std::string, std::vector<std::string>> OperatorsMissing(
    const FlopReport& report, const BytesMoved& moved) {
  std::map<std::string, std::vector<std::string>> named;
  for (const Diagnostic& diagnostic : report.diagnostics) {
    if (NamesAnOperator(diagnostic)) {
      named[diagnostic.subject].push_back(DiagnosticName(diagnostic));
    }
  }
  for (const Diagnostic& diagnostic : moved.diagnostics) {
    if (NamesAnOperator(diagnostic)) {
      named[diagnostic.subject].push_back(
          absl::StrCat("bytes ", DiagnosticName(diagnostic)));
    }
  }
  if (!report.bytes) {
    for (const auto& [op, flops] : report.by_operator) {
      named[op].push_back(
          "bytes: the report has no bytes (written before they existed)");
    }
  }
  // NOTE [Operators under a compiled graph]
  // A compiled graph's calls count FLOPs under their operators but move
  // bytes only as the graph (its bounds, under inductor.compiled_graph):
  // any counted operator may have run in one, so none has all its bytes.
  for (const Diagnostic& diagnostic : moved.diagnostics) {
    if (diagnostic.code != kCompiledRegionBytes) continue;
    for (const auto& [op, flops] : report.by_operator) {
      named[op].push_back(absl::StrCat("bytes ", DiagnosticName(diagnostic)));
    }
    break;
  }
  return named;
}

template <typename V>
V Lookup(const std::map<std::string, V>& map, const std::string& key) {
  const auto found = map.find(key);
  return found == map.end() ? V{} : found->second;
}

}  // namespace

absl::Span<const std::pair<RooflineStatus, absl::string_view>> EnumNames(
    RooflineStatus) {
  return kStatusNames;
}

absl::Span<const std::pair<RooflineBound, absl::string_view>> EnumNames(
    RooflineBound) {
  return kBoundNames;
}

absl::string_view RooflineStatusName(RooflineStatus status) {
  return kStatusNames[static_cast<int>(status)].second;
}

absl::string_view RooflineBoundName(RooflineBound bound) {
  return kBoundNames[static_cast<int>(bound)].second;
}

RooflineDevice RooflineDeviceOf(const DeviceModel& model) {
  return RooflineDevice{model.name, model.peak_flops, model.memory_bandwidth,
                        model.source};
}

absl::StatusOr<RooflineDevice> RooflineDeviceFromJson(const Json& node,
                                                      absl::string_view field) {
  return FromJson<RooflineDevice>(JsonValue(node, std::string(field)));
}

absl::StatusOr<FlopReport> FlopReportForRoofline(const Json& document) {
  TS_RETURN_IF_ERROR(CheckRooflineDocument(document));
  return FlopReportFromJson(document, "report");
}

absl::Status CheckRooflineDocument(const Json& document) {
  if (!document.is_object()) {
    return absl::InvalidArgumentError(
        "roofline: not a FlopReport (measure_flops, FlopCounter.report(), a "
        "StepMeter step's report): not a JSON object");
  }
  if (document.value("kind", Json()) == "job_report") {
    return absl::InvalidArgumentError(
        "roofline: a job report sums ranks that run side by side; pass one "
        "rank's FlopReport");
  }
  if (document.contains("layers")) {
    return absl::InvalidArgumentError(
        "roofline: a crawl report has no bytes moved; measure the workload "
        "with measure_flops for a roofline");
  }
  if (!document.contains("total") || !document.contains("by_operator")) {
    return absl::InvalidArgumentError(
        "roofline: not a FlopReport (measure_flops, FlopCounter.report(), a "
        "StepMeter step's report): it has no total and by_operator");
  }
  return absl::OkStatus();
}

std::vector<std::string> MissingPeaks(
    const RooflineDevice& device, const std::map<std::string, Count>& flops) {
  std::vector<std::string> missing;
  for (const auto& [precision, count] : flops) {
    if (count != 0 && device.peak_flops.count(precision) == 0) {
      missing.push_back(precision);
    }
  }
  return missing;
}

RooflinePoint RooflinePointOf(const RooflineDevice& device, std::string name,
                              const RooflineWork& work) {
  RooflinePoint point;
  point.name = std::move(name);
  ComputeTerm term;
  if (work.flops_by_precision) {
    std::map<std::string, Count> split;
    for (const auto& [precision, count] : *work.flops_by_precision) {
      if (count == 0) continue;
      split.emplace(precision, count);
      point.flops = Add(point.flops, count);
    }
    term = SplitTerm(device, split);
    point.flops_by_precision = std::move(split);
  } else {
    point.flops = work.flops;
    term = UnsplitTerm(device, work.flops, work.precisions);
  }
  point.bytes = work.bytes;
  point.peak_precision = term.fastest;
  point.memory_seconds = AsDouble(work.bytes) / device.memory_bandwidth;
  if (term.seconds) {
    const double compute = *term.seconds;
    point.compute_seconds = compute;
    point.seconds = std::max(compute, point.memory_seconds);
    if (compute != 0 || point.memory_seconds != 0) {
      point.bound = compute > point.memory_seconds ? RooflineBound::kCompute
                                                   : RooflineBound::kMemory;
    }
    if (term.average_peak) {
      point.ridge_point = *term.average_peak / device.memory_bandwidth;
    }
  }
  if (work.bytes != 0) {
    point.intensity = AsDouble(point.flops) / AsDouble(work.bytes);
  }
  point.partial = work.partial;
  point.unavailable = term.unavailable;
  point.status = term.unavailable        ? RooflineStatus::kUnavailable
                 : point.partial.empty() ? RooflineStatus::kComplete
                                         : RooflineStatus::kPartial;
  return point;
}

Roofline ComputeRoofline(const FlopReport& report,
                         const RooflineDevice& device) {
  const BytesMoved moved = report.bytes.value_or(BytesMoved{});
  std::vector<std::string> present;
  for (const auto& [precision, count] : report.by_precision) {
    if (count != 0) present.push_back(precision);
  }
  const std::vector<std::string> everything = EverythingMissing(report, moved);
  const std::map<std::string, std::vector<std::string>> named =
      OperatorsMissing(report, moved);

  Roofline roofline;
  roofline.device = device;
  std::set<std::string> operators;
  for (const auto& [op, flops] : report.by_operator) operators.insert(op);
  for (const auto& [op, bytes] : moved.by_operator) operators.insert(op);
  for (const auto& [op, missing] : named) operators.insert(op);
  for (const std::string& op : operators) {
    const OperatorBytes bytes = Lookup(moved.by_operator, op);
    RooflineWork work;
    if (const auto split = report.by_operator_precision.find(op);
        split != report.by_operator_precision.end()) {
      work.flops_by_precision = split->second;
    }
    work.flops = Lookup(report.by_operator, op);
    work.precisions = present;
    work.bytes = Add(bytes.read, bytes.written);
    work.partial = Lookup(named, op);
    roofline.by_operator.emplace(op, RooflinePointOf(device, op, work));
  }

  std::set<std::string> labels;
  for (const auto& [label, flops] : report.by_module) labels.insert(label);
  for (const auto& [label, bytes] : moved.by_module) labels.insert(label);
  for (const std::string& label : labels) {
    RooflineWork work;
    work.flops = Lookup(report.by_module, label);
    work.precisions = present;
    work.bytes = Lookup(moved.by_module, label);
    work.partial = everything;
    roofline.by_module.emplace(label, RooflinePointOf(device, label, work));
  }

  RooflineWork total;
  std::map<std::string, Count> by_precision;
  for (const auto& [precision, count] : report.by_precision) {
    if (count != 0) by_precision.emplace(precision, count);
  }
  if (!by_precision.empty()) total.flops_by_precision = by_precision;
  total.flops = KnownCount(report.total);
  total.precisions = present;
  total.bytes = Add(moved.read, moved.written);
  total.partial = everything;
  roofline.total = RooflinePointOf(device, "total", total);
  return roofline;
}

}  // namespace torchscan::report
