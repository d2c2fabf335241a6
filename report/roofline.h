// The roofline of a FlopReport on a device: per operator, per module and
// for the whole report, the arithmetic intensity, whether the work is
// compute- or memory-bound, and the roofline's lower bound on its time. The
// C++ twin of torchscan_dispatch.roofline.roofline (the same numbers, field
// for field: tests/python/test_cpp_roofline.py), for a FlopCountingGuard's
// report and `torchscan roofline --device-model NAME`.
//
//   const DeviceModel* h100 = FindDeviceModel("H100 SXM");
//   Roofline roofline = ComputeRoofline(report, RooflineDeviceOf(*h100));
//   roofline.total.seconds;                      // no H100 runs it faster
//   roofline.by_operator.at("aten.mm").bound;    // kCompute or kMemory
//
// For FLOPs F (F_p of them in precision p) and bytes B (read + written,
// the report's bytes) on a device with dense peak peak_p and memory
// bandwidth W:
//
//   compute_seconds = sum over p of F_p / peak_p;  memory_seconds = B / W;
//   seconds = max(compute_seconds, memory_seconds): no device runs the work
//     faster than its peak arithmetic or than it moves the bytes, so this is
//     a lower bound on the time (docs/methodology.md, "Roofline");
//   intensity = F / B FLOPs per byte (nullopt when B is 0);
//   ridge_point = (F / compute_seconds) / W, the intensity at which the two
//     terms are equal: peak_p / W for work in one precision;
//   bound = kCompute when compute_seconds > memory_seconds, else kMemory
//     (nullopt when both are 0).
//
// Operators use the report's by_operator_precision (each operator's FLOPs
// against the peak of the precision they ran in). Modules, and the total of
// a report without by_precision, are not split by precision: their FLOP
// term uses the fastest peak among the precisions the report's FLOPs ran in
// (peak_precision names it), which cannot overstate the term, so the time
// stays a lower bound.
//
// Honesty:
// - status kPartial: the counts the point rests on are partial; `partial`
//   names what is missing (the report's diagnostics: "uncounted_operator:
//   aten.relu", "bytes compiled_region_bytes: ..."). seconds is still a
//   lower bound, but intensity, ridge_point and bound are of the known work
//   only. An operator is partial when a diagnostic names it (and every
//   operator when a compiled graph ran, whose bytes are the graph's; or when
//   the report has no bytes); modules and the total whenever the report's
//   FLOPs or bytes are.
// - status kUnavailable: some FLOPs ran in a precision the device has no
//   peak for (or the report does not say which precision): the FLOP term,
//   seconds, ridge_point and bound are nullopt and `unavailable` says why.
//   Never 0, never another precision's peak.

#ifndef TORCHSCAN_REPORT_ROOFLINE_H_
#define TORCHSCAN_REPORT_ROOFLINE_H_

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "report/count.h"
#include "report/device_table.h"
#include "report/field_table.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "report/json_reader.h"

namespace torchscan::report {

// A device as the roofline sees it: a device table row (RooflineDeviceOf),
// or one a caller measured or made up (Python's measure_host_peak()).
// Its JSON: {"name", "peak_flops": {precision: FLOP/s}, "memory_bandwidth":
// bytes/s, "source"?}; unknown members are refused, and every number must
// be a positive JSON number.
struct RooflineDevice {
  std::string name;
  // Precision ("bf16", "fp32", ...) -> dense peak FLOP/s.
  std::map<std::string, double> peak_flops;
  // Bytes per second.
  double memory_bandwidth = 0;
  // Where the figures come from ("" when not said).
  std::string source;

  bool operator==(const RooflineDevice&) const = default;
  static constexpr auto kFields = std::make_tuple(
      Field("name", &RooflineDevice::name),
      FieldAs<MapOf<PositiveNumberCodec>>("peak_flops",
                                          &RooflineDevice::peak_flops),
      FieldAs<PositiveNumberCodec>("memory_bandwidth",
                                   &RooflineDevice::memory_bandwidth),
      Field("source", &RooflineDevice::source, kOptional));
};

// The device of a table row: its name, peaks, memory bandwidth and source.
RooflineDevice RooflineDeviceOf(const DeviceModel& model);

// The device table's row named `name` (FindDeviceModel's exact-name
// rules); an unknown name is "unknown device model 'X': the device table
// (exact names only) has H100 SXM, H100 PCIe, ...", never a near match.
absl::StatusOr<RooflineDevice> RooflineDeviceNamed(absl::string_view name);

// FromJson<RooflineDevice> at path `field`.
absl::StatusOr<RooflineDevice> RooflineDeviceFromJson(
    const Json& node, absl::string_view field = "device");

enum class RooflineStatus { kComplete, kPartial, kUnavailable };
enum class RooflineBound { kCompute, kMemory };

// The JSON names: "complete", "partial", "unavailable"; "compute",
// "memory".
absl::Span<const std::pair<RooflineStatus, absl::string_view>> EnumNames(
    RooflineStatus);
absl::Span<const std::pair<RooflineBound, absl::string_view>> EnumNames(
    RooflineBound);

// One operator, module or the whole report on the roofline. Its JSON is
// RooflinePoint.to_json() of Python, key for key.
struct RooflinePoint {
  std::string name;
  RooflineStatus status = RooflineStatus::kComplete;
  // The known FLOPs and bytes (lower bounds when partial).
  Count flops = 0;
  Count bytes = 0;
  // The FLOPs by precision the FLOP term used (nonzero entries), or nullopt
  // when the point is not split (peak_precision names the fastest peak
  // used instead).
  std::optional<std::map<std::string, Count>> flops_by_precision;
  std::optional<std::string> peak_precision;
  std::optional<double> intensity;
  std::optional<double> ridge_point;
  std::optional<RooflineBound> bound;
  std::optional<double> compute_seconds;
  double memory_seconds = 0;
  // The roofline lower bound on time: max(compute, memory seconds).
  std::optional<double> seconds;
  // What the counts miss, when partial.
  std::vector<std::string> partial;
  // Why the FLOP term is not known, when unavailable.
  std::optional<std::string> unavailable;

