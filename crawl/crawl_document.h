// A Python front end's crawl, as data: the ExportedProgram crawler
// (python/torchscan_dispatch/exported.py), whose layers come from the graph
// rather than from module hooks. (crawl_module on an nn.Module records its
// CrawlRecord natively: python/operators/crawl_recorder.cc.)
//
// That crawler keeps its layer records and sends the rest of its
// CrawlRecord: the mode, the number of layers, the model totals, its own
// diagnostics and the leaf calls (module descriptions and calls,
// formulas/module_json.h). CrawlDocument below declares that record once;
// its field table reads it from Python objects (the extension module's
// crawl_report, python/operators/crawl_functions.h) and from JSON (the
// fuzzer, records from elsewhere) with the same rules and errors:
//
//   {"mode": "full"|"structure", "layer_count": n, "torch_version": str,
//    "model": {"trainable_parameters": n, "frozen_parameters": n,
//              "parameter_bytes": n, "buffer_elements": n, "buffer_bytes": n},
//    "diagnostics": [...],    (optional: the front end's own diagnostics,
//                              listed before the module formulas' ones)
//    "leaf_calls": [{"layer": i, "path": ..., "module": {...},
//                    "call": {...}}],                       (full mode)
//    "operator_flops": {...FlopReport...},                  (full mode)
//    "layer_call_flops": {"<i>": {"total": {...},
//                                 "by_operator": {...}}}}   (full, optional)
//
// A crawl that measured its operators in this process leaves out
// "operator_flops" and "layer_call_flops": MeasuredCrawlRecordOf takes them
// from the measurement that counted them.

#ifndef TORCHSCAN_CRAWL_CRAWL_DOCUMENT_H_
#define TORCHSCAN_CRAWL_CRAWL_DOCUMENT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "crawl/crawl_record.h"
#include "formulas/module_call.h"
#include "formulas/module_json.h"
#include "report/aggregate.h"
#include "report/analysis_report.h"
#include "report/diagnostic.h"
#include "report/field_table.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "report/json_reader.h"

namespace torchscan::crawl {

enum class CrawlMode { kFull, kStructure };

// "full" or "structure"; anything else is "<path>: must be 'full' or
// 'structure'".
struct CrawlModeCodec {
  static report::Json Write(CrawlMode mode);
  static absl::StatusOr<CrawlMode> Read(const report::JsonValue& node);
};

// Each layer call's operator FLOPs by layer index: {"<i>": {"total": ...,
// "by_operator": ...}} (report::LayerCallFlopsToJson); a key that is not a
// decimal index is "<path>.<key>: is not a layer index".
struct LayerCallFlopsByLayerCodec {
  using Map = std::map<std::int64_t, report::LayerOperatorFlops>;
  static report::Json Write(const Map& calls);
  static absl::StatusOr<Map> Read(const report::JsonValue& node);
};

// One metric-leaf call: the index of its layer record and the call.
struct LeafCallDocument {
  std::int64_t layer = 0;
  formulas::CapturedModuleCall call;

  bool operator==(const LeafCallDocument&) const = default;
  static constexpr auto kFields = std::make_tuple(
      report::FieldAs<report::IndexCodec>("layer", &LeafCallDocument::layer),
      report::FieldsOf(&LeafCallDocument::call));
};

struct CrawlDocument {
  CrawlMode mode = CrawlMode::kStructure;
  // The number of layer records the front end keeps (at most 2^31).
  std::int64_t layer_count = 0;
  // Structure mode's not-requested operator report names it.
  std::optional<std::string> torch_version;
  report::ModelTensorTotals model;
  std::vector<report::Diagnostic> diagnostics;
  // Full mode only: the leaf calls in completion order, and the operator
  // FLOPs of a crawl not measured in this process.
  std::vector<LeafCallDocument> leaf_calls;
  std::optional<report::FlopReport> operator_flops;
  LayerCallFlopsByLayerCodec::Map layer_call_flops;

  static bool IsFull(const CrawlDocument& document) {
    return document.mode == CrawlMode::kFull;
  }

  // Layer indices within layer_count, which is at most 2^31.
  absl::Status Validate(absl::string_view path) const;

  bool operator==(const CrawlDocument&) const = default;
  using FlopReportCodec = report::JsonFunctions<report::FlopReportToJson,
                                                report::FlopReportFromJson>;
  static constexpr auto kFields = std::make_tuple(
      report::FieldAs<CrawlModeCodec>("mode", &CrawlDocument::mode),
      report::Field("layer_count", &CrawlDocument::layer_count),
      report::Field("torch_version", &CrawlDocument::torch_version,
                    report::kOptional),
      report::Field("model", &CrawlDocument::model),
      report::Field("diagnostics", &CrawlDocument::diagnostics,
                    report::kOptional),
      report::Field("leaf_calls", &CrawlDocument::leaf_calls).When(&IsFull),
      report::FieldAs<FlopReportCodec>(
          "operator_flops", &CrawlDocument::operator_flops, report::kOptional)
          .When(&IsFull),
      report::FieldAs<LayerCallFlopsByLayerCodec>(
          "layer_call_flops", &CrawlDocument::layer_call_flops,
          report::kOptional)
          .When(&IsFull));
};

// The record of `document` (named "crawl" in errors), with `layer_count`
// empty layer records: the caller fills in its own, or only their metrics
// are wanted. A full-mode document must carry its operator FLOPs.
absl::StatusOr<CrawlRecord> CrawlRecordOf(CrawlDocument document);

// The record of a full-mode document whose operator FLOPs come straight
// from the measurement that counted them: the document carries neither
// "operator_flops" nor "layer_call_flops", and `layer_call_flops` is keyed
// by layer index (one past the record's layers is InvalidArgument).
absl::StatusOr<CrawlRecord> MeasuredCrawlRecordOf(
    CrawlDocument document, report::FlopReport operator_flops,
    std::map<std::size_t, report::LayerOperatorFlops> layer_call_flops);
// MeasuredCrawlRecordOf's checks of the document alone, for a caller that
// reads the measurement only for a document that can take it.
absl::Status CheckMeasuredDocument(const CrawlDocument& document);

// CrawlRecordOf the document `node` holds.
absl::StatusOr<CrawlRecord> CrawlRecordFromJson(const report::Json& node);

}  // namespace torchscan::crawl

#endif  // TORCHSCAN_CRAWL_CRAWL_DOCUMENT_H_
