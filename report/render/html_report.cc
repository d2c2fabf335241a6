#include "report/render/html_report.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "base/status_macros.h"
#include "report/aggregate.h"
#include "report/compare.h"
#include "report/python_text.h"
#include "report/render/count_sum.h"
#include "report/render/diagnostic_listing.h"
#include "report/render/html_text.h"
#include "report/render/module_tree.h"
#include "report/render/repeated_blocks.h"
#include "report/render/type_costs.h"
#include "report/summary.h"

namespace torchscan::report::render {
namespace {

// The style sheet and the script (assets/), embedded by the BUILD's genrule.
constexpr char kStyleSheet[] =
#include "report/render/report_css.inc"
    ;
constexpr char kScript[] =
#include "report/render/report_js.inc"
    ;

// Module path -> "changed", "added" or "removed", outlined in a chart.
using Marks = std::map<std::string, std::string>;

// One icicle chart: a title, its tree, how its bars are outlined, and a
// note saying what the chart leaves out (empty when nothing).
struct ChartSpec {
  std::string id;
  std::string title;
  ModuleTree tree;
  Marks marks;
  std::string note;
};

Json NodeJson(const ModuleNode& node, const Marks& marks) {
  Json json = Json::object();
  json["name"] = node.name;
  json["path"] = node.path;
  json["type"] = node.type;
  // A string: JavaScript numbers are exact only up to 2^53.
  json["value"] = CountToString(node.value);
  json["status"] = std::string(MetricStatusName(node.status));
  if (auto mark = marks.find(node.path); mark != marks.end()) {
    json["mark"] = mark->second;
  }
  json["children"] = Json::array();
  for (const ModuleNode& child : node.children) {
    json["children"].push_back(NodeJson(child, marks));
  }
  return json;
}

// The chart's top bar: the model, or, when the workload holds more than one
// root or FLOPs outside every module, the workload above its roots.
Json ChartRoot(const ModuleTree& tree, const Marks& marks) {
  if (tree.roots.size() == 1 && tree.roots[0].value == tree.total &&
      tree.roots[0].status == tree.status) {
    return NodeJson(tree.roots[0], marks);
  }
  ModuleNode workload{"(workload)", "", ""};
  workload.status = tree.status;
  workload.value = tree.total;
  Json json = NodeJson(workload, marks);
  for (const ModuleNode& root : tree.roots) {
    json["children"].push_back(NodeJson(root, marks));
  }
  return json;
}

std::string StatusWord(MetricStatus status) {
  switch (status) {
    case MetricStatus::kComplete:
      return "complete";
    case MetricStatus::kPartial:
      return "partial (lower bound)";
    case MetricStatus::kUnavailable:
      return "unavailable";
  }
  return "";
}

std::string StatusWord(const MetricResult& result) {
  if (result.method() == kNotRequestedMethod) return "not requested";
  return StatusWord(result.status());
}

std::string StatusClass(MetricStatus status) {
  return std::string(MetricStatusName(status));
}

// A table cell holding a metric, with its status as the cell's class.
// The cell's `data-value`, what the page's script sorts by: the known count
// (a lower bound when partial), or nothing (sorted last) when there is none.
std::string SortValue(const MetricResult& result) {
  if (!result.known_value()) return "";
  const Count* count = std::get_if<Count>(&*result.known_value());
  return count == nullptr ? "" : CountToString(*count);
}

std::string MetricCell(const MetricResult* result) {
  if (result == nullptr) return "<td class=\"num\" data-value=\"\"></td>";
  return absl::StrCat("<td class=\"num ", StatusClass(result->status()),
                      "\" data-value=\"", SortValue(*result), "\" title=\"",
                      EscapeHtml(StatusWord(*result)), "\">",
                      EscapeHtml(MetricText(*result)), "</td>");
}

std::string CountCell(Count value) {
  return absl::StrCat("<td class=\"num\" data-value=\"", CountToString(value),
                      "\">", GroupedCount(value), "</td>");
}

// The filter box above a table; the script fills in the count beside it.
std::string TableFilter(absl::string_view table, absl::string_view what) {
  return absl::StrCat(
      "<div class=\"table-tools\"><input type=\"search\" "
      "class=\"table-filter\" data-table=\"",
      table, "\" placeholder=\"Filter by ", what, "\" aria-label=\"Filter by ",
      what, "\"> <span class=\"table-count\" data-table=\"", table,
      "\"></span> <span class=\"hint\">Click a column heading to sort; "
      "click it again to reverse, a third time for the original order."
      "</span></div>");
}

std::string LayerCallText(absl::string_view path, std::int64_t call_index) {
  return absl::StrCat(path.empty() ? "<root>" : path, " #", call_index);
}

class Page {
 public:
  explicit Page(std::string title) : title_(std::move(title)) {}

  void Add(absl::string_view html) { absl::StrAppend(&body_, html); }

  void Header(absl::string_view subtitle) {
    Add(absl::StrCat(
        "<header><h1>", EscapeHtml(title_), "</h1><p>", EscapeHtml(subtitle),
        "</p><div class=\"search\"><input type=\"search\" id=\"search\" "
        "placeholder=\"Search modules, types and operators (press /)\" "
        "aria-label=\"Search modules, types and operators\"> <span "
        "id=\"search-count\"></span></div></header>\n"));
  }

