// A FlopReport's operators on a device's roofline, as one inline SVG: no
// script, no network, every number also in each point's tooltip.
//
// The plot is log-log: x the arithmetic intensity (FLOPs per byte moved),
// y FLOP/s. The memory roof is y = intensity x memory bandwidth, the compute
// roofs one flat line per precision the report's FLOPs ran in (its dense
// peak); they meet at each precision's ridge point. Each operator with both
// FLOPs and bytes is one point at its intensity and its bound FLOP/s: the
// most the device could sustain on it, min(peak, intensity x bandwidth),
// where the peak is the operator's own over its precisions (its FLOPs over
// the time they take at each precision's peak, as
// torchscan_dispatch.roofline does). A point whose FLOPs or bytes are
// partial (a diagnostic names the operator) is hollow: its intensity is of
// the known work. Operators that ran in a precision the device has no peak
// for are left out and listed under the plot, never put on another
// precision's roof.

#ifndef TORCHSCAN_REPORT_RENDER_ROOFLINE_PLOT_H_
#define TORCHSCAN_REPORT_RENDER_ROOFLINE_PLOT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/field_table.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "report/json_reader.h"

namespace torchscan::report::render {

// A JSON number greater than 0 (no "inf" string: a rate is finite), else
// "<path>: is not positive".
struct PositiveNumberCodec {
  static Json Write(double value) { return value; }
  static absl::StatusOr<double> Read(const JsonValue& node);
};

// A device as the roofline sees it: torchscan_dispatch.devices.DeviceSpec
// (a table row, a --device-model name or the measured host).
// Its JSON: {"name": str, "memory_bandwidth": bytes/s, "peak_flops":
// {precision: FLOP/s}}; unknown members are refused, and every number must
// be a positive JSON number.
struct RooflineDevice {
  std::string name;
  // Precision ("bf16", "fp32", ...) -> dense peak FLOP/s.
  std::map<std::string, double> peak_flops;
  // Bytes per second.
  double memory_bandwidth = 0;

  bool operator==(const RooflineDevice&) const = default;
  static constexpr auto kFields = std::make_tuple(
      Field("name", &RooflineDevice::name),
      FieldAs<PositiveNumberCodec>("memory_bandwidth",
                                   &RooflineDevice::memory_bandwidth),
      FieldAs<MapOf<PositiveNumberCodec>>("peak_flops",
                                          &RooflineDevice::peak_flops));
};

// FromJson<RooflineDevice> at path `field`.
absl::StatusOr<RooflineDevice> RooflineDeviceFromJson(
    const Json& node, absl::string_view field = "device");

struct RooflinePlotPoint {
  std::string op;
  Count flops = 0;
  Count bytes = 0;
  double intensity = 0;               // FLOPs per byte
  double peak = 0;                    // the operator's own peak FLOP/s
  double bound_flops_per_second = 0;  // min(peak, intensity x bandwidth)
  bool partial = false;
};

struct RooflinePlot {
  std::vector<RooflinePlotPoint> points;
  // Operators with FLOPs and bytes that have no point: "aten.mm (no peak
  // for fp8)".
  std::vector<std::string> left_out;
  // Precision -> peak, of the precisions the report's FLOPs ran in.
  std::map<std::string, double> roofs;
};

// The points and roofs of `report` on `device`. A report without bytes has
// no points. Operators are in the order of by_operator.
RooflinePlot PlotRoofline(const FlopReport& report,
                          const RooflineDevice& device);

// The <section id="roofline"> of the HTML page: a caption, the SVG and the
// operators left out.
std::string RooflineSection(const RooflinePlot& plot,
                            const RooflineDevice& device);

}  // namespace torchscan::report::render

#endif  // TORCHSCAN_REPORT_RENDER_ROOFLINE_PLOT_H_
