// A FlopReport's operators on a device's roofline, as one inline SVG: no
// script, no network, every number also in each point's tooltip.
//
// The plot is log-log: x the arithmetic intensity (FLOPs per byte moved),
// y FLOP/s. The memory roof is y = intensity x memory bandwidth, the compute
// roofs one flat line per precision the plotted operators' FLOPs ran in
// (its dense peak); they meet at each precision's ridge point. Each
// operator with both FLOPs and bytes is one point of the report's roofline
// (report/roofline.h, the one rule) at its intensity and its bound FLOP/s:
// the most the device could sustain on it, min(peak, intensity x
// bandwidth), where the peak is the operator's own, its FLOPs over its
// compute seconds. A point whose roofline status is partial (a diagnostic
// names the operator, or a compiled graph ran) is hollow: its intensity is
// of the known work. Operators whose roofline is unavailable (FLOPs in a
// precision the device has no peak for) are left out and listed under the
// plot, never put on another precision's roof.

#ifndef TORCHSCAN_REPORT_RENDER_ROOFLINE_PLOT_H_
#define TORCHSCAN_REPORT_RENDER_ROOFLINE_PLOT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/flop_report.h"
#include "report/roofline.h"

namespace torchscan::report::render {

// The device and its JSON reader, now in report/roofline.h; the names stay
// here for the callers that know them.
using ::torchscan::report::RooflineDevice;
using ::torchscan::report::RooflineDeviceFromJson;

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