  // Charts one above the other, each the page's full width. On one scale
  // (charts of one unit), the largest top bar spans the width; otherwise
  // each chart's own does.
  //
  // NOTE [Empty charts give their space away]: a chart with nothing to draw
  // (a total of 0) is one line saying so and why (its note), with no chart
  // area. On a shared scale, a chart under a tenth of the largest (module
  // formulas of a model whose layers have none, transformers' Conv1D) would
  // be a strip of blank space with unreadable bars: it is folded into one
  // line with its note, and opens on a click.
  enum class Scale { kShared, kOwn };
  void ChartGroup(absl::string_view id, absl::string_view title,
                  absl::string_view legend, const std::vector<ChartSpec>& specs,
                  Scale scaling) {
    Count shared = 0;
    for (const ChartSpec& spec : specs)
      shared = std::max(shared, spec.tree.total);
    Add(absl::StrCat("<section class=\"chart-group\" id=\"", id, "\"><h2>",
                     EscapeHtml(title), "</h2><p class=\"legend\">", legend,
                     "</p><div class=\"charts\">"));
    for (const ChartSpec& spec : specs) {
      const std::string bound =
          spec.tree.status == MetricStatus::kComplete ? "" : "\u2265 ";
      const std::string caption = absl::StrCat(
          EscapeHtml(spec.title), ": <span class=\"chart-total ",
          StatusClass(spec.tree.status), "\">", bound,
          EscapeHtml(ScaledCount(spec.tree.total, spec.tree.unit)), "</span>");
      const std::string note =
          spec.note.empty() ? ""
                            : absl::StrCat("<p class=\"chart-note\">",
                                           EscapeHtml(spec.note), "</p>");
      if (spec.tree.total == 0) {
        Add(absl::StrCat("<figure class=\"chart empty-chart\" data-chart=\"",
                         spec.id, "\"><figcaption>", caption, "</figcaption>",
                         note.empty() ? "<p class=\"chart-note\">Nothing "
                                        "counted.</p>"
                                      : note,
                         "</figure>"));
        continue;
      }
      const bool folded = scaling == Scale::kShared && specs.size() > 1 &&
                          spec.tree.total < shared / 10;
      const std::string figure = absl::StrCat(
          "<figure class=\"chart\" data-chart=\"", spec.id, "\"><figcaption>",
          caption, "</figcaption>", folded ? "" : note,
          "<nav class=\"crumbs\" aria-label=\"Zoom path\"></nav>"
          "<div class=\"icicle\" id=\"chart-",
          spec.id, "\" role=\"img\" aria-label=\"", EscapeHtml(spec.title),
          " by module\"></div></figure>");
      if (folded) {
        Add(absl::StrCat(
            "<details class=\"chart-fold\" data-chart=\"", spec.id,
            "\"><summary>", caption, " (", PercentText(spec.tree.total, shared),
            " of the scale: folded, click to show). ", EscapeHtml(spec.note),
            "</summary>", figure, "</details>"));
      } else {
        Add(figure);
      }
      Json chart = Json::object();
      chart["id"] = spec.id;
      chart["unit"] = spec.tree.unit;
      chart["scale"] =
          CountToString(scaling == Scale::kShared ? shared : spec.tree.total);
      chart["root"] = ChartRoot(spec.tree, spec.marks);
      charts_.push_back(std::move(chart));
    }
    Add("</div></section>\n");
  }

  std::string Finish() const {
    Json data = Json::object();
    data["charts"] = charts_;
    return absl::StrCat(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">"
        "\n<meta name=\"viewport\" content=\"width=device-width, "
        "initial-scale=1\">\n<title>",
        EscapeHtml(title_), "</title>\n<style>\n", kStyleSheet,
        "</style>\n</head>\n<body>\n", body_,
        "<script type=\"application/json\" id=\"torchscan-data\">",
        JsonForScript(data), "</script>\n<script>\n", kScript,
        "</script>\n</body>\n</html>\n");
  }

