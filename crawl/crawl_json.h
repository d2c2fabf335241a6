// A Python front end's crawl, as JSON data: the ExportedProgram crawler
// (python/torchscan_dispatch/exported.py), whose layers come from the graph
// rather than from module hooks. (crawl_module on an nn.Module records its
// CrawlRecord natively: python/operators/crawl_recorder.cc.)
//
// That crawler keeps its layer records (sending every layer's metadata to
// C++ and parsing it back would cost more than the work) and sends the rest
// of its CrawlRecord: the mode, the number of layers, the
// model totals and the leaf calls (module descriptions and calls,
// formulas/module_json.h). A crawl that measured its operators in this process
// hands their FlopReport and each layer call's operator FLOPs to
// EvaluateMeasuredCrawlParts directly; otherwise (the fuzzer, records from
// elsewhere) they come in the JSON too:
//
//   {"mode": "full"|"structure", "layer_count": n, "torch_version": str,
//    "model": {"trainable_parameters": n, "frozen_parameters": n,
//              "parameter_bytes": n, "buffer_elements": n, "buffer_bytes": n},
//    "leaf_calls": [{"layer": i, "path": ..., "module": {...},
//                    "call": {...}}],                       (full mode)
//    "operator_flops": {...FlopReport...},                  (full mode)
//    "layer_call_flops": {"<i>": {"total": {...},
//                                 "by_operator": {...}}},   (optional)
//    "diagnostics": [...]}   (optional: the front end's own diagnostics,
//                             listed before the module formulas' ones)
//
// and gets back the parts of the report that need computing, CrawlParts
// below.

#ifndef TORCHSCAN_CRAWL_CRAWL_JSON_H_
#define TORCHSCAN_CRAWL_CRAWL_JSON_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "crawl/crawl_record.h"
#include "report/analysis_report.h"
#include "report/diagnostic.h"
#include "report/field_table.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "report/metric_map.h"

namespace torchscan::crawl {

// The record Python sends, with `layer_count` empty layer records (only
// their metrics are computed). Errors name the field under "crawl".
absl::StatusOr<CrawlRecord> CrawlRecordFromJson(const report::Json& node);

// The parts of a report built from such a record that the crawler does not
// have: what it sends back to Python.
struct CrawlParts {
  // By layer index, the layers that have metrics.
  std::map<std::int64_t, report::MetricMap> layer_metrics;
  report::FlopReport operator_flops;
  // Full mode: one per layer, {"total", "by_operator"} (the layer gives the
  // path and call index).
  std::optional<std::vector<report::LayerOperatorFlops>> layer_operator_flops;
  report::MetricMap totals;
  std::vector<report::Diagnostic> diagnostics;
  std::optional<std::string> analysis_mode;
  // The strict mode's message when the report is incomplete.
  std::optional<std::string> incomplete;

  bool operator==(const CrawlParts&) const = default;
  using FlopReportCodec = report::JsonFunctions<report::FlopReportToJson,
                                                report::FlopReportFromJson>;
  using LayerCallFlopsCodec =
      report::JsonFunctions<report::LayerCallFlopsToJson,
                            report::LayerCallFlopsFromJson>;
  static constexpr auto kFields = std::make_tuple(
      report::Field("layer_metrics", &CrawlParts::layer_metrics),
      report::FieldAs<FlopReportCodec>("operator_flops",
                                       &CrawlParts::operator_flops),
      report::FieldAs<report::ArrayOf<LayerCallFlopsCodec>>(
          "layer_operator_flops", &CrawlParts::layer_operator_flops,
          report::kOptional),
      report::Field("totals", &CrawlParts::totals),
      report::Field("diagnostics", &CrawlParts::diagnostics),
      report::Field("analysis_mode", &CrawlParts::analysis_mode),
      report::Field("incomplete", &CrawlParts::incomplete));
};

// The computed parts of `report`, a report built from such a record (taken
// by value: its parts are moved, not copied, on the crawl's path).
CrawlParts CrawlPartsOf(report::AnalysisReport report);

// CrawlRecordFromJson, BuildAnalysisReport and CrawlPartsOf, as JSON.
absl::StatusOr<report::Json> EvaluateCrawlParts(const report::Json& node);

// The record (MeasuredCrawlRecordFromJson), or its computed parts as JSON
// (EvaluateMeasuredCrawlParts), of a full-mode record whose operator FLOPs come
// straight from the measurement that counted them (no JSON in between): `node`
// carries neither "operator_flops" nor "layer_call_flops" (they are not read),
// and `layer_call_flops` is keyed by layer index; an index past the record's
// layers is InvalidArgument.
absl::StatusOr<CrawlRecord> MeasuredCrawlRecordFromJson(
    const report::Json& node, report::FlopReport operator_flops,
    std::map<std::size_t, report::LayerOperatorFlops> layer_call_flops);
absl::StatusOr<report::Json> EvaluateMeasuredCrawlParts(
    const report::Json& node, report::FlopReport operator_flops,
    std::map<std::size_t, report::LayerOperatorFlops> layer_call_flops);

}  // namespace torchscan::crawl

#endif  // TORCHSCAN_CRAWL_CRAWL_JSON_H_
