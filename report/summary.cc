#include "report/summary.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "report/json_reader.h"
#include "report/python_text.h"

namespace torchscan::report {
namespace {

constexpr std::size_t kColumns = 8;
constexpr std::array<absl::string_view, kColumns> kHeaders = {
    "Layer",
    "Type",
    "Output Shape",
    "Param #",
    "Trainable",
    "Receptive field",
    "Effective stride",
    "Effective padding"};
constexpr std::array<std::int64_t, kColumns> kMaxWidths = {27, 20, 25, 15,
                                                           9,  15, 16, 17};
constexpr std::int64_t kUnboundedWrap = 100;
constexpr absl::string_view kMargin = "    ";
// Deeper trees cannot come from a real model; the bound keeps a hostile
// report from asking for gigabytes of tree prefix.
constexpr std::int64_t kMaxRenderDepth = 10000;

// format_s(text, width, width): pad to `width` code points, then cut to it.
std::string Cell(absl::string_view text, std::optional<std::int64_t> width) {
  if (!width) return std::string(text);
  std::string out(text);
  const auto length = static_cast<std::int64_t>(CodePointLength(text));
  if (length < *width) {
    out.append(static_cast<std::size_t>(*width - length), ' ');
  }
  return CodePointSlice(out, *width);
}

// f"{value:.0f}" of a receptive-field metric, "?" when it has no number.
std::string ReceptiveFieldText(const MetricMap& metrics,
                               absl::string_view name) {
  const MetricResult* result = metrics.Find(name);
  if (result == nullptr) return "?";
  const std::optional<MetricValue>& value =
      result->is_complete() ? result->value() : result->known_value();
  if (!value) return "?";
  if (const std::string* text = std::get_if<std::string>(&*value)) return *text;
  if (const Count* count = std::get_if<Count>(&*value)) {
    return PythonFixed(CountToDouble(*count), 0);
  }
  return PythonFixed(std::get<double>(*value), 0);
}

// format_line_str: the cells of one row; unbounded (for measuring) when
// `widths` is null.
absl::StatusOr<std::vector<std::string>> LineCells(
    const LayerReport& layer, const std::array<std::int64_t, kColumns>* widths,
    std::optional<absl::string_view> wrap_mode, bool receptive_field,
    bool effective_rf_stats) {
  const auto width = [&](std::size_t column) -> std::optional<std::int64_t> {
    if (widths == nullptr) return std::nullopt;
    return (*widths)[column];
  };
  std::vector<std::string> cells;
  TS_ASSIGN_OR_RETURN(
      std::string name,
      WrapString(FormatName(layer.name, layer.depth),
                 widths ? (*widths)[0] + 3 : kUnboundedWrap, wrap_mode));
  cells.push_back(Cell(name, width(0)));
  cells.push_back(Cell(layer.type, width(1)));
  TS_ASSIGN_OR_RETURN(
      std::string shape,
      WrapString(ShapeText(layer.output),
                 widths ? (*widths)[2] : kUnboundedWrap, "end"));
  cells.push_back(Cell(shape, width(2)));
  std::optional<Count> parameters =
      CheckedAdd(layer.parameters.trainable, layer.parameters.frozen);
  std::optional<Count> elements =
      parameters ? CheckedAdd(*parameters, layer.buffers.elements)
                 : std::nullopt;
  if (!elements) {
    return absl::OutOfRangeError(absl::StrCat("layer ",
                                              PythonStringRepr(layer.path),
                                              " has more than 2^127 elements"));
  }
  cells.push_back(Cell(PythonThousands(*elements), width(3)));
  // "-" for no parameters, else str(trainable > 0).
  absl::string_view trainable = "-";
  if (*parameters != 0) {
    trainable = layer.parameters.trainable > 0 ? "True" : "False";
  }
  cells.push_back(Cell(trainable, width(4)));
  if (receptive_field) {
    cells.push_back(
        Cell(ReceptiveFieldText(layer.metrics, kReceptiveField), width(5)));
    if (effective_rf_stats) {
      cells.push_back(
          Cell(ReceptiveFieldText(layer.metrics, kEffectiveStride), width(6)));
      cells.push_back(
          Cell(ReceptiveFieldText(layer.metrics, kEffectivePadding), width(7)));
    }
  }
  return cells;
}

absl::StatusOr<const MetricResult*> Total(const AnalysisReport& report,
                                          absl::string_view name) {
  const MetricResult* result = report.totals.Find(name);
  if (result == nullptr) {
    return FieldError(MemberPath("totals", name), "is missing");
  }
  return result;
}

// float(value): what Python makes of a metric number for display.
absl::StatusOr<double> AsFloat(const MetricValue& value,
                               absl::string_view name) {
  if (const Count* count = std::get_if<Count>(&value)) {
    return CountToDouble(*count);
  }
  if (const double* real = std::get_if<double>(&value)) return *real;
  return FieldError(MemberPath("totals", name),
                    absl::StrCat("cannot display the non-numeric value ",
                                 DescribeMetricValue(value)));
}

// int(totals[name]["value"] or 0), with thousands separators.
absl::StatusOr<std::string> ParameterLine(const AnalysisReport& report,
                                          absl::string_view label,
                                          absl::string_view name) {
  TS_ASSIGN_OR_RETURN(const MetricResult* total, Total(report, name));
  Count value = 0;
  if (total->value()) {
    const MetricValue& number = *total->value();
    if (const Count* count = std::get_if<Count>(&number)) {
      value = *count;
    } else {
      TS_ASSIGN_OR_RETURN(double real, AsFloat(number, name));
      // int(float) truncates toward zero.
      if (!std::isfinite(real) || std::fabs(real) >= 1.7e38) {
        return FieldError(MemberPath("totals", name), "is out of range");
      }
      value = Count(std::trunc(real));
    }
  }
  return absl::StrCat(label, ": ", PythonThousands(value));
}

absl::StatusOr<double> ValueOrZero(const AnalysisReport& report,
                                   absl::string_view name) {
  TS_ASSIGN_OR_RETURN(const MetricResult* total, Total(report, name));
  if (!total->value()) return 0.0;
  return AsFloat(*total->value(), name);
}

// _format_total: "<label>: [known ]<scaled> <prefix><unit>" or unavailable.
absl::StatusOr<std::string> TotalLine(const AnalysisReport& report,
                                      absl::string_view label,
                                      absl::string_view name) {
  TS_ASSIGN_OR_RETURN(const MetricResult* total, Total(report, name));
  const MetricResult& result = *total;
  const std::optional<MetricValue>& value =
      result.is_complete() ? result.value() : result.known_value();
  if (!value) return absl::StrCat(label, ": unavailable");
  TS_ASSIGN_OR_RETURN(double number, AsFloat(*value, name));
  const ScaledValue scaled = UnitScale(number);
  return absl::StrCat(label, ": ", result.is_complete() ? "" : "known ",
                      PythonFixed(scaled.value, 2), " ", scaled.prefix,
                      result.unit());
}

}  // namespace

std::string FormatName(absl::string_view name, std::int64_t depth) {
  if (depth == 0) return std::string(name);
  if (depth == 1) return absl::StrCat("├─", name);
  std::string out;
  for (std::int64_t i = 1; i < depth; ++i) out += "|    ";
  return absl::StrCat(out, "└─", name);
}

absl::StatusOr<std::string> WrapString(absl::string_view text,
                                       std::int64_t max_len,
                                       std::optional<absl::string_view> mode,
                                       absl::string_view delimiter,
                                       absl::string_view wrap) {
  if (static_cast<std::int64_t>(CodePointLength(text)) <= max_len || !mode) {
    return std::string(text);
  }
  const auto length = [](absl::string_view s) {
    return static_cast<std::int64_t>(CodePointLength(s));
  };
  if (*mode == "end") {
    return absl::StrCat(CodePointSlice(text, max_len - length(wrap)), wrap);
  }
  if (*mode == "mid") {
    if (delimiter.empty()) return absl::InvalidArgumentError("empty separator");
    const std::size_t last = text.rfind(delimiter);
    const absl::string_view final_part =
        last == absl::string_view::npos ? text
                                        : text.substr(last + delimiter.size());
    const std::string wrapped_end = absl::StrCat(wrap, ".", final_part);
    return absl::StrCat(CodePointSlice(text, max_len - length(wrapped_end)),
                        wrapped_end);
  }
  return absl::InvalidArgumentError(
      "received an unexpected value of argument `mode`");
}

ScaledValue UnitScale(double value) {
  constexpr std::pair<double, const char*> kScales[] = {
      {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  for (const auto& [threshold, prefix] : kScales) {
    if (PythonFloorDivide(value, threshold) > 0) {
      return ScaledValue{value / threshold, prefix};
    }
  }
  return ScaledValue{value, ""};
}

std::string ShapeText(const ValueMetadata& value) {
  const auto join_items = [](const std::vector<ValueMetadata>& items) {
    std::vector<std::string> parts;
    for (const ValueMetadata& item : items) parts.push_back(ShapeText(item));
    return absl::StrJoin(parts, ", ");
  };
  switch (value.kind) {
    case ValueKind::kTensor:
      // str(tuple(shape)): a one-element tuple keeps its trailing comma.
      return absl::StrCat("(", absl::StrJoin(value.shape, ", "),
                          value.shape.size() == 1 ? "," : "", ")");
    case ValueKind::kTuple:
      return absl::StrCat("(", join_items(value.items), ")");
    case ValueKind::kList:
      return absl::StrCat("[", join_items(value.items), "]");
    case ValueKind::kMapping: {
      std::vector<std::string> parts;
      for (const MappingItem& entry : value.entries) {
        parts.push_back(ShapeText(entry.value));
      }
      return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
    }
    default:
      return std::string(ValueKindName(value.kind));
  }
}

absl::StatusOr<AnalysisReport> AggregateInfo(const AnalysisReport& report,
                                             std::int64_t max_depth) {
  if (max_depth < 0) {
    return absl::InvalidArgumentError("max_depth must be non-negative.");
  }
  const bool reached = std::any_of(
      report.layers.begin(), report.layers.end(),
      [&](const LayerReport& layer) { return layer.depth == max_depth; });
  if (!report.layers.empty() && !reached) {
    return absl::InvalidArgumentError(
        "The `max_depth` argument cannot be higher than module depth.");
  }
  AnalysisReport view = report;
  view.layers.clear();
  for (const LayerReport& layer : report.layers) {
    if (layer.depth <= max_depth) view.layers.push_back(layer);
  }
  return view;
}

absl::StatusOr<std::string> FormatInfo(
    const AnalysisReport& report, std::optional<absl::string_view> wrap_mode,
    bool receptive_field, bool effective_rf_stats) {
  // Widths are measured over all eight columns, whatever is shown.
  std::array<std::int64_t, kColumns> widths;
  for (std::size_t i = 0; i < kColumns; ++i) {
    widths[i] = static_cast<std::int64_t>(CodePointLength(kHeaders[i]));
  }
  for (std::size_t i = 0; i < report.layers.size(); ++i) {
    const LayerReport& layer = report.layers[i];
    if (layer.depth > kMaxRenderDepth) {
      return FieldError(absl::StrCat("layers[", i, "].depth"),
                        absl::StrCat("is too deep to render (at most ",
                                     kMaxRenderDepth, ")"));
    }
    TS_ASSIGN_OR_RETURN(std::vector<std::string> cells,
                        LineCells(layer, nullptr, "mid", true, true));
    for (std::size_t column = 0; column < kColumns; ++column) {
      widths[column] =
          std::max(widths[column],
                   static_cast<std::int64_t>(CodePointLength(cells[column])));
    }
  }
  for (std::size_t i = 0; i < kColumns; ++i) {
    widths[i] = std::min(widths[i], kMaxWidths[i]);
  }
  const std::size_t shown = !receptive_field ? 5 : !effective_rf_stats ? 6 : 8;

  std::int64_t line_length = static_cast<std::int64_t>(kMargin.size()) *
                             static_cast<std::int64_t>(shown - 1);
  for (std::size_t i = 0; i < shown; ++i) line_length += widths[i];
  const std::string thin(static_cast<std::size_t>(line_length), '_');
  const std::string thick(static_cast<std::size_t>(line_length), '=');
  const std::string dotted(static_cast<std::size_t>(line_length), '-');

  std::vector<std::string> lines = {thin};
  std::vector<std::string> headers;
  for (std::size_t i = 0; i < shown; ++i) {
    headers.push_back(Cell(kHeaders[i], widths[i]));
  }
  lines.push_back(absl::StrJoin(headers, kMargin));
  lines.push_back(thick);
  for (const LayerReport& layer : report.layers) {
    TS_ASSIGN_OR_RETURN(std::vector<std::string> cells,
                        LineCells(layer, &widths, wrap_mode, receptive_field,
                                  effective_rf_stats));
    lines.push_back(absl::StrJoin(cells, kMargin));
  }
  lines.push_back(thick);
  for (auto [label, name] :
       {std::pair{"Trainable params", "trainable_parameters"},
        std::pair{"Non-trainable params", "frozen_parameters"},
        std::pair{"Total params", "parameters"}}) {
    TS_ASSIGN_OR_RETURN(std::string line, ParameterLine(report, label, name));
    lines.push_back(std::move(line));
  }
  lines.push_back(dotted);
  TS_ASSIGN_OR_RETURN(double parameter_bytes,
                      ValueOrZero(report, "parameter_bytes"));
  TS_ASSIGN_OR_RETURN(double buffer_bytes, ValueOrZero(report, "buffer_bytes"));
  // "Mb" is MiB, as upstream prints it.
  lines.push_back(absl::StrCat(
      "Model size (params + buffers): ",
      PythonFixed((parameter_bytes + buffer_bytes) / 1048576.0, 2), " Mb"));
  lines.push_back(dotted);
  for (auto [label, name] :
       {std::pair{"Module-formula forward FLOPs", "module_flops"},
        std::pair{"Multiply-Accumulations", "macs"},
        std::pair{"Direct memory accesses", "dmas"}}) {
    TS_ASSIGN_OR_RETURN(std::string line, TotalLine(report, label, name));
    lines.push_back(std::move(line));
  }
  if (report.totals.Contains("operator_flops")) {
    TS_ASSIGN_OR_RETURN(
        std::string line,
        TotalLine(report, "Operator forward FLOPs", "operator_flops"));
    lines.push_back(std::move(line));
  }
  if (!report.diagnostics.empty()) {
    lines.push_back(absl::StrCat("Diagnostics: ", report.diagnostics.size(),
                                 " (inspect report['diagnostics'])"));
  }
  lines.push_back(thin);
  return absl::StrJoin(lines, "\n");
}

absl::StatusOr<std::string> RenderSummary(const AnalysisReport& report,
                                          const SummaryOptions& options) {
  const AnalysisReport* display = &report;
  std::optional<AnalysisReport> limited;
  if (options.max_depth) {
    TS_ASSIGN_OR_RETURN(limited, AggregateInfo(report, *options.max_depth));
    display = &*limited;
  }
  std::optional<absl::string_view> wrap_mode;
  if (options.wrap_mode) wrap_mode = *options.wrap_mode;
  TS_ASSIGN_OR_RETURN(std::string text,
                      FormatInfo(*display, wrap_mode, options.receptive_field,
                                 options.effective_rf_stats));
  return absl::StrCat(text, "\n");
}

}  // namespace torchscan::report