 private:
  std::string title_;
  std::string body_;
  Json charts_ = Json::array();
};

constexpr char kPartialLegend[] =
    "Width is proportional to the value. <span class=\"swatch partial\">"
    "</span> hatched and marked \u2265: partial, a lower bound (see the "
    "diagnostics). Click a bar to zoom in, the top bar to zoom out a level, "
    "a breadcrumb to go back up to it; hover a bar to outline its module in "
    "the other chart.";

constexpr char kBytesLegend[] =
    "Bytes each module's operator calls read and wrote (its submodules' "
    "included). <span class=\"swatch partial\"></span> hatched and marked "
    "\u2265: partial, a lower bound: some call's bytes are not known, or a "
    "compiled graph ran, whose fused kernels move at least its own inputs "
    "and outputs (counted) and at most the unfused sum (the totals' upper "
    "bound; there is none per module).";

std::string TotalLabel(absl::string_view name) {
  static const auto* const kLabels = new std::map<std::string, std::string>{
      {"parameters", "Parameters"},
      {"trainable_parameters", "Trainable parameters"},
      {"frozen_parameters", "Frozen parameters"},
      {"parameter_bytes", "Parameter bytes"},
      {"buffer_elements", "Buffer elements"},
      {"buffer_bytes", "Buffer bytes"},
      {"module_flops", "Module-formula FLOPs"},
      {"operator_flops", "Operator FLOPs"},
      {"macs", "Multiply-accumulates (MACs)"},
      {"dmas", "Direct memory accesses (DMAs)"},
      {"bytes", "Bytes moved"},
      {"bytes_upper_bound",
       "Bytes moved, upper bound (compiled graphs unfused)"},
  };
  auto it = kLabels->find(std::string(name));
  return it == kLabels->end() ? std::string(name) : it->second;
}

void TotalsTable(Page& page, const MetricMap& totals) {
  page.Add(
      "<section id=\"totals\"><h2>Totals</h2><table class=\"totals\"><thead>"
      "<tr><th>Metric</th><th>Value</th><th>Unit</th><th>Status</th></tr>"
      "</thead><tbody>");
  for (const auto& [name, result] : totals) {
    page.Add(absl::StrCat("<tr data-metric=\"", EscapeHtml(name), "\"><th>",
                          EscapeHtml(TotalLabel(name)), "</th>",
                          MetricCell(&result), "<td>",
                          EscapeHtml(result.unit()), "</td><td>",
                          EscapeHtml(StatusWord(result)), "</td></tr>"));
  }
  page.Add("</tbody></table></section>\n");
}

void DiagnosticsSection(Page& page, absl::Span<const Diagnostic> diagnostics) {
  page.Add(absl::StrCat("<section id=\"diagnostics\"><h2>Diagnostics (",
                        diagnostics.size(), ")</h2>"));
  if (diagnostics.empty()) page.Add("<p>No diagnostics.</p>");
  for (const DiagnosticGroup& group : GroupDiagnostics(diagnostics)) {
    std::string metrics;
    if (!group.metrics.empty()) {
      metrics = absl::StrCat(" (", absl::StrJoin(group.metrics, ", "), ")");
    }
    page.Add(absl::StrCat(
        "<details open class=\"diagnostic-group\" data-code=\"",
        EscapeHtml(group.code), "\"><summary><code>", EscapeHtml(group.code),
        "</code>: <span class=\"count\">", group.diagnostics.size(),
        "</span> on ", group.subjects.size(), " ", group.subject_noun,
        EscapeHtml(metrics),
        "</summary><table><thead><tr><th>Subject</th><th>Metric</th>"
        "<th>Severity</th><th>Message</th></tr></thead><tbody>"));
    for (const Diagnostic* diagnostic : group.diagnostics) {
      page.Add(absl::StrCat(
          "<tr><td><code>", EscapeHtml(SubjectText(*diagnostic)),
          "</code></td><td>", EscapeHtml(diagnostic->metric), "</td><td>",
          EscapeHtml(diagnostic->severity), "</td><td>",
          EscapeHtml(diagnostic->message), "</td></tr>"));
    }
    page.Add("</tbody></table></details>");
  }
  page.Add("</section>\n");
}

// Counted operators by FLOPs, then the uncounted and the ignored ones.
// Operator -> module type -> self FLOPs (type_costs.h), for the operators'
// "Run in" column; null for a report without per-call operator FLOPs.
using OperatorTypes = std::map<std::string, std::map<std::string, Count>>;

// The types that ran most of an operator's FLOPs: "Linear 96.0%, Conv2d
// 4.0%" (the first three with any).
std::string RunInText(const OperatorTypes& types, const std::string& op,
                      Count total) {
  auto it = types.find(op);
  if (it == types.end() || total == 0) return "";
  std::vector<std::pair<std::string, Count>> ranked;
  for (const auto& [type, value] : it->second) {
    if (value > 0) ranked.emplace_back(type, value);
  }
  std::stable_sort(
      ranked.begin(), ranked.end(),
      [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < ranked.size() && i < 3; ++i) {
    parts.push_back(absl::StrCat(ranked[i].first, " ",
                                 PercentText(ranked[i].second, total)));
  }
  if (ranked.size() > 3) parts.push_back("\u2026");
  return absl::StrJoin(parts, ", ");
}

// An operator's bytes moved (marked \u2265 when a bytes diagnostic names
// it) and FLOPs per byte (its known FLOPs over its known bytes, titled "of
// the known work" when either count is partial); empty cells when it moved
// none.
std::string BytesCells(std::optional<Count> flops, bool flops_partial,
                       std::optional<Count> bytes, bool bytes_partial) {
  if (!bytes) {
    return "<td class=\"num\" data-value=\"\"></td>"
           "<td class=\"num\" data-value=\"\"></td>";
  }
  std::string intensity, intensity_value;
  if (flops && *flops > 0 && *bytes > 0) {
    const double value = CountToDouble(*flops) / CountToDouble(*bytes);
    intensity_value = PythonFloatRepr(value);
    intensity = PythonFixed(value, 2);
  }
  const bool partial = flops_partial || bytes_partial;
  return absl::StrCat(
      "<td class=\"num", bytes_partial ? " partial" : "", "\" data-value=\"",
      CountToString(*bytes), "\">", bytes_partial ? "\u2265 " : "",
      GroupedCount(*bytes), "</td><td class=\"num", partial ? " partial" : "",
      "\" data-value=\"", intensity_value, "\"",
      partial && !intensity.empty() ? " title=\"of the known work\"" : "", ">",
      intensity, "</td>");
}

absl::Status OperatorsSection(Page& page, const FlopReport& report,
                              const OperatorTypes* types = nullptr) {
  struct Row {
    std::string name;
    std::optional<Count> flops;
    std::vector<std::string> notes;
    bool uncounted = false;
    std::optional<Count> bytes;
    bool bytes_partial = false;
  };
  std::map<std::string, Row> rows;
  for (const auto& [name, flops] : report.by_operator) {
    rows[name] = Row{name, flops};
  }
  if (report.bytes) {
    for (const auto& [name, moved] : report.bytes->by_operator) {
      Row& row = rows[name];
      row.name = name;
      TS_ASSIGN_OR_RETURN(row.bytes,
                          SumCounts(moved.read, moved.written, "bytes"));
    }
    for (const Diagnostic& diagnostic : report.bytes->diagnostics) {
      if (diagnostic.subject_kind != DiagnosticSubject::kOperator) continue;
      Row& row = rows[diagnostic.subject];
      row.name = diagnostic.subject;
      row.bytes_partial = true;
      if (!row.bytes) row.bytes = 0;
      row.notes.push_back(diagnostic.message);
    }
  }
  for (const Diagnostic& diagnostic : report.diagnostics) {
    if (diagnostic.subject_kind != DiagnosticSubject::kOperator) continue;
    Row& row = rows[diagnostic.subject];
    row.name = diagnostic.subject;
    row.uncounted = true;
    row.notes.push_back(diagnostic.message);
  }
  for (const auto& [name, ignored] : report.ignored_operators) {
    Row& row = rows[name];
    row.name = name;
    if (!row.flops) row.flops = 0;
    row.notes.push_back(absl::StrCat("ignored (", CountToString(ignored.calls),
                                     " calls): ", ignored.reason));
  }
  std::vector<Row> ordered;
  for (auto& [unused, row] : rows) ordered.push_back(std::move(row));
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const Row& a, const Row& b) {
                     return a.flops.value_or(-1) > b.flops.value_or(-1);
                   });
  const Count* known = report.total.known_value()
                           ? std::get_if<Count>(&*report.total.known_value())
                           : nullptr;
  const Count total = known ? *known : 0;
  page.Add(absl::StrCat(
      "<section id=\"operators\"><h2>Operators (", ordered.size(), ")</h2>",
      TableFilter("operators", "operator name"),
      "<table class=\"operators sortable\" id=\"operators-table\"><thead>"
      "<tr><th>Operator</th><th>FLOPs</th><th>Share</th>",
      report.bytes ? "<th>Bytes moved</th><th>FLOPs per byte</th>" : "",
      types ? "<th data-nosort>Run in (self FLOPs by module type)</th>" : "",
      "<th data-nosort>Notes</th></tr></thead><tbody>"));
  for (std::size_t index = 0; index < ordered.size(); ++index) {
    const Row& row = ordered[index];
    std::string flops = row.flops       ? GroupedCount(*row.flops)
                        : row.uncounted ? "not counted"
                                        : "";
    if (row.flops && row.uncounted) flops = absl::StrCat("\u2265 ", flops);
    const std::string share = row.flops ? PercentText(*row.flops, total) : "";
    const std::string value = row.flops ? CountToString(*row.flops) : "";
    page.Add(absl::StrCat(
        "<tr data-operator=\"", EscapeHtml(row.name), "\" data-index=\"", index,
        "\"", row.uncounted ? " class=\"uncounted\"" : "", "><td data-value=\"",
        EscapeHtml(row.name), "\"><code>", EscapeHtml(row.name),
        "</code></td><td class=\"num\" data-value=\"", value, "\">", flops,
        "</td><td class=\"share\" data-value=\"", value,
        "\"><span class=\"share-track\"><span class=\"share-bar\" "
        "style=\"width:",
        share.empty() ? "0%" : share, "\"></span></span>", share, "</td>",
        report.bytes
            ? BytesCells(row.flops, row.uncounted, row.bytes, row.bytes_partial)
            : "",
        types ? absl::StrCat("<td>",
                             EscapeHtml(RunInText(*types, row.name,
                                                  row.flops.value_or(0))),
                             "</td>")
              : "",
        "<td>", EscapeHtml(absl::StrJoin(row.notes, " ")), "</td></tr>"));
  }
  page.Add("</tbody></table></section>\n");
  return absl::OkStatus();
}

// NOTE [Sandwich]: the cost of each module class across the tree, beside
// the cost of each operator across it (the operators table's "Run in"):
// where a model's FLOPs go when its paths are too many to read. A type's
// button searches for exactly that type ("type:Conv2d"), highlighting its
// bars in every chart and its rows.
void TypesSection(Page& page, const TypeCosts& costs, Count total) {
  page.Add(absl::StrCat(
      "<section id=\"types\"><h2>FLOPs by module type</h2><p "
      "class=\"legend\">Operator FLOPs of each module class across the "
      "tree: inclusive (a module inside another of its class counts once, in "
      "the outer), and self (run in the modules' own forward, outside their "
      "submodules; these add up to the total). Click a type to highlight its "
      "modules.</p>",
      TableFilter("types", "module type"),
      "<table class=\"types sortable\" id=\"types-table\"><thead><tr>"
      "<th>Module type</th><th>Modules</th><th>Calls</th><th>FLOPs</th>"
      "<th>Self FLOPs</th><th>Self share</th><th data-nosort>Operators "
      "inside</th></tr></thead><tbody>"));
  for (std::size_t index = 0; index < costs.types.size(); ++index) {
    const TypeCost& type = costs.types[index];
    const std::string bound =
        type.status == MetricStatus::kComplete ? "" : "\u2265 ";
    std::vector<std::pair<std::string, Count>> inside(type.by_operator.begin(),
                                                      type.by_operator.end());
    std::stable_sort(
        inside.begin(), inside.end(),
        [](const auto& a, const auto& b) { return a.second > b.second; });
    std::vector<std::string> parts;
    for (std::size_t i = 0; i < inside.size() && i < 3; ++i) {
      if (inside[i].second == 0) break;
      parts.push_back(absl::StrCat(inside[i].first, " ",
                                   PercentText(inside[i].second, type.flops)));
    }
    if (inside.size() > 3 && inside[3].second > 0) parts.push_back("\u2026");
    const std::string share = PercentText(type.self_flops, total);
    page.Add(absl::StrCat(
        "<tr data-type=\"", EscapeHtml(type.type), "\" data-index=\"", index,
        "\"><td data-value=\"", EscapeHtml(type.type),
        "\"><button type=\"button\" class=\"type-search\">",
        EscapeHtml(type.type), "</button></td><td class=\"num\" data-value=\"",
        type.modules, "\">", type.modules,
        "</td><td class=\"num\" data-value=\"", type.calls, "\">", type.calls,
        "</td><td class=\"num ", StatusClass(type.status), "\" data-value=\"",
        CountToString(type.flops), "\">", bound, GroupedCount(type.flops),
        "</td><td class=\"num ", StatusClass(type.status), "\" data-value=\"",
        CountToString(type.self_flops), "\">", bound,
        GroupedCount(type.self_flops), "</td><td class=\"share\" data-value=\"",
        CountToString(type.self_flops),
        "\"><span class=\"share-track\"><span class=\"share-bar\" "
        "style=\"width:",
        share.empty() ? "0%" : share, "\"></span></span>", share, "</td><td>",
        EscapeHtml(absl::StrJoin(parts, ", ")), "</td></tr>"));
  }
  page.Add("</tbody></table></section>\n");
}

std::string InputText(const InputsMetadata& inputs) {
  std::vector<std::string> shapes;
  for (const ValueMetadata& arg : inputs.call.args) {
    shapes.push_back(ShapeText(arg));
  }
  for (const auto& [name, value] : inputs.call.kwargs) {
    shapes.push_back(absl::StrCat(name, "=", ShapeText(value)));
  }
  return absl::StrJoin(shapes, ", ");
}

std::string AnalysisTitle(const AnalysisReport& report,
                          const HtmlOptions& options) {
  if (!options.title.empty()) return options.title;
  if (!report.context.model_type.empty()) return report.context.model_type;
  return "TorchScan report";
}

// A layer call as a fold names it: its path, and which call when not the
// first.
std::string BlockName(const LayerReport& layer) {
  const std::string path = layer.path.empty() ? "<root>" : layer.path;
  if (layer.call_index == 0) return path;
  return absl::StrCat(path, " (call ", layer.call_index + 1, ")");
}

// One layer call's row: its first cell (the indented name) and the rest,
// which FindRepeatedBlocks compares.
struct LayerRow {
  std::string open;
  std::string name_cell;
  std::string cells;
};

// NOTE [Folded blocks]: a run of identical sibling blocks
// (repeated_blocks.h: same type, same rows below, same numbers in every
// column) gets a row of its own before the first block ("24 x GPT2Block,
// identical"), and the rows of the other blocks carry the run's id in
// `data-folded-in`: the script hides them until the run's button opens it.
// The first block stays, as what each block holds. Without the script every
// row shows.
absl::Status LayersTable(Page& page, const AnalysisReport& report) {
  std::map<std::pair<std::string, std::int64_t>, const MetricResult*>
      operator_flops;
  if (report.layer_operator_flops) {
    for (const LayerOperatorFlops& entry : *report.layer_operator_flops) {
      operator_flops[{entry.path, entry.call_index}] = &entry.total;
    }
  }
  const bool show_operators = report.layer_operator_flops.has_value();
  std::vector<LayerRow> rows;
  std::vector<BlockRow> blocks;
  for (std::size_t index = 0; index < report.layers.size(); ++index) {
    const LayerReport& layer = report.layers[index];
    const std::string name =
        layer.call_index == 0
            ? layer.name
            : absl::StrCat(layer.name, " (call ", layer.call_index + 1, ")");
    LayerRow row;
    row.open =
        absl::StrCat("<tr data-path=\"", EscapeHtml(layer.path),
                     "\" data-call=\"", layer.call_index, "\" data-type=\"",
                     EscapeHtml(layer.type), "\" data-index=\"", index, "\"");
    row.name_cell = absl::StrCat(
        "<td class=\"layer\" style=\"padding-left:",
        0.3 + 1.2 * static_cast<double>(layer.depth), "em\" title=\"",
        EscapeHtml(LayerCallText(layer.path, layer.call_index)),
        "\" data-value=\"", EscapeHtml(layer.path), "\">", EscapeHtml(name),
        "</td>");
    TS_ASSIGN_OR_RETURN(Count parameters,
                        SumCounts(layer.parameters.trainable,
                                  layer.parameters.frozen, "parameters"));
    TS_ASSIGN_OR_RETURN(Count bytes, SumCounts(layer.parameters.bytes,
                                               layer.buffers.bytes, "bytes"));
    row.cells = absl::StrCat("<td data-value=\"", EscapeHtml(layer.type), "\">",
                             EscapeHtml(layer.type), "</td><td>",
                             EscapeHtml(ShapeText(layer.output)), "</td>",
                             CountCell(parameters), CountCell(bytes),
                             MetricCell(layer.metrics.Find("module_flops")),
                             MetricCell(layer.metrics.Find("macs")));
    if (show_operators) {
      auto it = operator_flops.find({layer.path, layer.call_index});
      absl::StrAppend(
          &row.cells,
          MetricCell(it == operator_flops.end() ? nullptr : it->second));
    }
    blocks.push_back({layer.path, layer.depth, layer.type,
                      absl::StrCat(layer.call_index, " ", row.cells)});
    rows.push_back(std::move(row));
  }
  const int columns = show_operators ? 8 : 7;
  // Row -> the run starting there; row -> the runs that fold it away.
  std::map<std::size_t, std::pair<std::string, RepeatedBlocks>> run_at;
  std::vector<std::vector<std::string>> folded_in(rows.size());
  for (const RepeatedBlocks& run : FindRepeatedBlocks(blocks)) {
    const std::string id = absl::StrCat("fold-", run.first_row);
    run_at[run.first_row] = {id, run};
    for (std::size_t row = run.first_row + run.rows_per_block;
         row < run.first_row + run.rows_per_block * run.count; ++row) {
      folded_in[row].push_back(id);
    }
  }
  page.Add(absl::StrCat(
      "<section id=\"layers\"><h2>Layers</h2>",
      TableFilter("layers", "module path or type"),
      "<table class=\"layers sortable\" id=\"layers-table\"><thead><tr>"
      "<th>Layer</th><th>Type</th><th data-nosort>Output shape</th>"
      "<th>Parameters</th><th>Memory (bytes)</th><th>Module FLOPs</th>"
      "<th>MACs</th>",
      show_operators ? "<th>Operator FLOPs</th>" : "", "</tr></thead><tbody>"));
  for (std::size_t index = 0; index < rows.size(); ++index) {
    if (auto run = run_at.find(index); run != run_at.end()) {
      const auto& [id, blocks_run] = run->second;
      const LayerReport& first = report.layers[index];
      const LayerReport& last =
          report.layers[index +
                        blocks_run.rows_per_block * (blocks_run.count - 1)];
      page.Add(absl::StrCat(
          "<tr class=\"fold\" data-fold=\"", id, "\"",
          folded_in[index].empty()
              ? ""
              : absl::StrCat(" data-folded-in=\"",
                             absl::StrJoin(folded_in[index], " "), "\""),
          "><td colspan=\"", columns, "\" style=\"padding-left:",
          0.3 + 1.2 * static_cast<double>(first.depth),
          "em\"><button type=\"button\" class=\"fold-toggle\" "
          "aria-expanded=\"true\">",
          blocks_run.count, " \u00d7 ", EscapeHtml(first.type),
          ", identical</button> <span class=\"fold-range\">",
          EscapeHtml(BlockName(first)), " to ", EscapeHtml(BlockName(last)),
          ", ", blocks_run.rows_per_block,
          blocks_run.rows_per_block == 1 ? " row" : " rows",
          " each, with the same types, paths and numbers; the first is "
          "shown</span></td></tr>"));
    }
    const LayerRow& row = rows[index];
    page.Add(absl::StrCat(
        row.open,
        folded_in[index].empty()
            ? ""
            : absl::StrCat(" data-folded-in=\"",
                           absl::StrJoin(folded_in[index], " "), "\""),
        ">", row.name_cell, row.cells, "</tr>"));
  }
  page.Add("</tbody></table></section>\n");
  return absl::OkStatus();
}

// Why the module-formula chart misses FLOPs: the layer types whose calls
// have no formula (module_flops known only as >= 0), most calls first;
// "" when every layer with the metric has one.
std::string MissingFormulaNote(const AnalysisReport& report) {
  std::map<std::string, int> calls;
  for (const LayerReport& layer : report.layers) {
    const MetricResult* flops = layer.metrics.Find("module_flops");
    if (flops == nullptr) continue;
    const std::string known = SortValue(*flops);
    if (flops->status() == MetricStatus::kComplete ||
        (!known.empty() && known != "0")) {
      continue;
    }
    ++calls[layer.type];
  }
  if (calls.empty()) return "";
  std::vector<std::pair<std::string, int>> types(calls.begin(), calls.end());
  std::stable_sort(
      types.begin(), types.end(),
      [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (const auto& [type, count] : types) {
    parts.push_back(
        absl::StrCat(type, " (", count, count == 1 ? " call" : " calls", ")"));
  }
  return absl::StrCat(
      "No module formula for ", absl::StrJoin(parts, ", "),
      ": their module FLOPs are unknown (\u2265 0 here); the operator FLOPs "
      "count what they ran.");
}

// The FLOPs charts of an analysis, or a note saying why there are none.
absl::StatusOr<std::vector<ChartSpec>> FlopCharts(const AnalysisReport& report,
                                                  absl::string_view prefix,
                                                  absl::string_view side,
                                                  const Marks& marks) {
  std::vector<ChartSpec> specs;
  if (HasModuleFormulas(report)) {
    TS_ASSIGN_OR_RETURN(ModuleTree tree,
                        ModuleFormulaTree(report, "module_flops"));
    specs.push_back({absl::StrCat(prefix, "module_flops"),
                     absl::StrCat(side, "Module formulas"), std::move(tree),
                     marks, MissingFormulaNote(report)});
  }
  if (HasOperatorFlops(report)) {
    TS_ASSIGN_OR_RETURN(ModuleTree tree, OperatorFlopsTree(report));
    specs.push_back({absl::StrCat(prefix, "operator_flops"),
                     absl::StrCat(side, "Operator FLOPs"), std::move(tree),
                     marks});
  }
  return specs;
}

std::string DeltaText(const MetricDiff& diff) {
  if (!diff.delta) return "n/a";
  if (const Count* count = std::get_if<Count>(&*diff.delta)) {
    return absl::StrCat(*count > 0 ? "+" : "", GroupedCount(*count));
  }
  if (const double* number = std::get_if<double>(&*diff.delta)) {
    return absl::StrCat(*number > 0 ? "+" : "", PythonFloatRepr(*number));
  }
  return std::get<std::string>(*diff.delta);
}

bool IsZeroDelta(const MetricDiff& diff) {
  if (!diff.delta) return false;
  if (const Count* count = std::get_if<Count>(&*diff.delta)) return *count == 0;
  if (const double* number = std::get_if<double>(&*diff.delta)) {
    return *number == 0;
  }
  return false;
}

std::string MetricDiffCells(const MetricDiff& diff) {
  return absl::StrCat(MetricCell(diff.before ? &*diff.before : nullptr),
                      MetricCell(diff.after ? &*diff.after : nullptr),
                      "<td class=\"num\">", EscapeHtml(DeltaText(diff)),
                      "</td><td>", EscapeHtml(StatusWord(diff.status)),
                      "</td>");
}

void DiffTotalsTable(Page& page, const ReportDiff& diff) {
  page.Add(
      "<section id=\"totals\"><h2>Totals</h2><table class=\"totals\"><thead>"
      "<tr><th>Metric</th><th>Before</th><th>After</th><th>Delta</th>"
      "<th>Status</th></tr></thead><tbody>");
  for (const auto& [name, metric] : diff.totals) {
    page.Add(absl::StrCat("<tr data-metric=\"", EscapeHtml(name), "\"",
                          IsZeroDelta(metric) ? "" : " class=\"changed\"",
                          "><th>", EscapeHtml(TotalLabel(name)), "</th>",
                          MetricDiffCells(metric), "</tr>"));
  }
  page.Add("</tbody></table></section>\n");
}

std::string SnapshotMetrics(const MetricMap& metrics) {
  std::vector<std::string> parts;
  for (const auto& [name, result] : metrics) {
    parts.push_back(absl::StrCat(name, " ", MetricText(result)));
  }
  return absl::StrJoin(parts, "; ");
}

void DiffLayersSection(Page& page, const ReportDiff& diff) {
  page.Add(absl::StrCat("<section id=\"layer-changes\"><h2>Layer calls: ",
                        diff.changed.size(), " changed, ", diff.added.size(),
                        " added, ", diff.removed.size(), " removed</h2>"));
  if (!diff.changed.empty()) {
    page.Add(
        "<h3>Changed</h3><table class=\"changed-layers\"><thead><tr>"
        "<th>Layer call</th><th>Metric</th><th>Before</th><th>After</th>"
        "<th>Delta</th><th>Status</th></tr></thead><tbody>");
    for (const LayerDiff& layer : diff.changed) {
      bool first = true;
      for (const auto& [name, metric] : layer.metrics) {
        std::string row = absl::StrCat("<tr class=\"changed\" data-path=\"",
                                       EscapeHtml(layer.path), "\">");
        if (first) {
          absl::StrAppend(
              &row, "<th rowspan=\"", layer.metrics.size(), "\">",
              EscapeHtml(LayerCallText(layer.path, layer.call_index)), "</th>");
        }
        first = false;
        page.Add(absl::StrCat(row, "<td>", EscapeHtml(name), "</td>",
                              MetricDiffCells(metric), "</tr>"));
      }
    }
    page.Add("</tbody></table>");
  }
  for (const auto& [title, kind, snapshots] :
       {std::tuple{"Added", "added", &diff.added},
        std::tuple{"Removed", "removed", &diff.removed}}) {
    if (snapshots->empty()) continue;
    page.Add(absl::StrCat("<h3>", title, "</h3><table class=\"", kind,
                          "-layers\"><thead><tr><th>Layer call</th>"
                          "<th>Metrics</th></tr></thead><tbody>"));
    for (const LayerSnapshot& snapshot : *snapshots) {
      page.Add(absl::StrCat(
          "<tr class=\"", kind, "\" data-path=\"", EscapeHtml(snapshot.path),
          "\"><th>",
          EscapeHtml(LayerCallText(snapshot.path, snapshot.call_index)),
          "</th><td>", EscapeHtml(SnapshotMetrics(snapshot.metrics)),
          "</td></tr>"));
    }
    page.Add("</tbody></table>");
  }
  page.Add("</section>\n");
}

}  // namespace

absl::Status CheckDiffOf(const ReportDiff& diff, const AnalysisReport& before,
                         const AnalysisReport& after) {
  TS_ASSIGN_OR_RETURN(ReportDiff recomputed, CompareReports(before, after));
  if (!(recomputed == diff)) {
    return absl::InvalidArgumentError(
        "the before and after reports are not the ones this diff was "
        "computed from (compare_reports(before, after) differs)");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> RenderHtml(const AnalysisReport& report,
                                       const HtmlOptions& options) {
  Page page(AnalysisTitle(report, options));
  std::vector<std::string> subtitle;
  if (!report.context.model_type.empty() &&
      report.context.model_type != AnalysisTitle(report, options)) {
    subtitle.push_back(report.context.model_type);
  }
  for (std::string part :
       {absl::StrCat("torch ", report.context.torch_version),
        absl::StrCat("torchscan ", report.context.torchscan_version),
        absl::StrCat("input ", InputText(report.inputs))}) {
    subtitle.push_back(std::move(part));
  }
  if (report.context.analysis_mode) {
    subtitle.push_back(absl::StrCat("mode ", *report.context.analysis_mode));
  }
  page.Header(absl::StrJoin(subtitle, " \u00b7 "));
  TotalsTable(page, report.totals);

  TS_ASSIGN_OR_RETURN(std::vector<ChartSpec> flops,
                      FlopCharts(report, "", "", {}));
  if (flops.empty()) {
    page.Add(
        "<section id=\"flops\"><h2>FLOPs by module</h2><p>Not computed: "
        "the analysis ran in structure mode.</p></section>\n");
  } else {
    page.ChartGroup("flops", "FLOPs by module", kPartialLegend, flops,
                    Page::Scale::kShared);
  }
  std::optional<TypeCosts> costs;
  if (HasOperatorFlops(report) && report.layer_operator_flops) {
    TS_ASSIGN_OR_RETURN(costs, CostsByModuleType(report));
    const Count* known =
        report.operator_flops.total.known_value()
            ? std::get_if<Count>(&*report.operator_flops.total.known_value())
            : nullptr;
    TypesSection(page, *costs, known ? *known : 0);
  }
  TS_ASSIGN_OR_RETURN(ModuleTree parameters, ParameterTree(report));
  TS_ASSIGN_OR_RETURN(ModuleTree bytes, TensorBytesTree(report));
  page.ChartGroup(
      "memory", "Parameters and memory by module",
      "Parameters and parameter + buffer bytes of each module and its "
      "submodules; a tensor shared by several modules counts once, where it "
      "is first seen.",
      {{"parameters", "Parameters", std::move(parameters), {}},
       {"bytes", "Parameter and buffer bytes", std::move(bytes), {}}},
      Page::Scale::kOwn);
  TS_RETURN_IF_ERROR(LayersTable(page, report));
  if (HasOperatorFlops(report)) {
    TS_RETURN_IF_ERROR(OperatorsSection(
        page, report.operator_flops, costs ? &costs->operator_types : nullptr));
  }
  DiagnosticsSection(page, report.diagnostics);
  return page.Finish();
}

absl::StatusOr<std::string> RenderHtml(const FlopReport& report,
                                       const HtmlOptions& options) {
  Page page(options.title.empty() ? "Operator FLOPs" : options.title);
  page.Header(
      absl::StrCat("torch ", report.torch_version, " \u00b7 ", report.method));
  MetricMap totals;
  totals.Set("operator_flops", report.total);
  if (report.bytes) {
    totals.Set("bytes", report.bytes->total);
    if (report.bytes->upper_bound) {
      totals.Set("bytes_upper_bound", *report.bytes->upper_bound);
    }
  }
  TotalsTable(page, totals);
  TS_ASSIGN_OR_RETURN(ModuleTree tree, OperatorFlopsTree(report));
  if (tree.roots.empty()) {
    page.Add(
        "<section id=\"flops\"><h2>FLOPs by module</h2><p>No module "
        "attribution (by_module is empty: no module ran, or "
        "track_modules=False).</p></section>\n");
  } else {
    page.ChartGroup("flops", "Operator FLOPs by module", kPartialLegend,
                    {{"operator_flops", "Operator FLOPs", std::move(tree), {}}},
                    Page::Scale::kShared);
  }
  if (report.bytes) {
    TS_ASSIGN_OR_RETURN(ModuleTree bytes, BytesMovedTree(report));
    if (!bytes.roots.empty()) {
      page.ChartGroup("bytes", "Bytes moved by module", kBytesLegend,
                      {{"bytes_moved", "Bytes moved", std::move(bytes), {}}},
                      Page::Scale::kOwn);
    }
  }
  if (options.roofline) {
    page.Add(RooflineSection(PlotRoofline(report, *options.roofline),
                             *options.roofline));
  }
  TS_RETURN_IF_ERROR(OperatorsSection(page, report));
  std::vector<Diagnostic> diagnostics = report.diagnostics;
  if (report.bytes) {
    diagnostics.insert(diagnostics.end(), report.bytes->diagnostics.begin(),
                       report.bytes->diagnostics.end());
  }
  DiagnosticsSection(page, diagnostics);
  return page.Finish();
}

absl::StatusOr<std::string> RenderHtml(const ReportDiff& diff,
                                       const AnalysisReport* before,
                                       const AnalysisReport* after,
                                       const HtmlOptions& options) {
  if ((before == nullptr) != (after == nullptr)) {
    return absl::InvalidArgumentError(
        "pass both reports a diff was computed from, or neither");
  }
  Page page(options.title.empty() ? "Report comparison" : options.title);
  if (before != nullptr) {
    TS_RETURN_IF_ERROR(CheckDiffOf(diff, *before, *after));
    page.Header(absl::StrCat(AnalysisTitle(*before, {}), " \u2192 ",
                             AnalysisTitle(*after, {})));
  } else {
    page.Header("after \u2212 before");
  }
  DiffTotalsTable(page, diff);
  if (before != nullptr) {
    Marks before_marks, after_marks;
    for (const LayerDiff& layer : diff.changed) {
      before_marks[layer.path] = after_marks[layer.path] = "changed";
    }
    for (const LayerSnapshot& layer : diff.removed) {
      before_marks[layer.path] = "removed";
    }
    for (const LayerSnapshot& layer : diff.added) {
      after_marks[layer.path] = "added";
    }
    TS_ASSIGN_OR_RETURN(
        std::vector<ChartSpec> old_charts,
        FlopCharts(*before, "before_", "Before: ", before_marks));
    TS_ASSIGN_OR_RETURN(std::vector<ChartSpec> new_charts,
                        FlopCharts(*after, "after_", "After: ", after_marks));
    const std::string legend = absl::StrCat(
        kPartialLegend,
        " Outlined: <span class=\"swatch mark-changed\"></span> changed, "
        "<span class=\"swatch mark-added\"></span> added, "
        "<span class=\"swatch mark-removed\"></span> removed layer calls.");
    for (const auto& [kind, title] :
         {std::pair{"module_flops", "Module-formula FLOPs"},
          std::pair{"operator_flops", "Operator FLOPs"}}) {
      std::vector<ChartSpec> pair;
      for (std::vector<ChartSpec>* side : {&old_charts, &new_charts}) {
        for (ChartSpec& spec : *side) {
          if (absl::EndsWith(spec.id, kind)) pair.push_back(std::move(spec));
        }
      }
      if (pair.size() == 2) {
        page.ChartGroup(absl::StrCat("compare_", kind), title, legend, pair,
                        Page::Scale::kShared);
      }
    }
  }
  DiffLayersSection(page, diff);
  return page.Finish();
}

}  // namespace torchscan::report::render
