#include "report/render/roofline_plot.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "report/python_text.h"
#include "report/render/html_text.h"

namespace torchscan::report::render {
namespace {

// The plot's size in SVG units and its margins (room for the axes' labels).
constexpr double kWidth = 720;
constexpr double kHeight = 440;
constexpr double kLeft = 70;
constexpr double kRight = 150;
constexpr double kTop = 20;
constexpr double kBottom = 50;

// "1.235e+12": four significant digits.
std::string Number(double value) { return absl::StrFormat("%.4g", value); }

std::string Coordinate(double value) { return absl::StrFormat("%.2f", value); }

// A log10 axis from 10^low to 10^high, at least one decade wide, holding
// every value with room around it.
struct LogAxis {
  int low = 0;
  int high = 1;

  static LogAxis Around(const std::vector<double>& values) {
    const auto [min, max] = std::minmax_element(values.begin(), values.end());
    LogAxis axis;
    axis.low = static_cast<int>(std::floor(std::log10(*min / 2)));
    axis.high = static_cast<int>(std::ceil(std::log10(*max * 2)));
    if (axis.high <= axis.low) axis.high = axis.low + 1;
    return axis;
  }
  // 0 at 10^low, 1 at 10^high.
  double Fraction(double value) const {
    return (std::log10(value) - low) / (high - low);
  }
};

}  // namespace

RooflinePlot PlotRoofline(const FlopReport& report,
                          const RooflineDevice& device) {
  RooflinePlot plot;
  if (!report.bytes) return plot;
  const Roofline roofline = ComputeRoofline(report, device);
  for (const auto& [op, point] : roofline.by_operator) {
    if (point.flops == 0 || point.bytes == 0) continue;
    if (point.status == RooflineStatus::kUnavailable) {
      plot.left_out.push_back(
          point.flops_by_precision
              ? absl::StrCat(
                    op, " (no peak for ",
                    absl::StrJoin(
                        MissingPeaks(device, *point.flops_by_precision), ", "),
                    ")")
              : absl::StrCat(op, " (", *point.unavailable, ")"));
      continue;
    }
    if (point.flops_by_precision) {
      for (const auto& [precision, count] : *point.flops_by_precision) {
        plot.roofs[precision] = device.peak_flops.at(precision);
      }
    } else if (point.peak_precision) {
      plot.roofs[*point.peak_precision] =
          device.peak_flops.at(*point.peak_precision);
    }
    RooflinePlotPoint plotted;
    plotted.op = op;
    plotted.flops = point.flops;
    plotted.bytes = point.bytes;
    plotted.intensity = *point.intensity;
    plotted.peak = CountToDouble(point.flops) / *point.compute_seconds;
    plotted.bound_flops_per_second =
        std::min(plotted.peak, plotted.intensity * device.memory_bandwidth);
    plotted.partial = point.status == RooflineStatus::kPartial;
    plot.points.push_back(std::move(plotted));
  }
  return plot;
}

std::string RooflineSection(const RooflinePlot& plot,
                            const RooflineDevice& device) {
  std::string html = absl::StrCat(
      "<section id=\"roofline\"><h2>Roofline on ", EscapeHtml(device.name),
      "</h2><p class=\"legend\">Each operator with FLOPs and bytes moved, at "
      "its arithmetic intensity (FLOPs per byte) and the most FLOP/s the "
      "device could sustain on it: min(peak, intensity \u00d7 ",
      Number(device.memory_bandwidth),
      " bytes/s), the peak of the precisions it ran in. Both axes are "
      "logarithmic. Hollow: partial counts, the intensity of the known work. "
      "Hover a point for its numbers.</p>");
  if (plot.points.empty()) {
    absl::StrAppend(&html,
                    "<p class=\"chart-note\">No operator has both FLOPs and "
                    "bytes moved with a known peak: nothing to plot.</p>");
  } else {
    std::vector<double> xs, ys;
    for (const RooflinePlotPoint& point : plot.points) {
      xs.push_back(point.intensity);
      ys.push_back(point.bound_flops_per_second);
    }
    for (const auto& [precision, peak] : plot.roofs) {
      xs.push_back(peak / device.memory_bandwidth);
      ys.push_back(peak);
    }
    const LogAxis x_axis = LogAxis::Around(xs);
    const LogAxis y_axis = LogAxis::Around(ys);
    const double width = kWidth - kLeft - kRight;
    const double height = kHeight - kTop - kBottom;
    auto x_of = [&](double value) {
      return kLeft + x_axis.Fraction(value) * width;
    };
    auto y_of = [&](double value) {
      return kTop + height - y_axis.Fraction(value) * height;
    };
    absl::StrAppend(
        &html, "<svg id=\"roofline-plot\" class=\"roofline\" viewBox=\"0 0 ",
        kWidth, " ", kHeight,
        "\" role=\"img\" aria-label=\"Operators on the roofline\" "
        "xmlns=\"http://www.w3.org/2000/svg\"><rect class=\"frame\" x=\"",
        kLeft, "\" y=\"", kTop, "\" width=\"", width, "\" height=\"", height,
        "\" fill=\"none\" stroke=\"#888\"/>");
    for (int k = x_axis.low; k <= x_axis.high; ++k) {
      const double x = x_of(std::pow(10.0, k));
      absl::StrAppend(&html, "<text class=\"tick\" x=\"", Coordinate(x),
                      "\" y=\"", kTop + height + 16,
                      "\" text-anchor=\"middle\" font-size=\"11\">1e", k,
                      "</text>");
    }
    for (int k = y_axis.low; k <= y_axis.high; ++k) {
      const double y = y_of(std::pow(10.0, k));
      absl::StrAppend(&html, "<text class=\"tick\" x=\"", kLeft - 6, "\" y=\"",
                      Coordinate(y + 4),
                      "\" text-anchor=\"end\" font-size=\"11\">1e", k,
                      "</text>");
    }
    absl::StrAppend(
        &html, "<text x=\"", kLeft + width / 2, "\" y=\"", kHeight - 10,
        "\" text-anchor=\"middle\" font-size=\"12\">Arithmetic intensity "
        "(FLOPs per byte)</text><text x=\"14\" y=\"",
        kTop + height / 2,
        "\" text-anchor=\"middle\" font-size=\"12\" "
        "transform=\"rotate(-90 14 ",
        kTop + height / 2, ")\">FLOP/s</text>");
    // NOTE [Roofs drawn inside the frame]: the memory roof starts where it
    // enters the frame (at the left edge or its floor) and ends at the
    // highest peak's ridge; each compute roof runs from its own ridge to
    // the right edge.
    double highest = 0;
    for (const auto& [precision, peak] : plot.roofs) {
      highest = std::max(highest, peak);
    }
    const double bandwidth = device.memory_bandwidth;
    const double start = std::max(std::pow(10.0, x_axis.low),
                                  std::pow(10.0, y_axis.low) / bandwidth);
    absl::StrAppend(&html, "<line class=\"roof memory-roof\" x1=\"",
                    Coordinate(x_of(start)), "\" y1=\"",
                    Coordinate(y_of(start * bandwidth)), "\" x2=\"",
                    Coordinate(x_of(highest / bandwidth)), "\" y2=\"",
                    Coordinate(y_of(highest)),
                    "\" stroke=\"#c0392b\" stroke-width=\"2\"><title>memory "
                    "roof: ",
                    Number(bandwidth), " bytes/s</title></line>");
    for (const auto& [precision, peak] : plot.roofs) {
      const double y = y_of(peak);
      absl::StrAppend(
          &html, "<line class=\"roof compute-roof\" data-precision=\"",
          EscapeHtml(precision), "\" x1=\"", Coordinate(x_of(peak / bandwidth)),
          "\" y1=\"", Coordinate(y), "\" x2=\"", kLeft + width, "\" y2=\"",
          Coordinate(y), "\" stroke=\"#2c3e50\" stroke-width=\"2\"><title>",
          EscapeHtml(precision), " peak: ", Number(peak),
          " FLOP/s</title></line><text x=\"", kLeft + width + 4, "\" y=\"",
          Coordinate(y + 4), "\" font-size=\"11\">", EscapeHtml(precision), " ",
          Number(peak), " FLOP/s</text>");
    }
    for (const RooflinePlotPoint& point : plot.points) {
      const bool memory_bound = point.intensity * bandwidth < point.peak;
      absl::StrAppend(
          &html, "<circle class=\"point", point.partial ? " partial" : "",
          "\" data-operator=\"", EscapeHtml(point.op), "\" data-intensity=\"",
          Number(point.intensity), "\" data-flops-per-second=\"",
          Number(point.bound_flops_per_second), "\" cx=\"",
          Coordinate(x_of(point.intensity)), "\" cy=\"",
          Coordinate(y_of(point.bound_flops_per_second)), "\" r=\"5\" fill=\"",
          point.partial ? "none" : "#2874a6",
          "\" stroke=\"#2874a6\" stroke-width=\"1.5\"><title>",
          EscapeHtml(point.op), ": ", point.partial ? "\u2265 " : "",
          GroupedCount(point.flops), " FLOPs, ", point.partial ? "\u2265 " : "",
          GroupedCount(point.bytes), " bytes, ", Number(point.intensity),
          " FLOPs/byte, at most ", Number(point.bound_flops_per_second),
          " FLOP/s (", memory_bound ? "memory" : "compute",
          "-bound)</title></circle>");
    }
    absl::StrAppend(&html, "</svg>");
  }
  if (!plot.left_out.empty()) {
    absl::StrAppend(&html, "<p class=\"chart-note\">Not plotted: ",
                    EscapeHtml(absl::StrJoin(plot.left_out, "; ")), ".</p>");
  }
  absl::StrAppend(&html, "</section>\n");
  return html;
}

}  // namespace torchscan::report::render