  bool operator==(const RooflinePoint&) const = default;
  static constexpr auto kFields = std::make_tuple(
      Field("name", &RooflinePoint::name),
      Field("status", &RooflinePoint::status),
      FieldAs<NonNegativeCountCodec>("flops", &RooflinePoint::flops),
      FieldAs<NonNegativeCountCodec>("bytes", &RooflinePoint::bytes),
      Field("flops_by_precision", &RooflinePoint::flops_by_precision),
      Field("peak_precision", &RooflinePoint::peak_precision),
      Field("intensity", &RooflinePoint::intensity),
      Field("ridge_point", &RooflinePoint::ridge_point),
      Field("bound", &RooflinePoint::bound),
      Field("compute_seconds", &RooflinePoint::compute_seconds),
      Field("memory_seconds", &RooflinePoint::memory_seconds),
      Field("seconds", &RooflinePoint::seconds),
      Field("partial", &RooflinePoint::partial),
      Field("unavailable", &RooflinePoint::unavailable));
};

// The work of one point, as RooflinePointOf takes it.
struct RooflineWork {
  // The FLOPs by precision, or nullopt when not split: then `flops`,
  // against the fastest peak among `precisions` (those it may have run in).
  std::optional<std::map<std::string, Count>> flops_by_precision;
  Count flops = 0;
  std::vector<std::string> precisions;
  // Read + written.
  Count bytes = 0;
  // What the counts miss (the point is then partial).
  std::vector<std::string> partial;
};

// One point named `name` (Python's roofline_point).
RooflinePoint RooflinePointOf(const RooflineDevice& device, std::string name,
                              const RooflineWork& work);

// A report's roofline on one device.
struct Roofline {
  RooflineDevice device;
  RooflinePoint total;
  // By operator and by module label, in name order.
  std::map<std::string, RooflinePoint> by_operator;
  std::map<std::string, RooflinePoint> by_module;

  bool operator==(const Roofline&) const = default;
  static constexpr auto kFields = std::make_tuple(
      Field("device", &Roofline::device), Field("total", &Roofline::total),
      Field("by_operator", &Roofline::by_operator),
      Field("by_module", &Roofline::by_module));
};

// The roofline of `report` (measure_flops, a FlopCountingGuard's Report(),
// a StepMeter step's report) on `device`: every operator, every module
// label and the total. A report without bytes (written before they
// existed) has every point partial, its bytes 0.
Roofline ComputeRoofline(const FlopReport& report,
                         const RooflineDevice& device);

// The FlopReport in a JSON document, for a roofline. Refused, one line
// each: a job report ("roofline: a job report sums ranks that run side by
// side; pass one rank's FlopReport", see JobRooflineSeconds), a crawl
// report ("roofline: a crawl report has no bytes moved; measure the
// workload with measure_flops for a roofline"), anything else that is not a
// FlopReport, and a FlopReport that does not read.
absl::StatusOr<FlopReport> FlopReportForRoofline(const Json& document);
// FlopReportForRoofline's refusals of a document that is not a FlopReport,
// made before it is read: they ask only whether it is an object, its
// top-level keys and its "kind", so `document` may hold only those (the
// other keys' values null).
absl::Status CheckRooflineDocument(const Json& document);

// The precisions of `flops` with a nonzero count that `device` has no peak
// for, in name order: why a split point is unavailable.
std::vector<std::string> MissingPeaks(
    const RooflineDevice& device, const std::map<std::string, Count>& flops);

// The JSON names above.
absl::string_view RooflineBoundName(RooflineBound bound);
absl::string_view RooflineStatusName(RooflineStatus status);

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_ROOFLINE_H_
