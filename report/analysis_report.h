// AnalysisReport: what crawl_module / summary return (reference 2.3).
//
// The JSON keys come out in the order TorchScan 0.2 inserts them, so that
// DumpPythonJson(AnalysisReportToJson(report)) is byte-identical
// to Python's json.dumps(report) for a report parsed from it. The records are
// declared in field tables (field_table.h), whose order is that order.

#ifndef TORCHSCAN_REPORT_ANALYSIS_REPORT_H_
#define TORCHSCAN_REPORT_ANALYSIS_REPORT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/diagnostic.h"
#include "report/field_table.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "report/json_reader.h"
#include "report/layer_report.h"
#include "report/metric_map.h"
#include "report/value_metadata.h"

namespace torchscan::report {

inline constexpr absl::string_view kExecutionMode = "evaluation_no_grad";
inline constexpr absl::string_view kStructureMode = "structure";

struct ReportContext {
  std::string torchscan_version;
  std::string torch_version;
  std::string python_version;
  // "<defining module>.<qualified class name>".
  std::string model_type;
  std::string execution_mode = std::string(kExecutionMode);
  bool training_before = false;
  // Sorted, de-duplicated, over parameters and buffers.
  std::vector<std::string> devices;
  std::vector<std::string> dtypes;
  // "structure" in structure mode; absent in a full analysis.
  std::optional<std::string> analysis_mode;
  // Any further keys, kept in order after the known ones.
  Json extra = Json::object();

  bool operator==(const ReportContext&) const = default;
  static constexpr Json ReportContext::*kUnknownKeys = &ReportContext::extra;
  static constexpr auto kFields = std::make_tuple(
      Field("torchscan_version", &ReportContext::torchscan_version),
      Field("torch_version", &ReportContext::torch_version),
      Field("python_version", &ReportContext::python_version),
      Field("model_type", &ReportContext::model_type),
      Field("execution_mode", &ReportContext::execution_mode),
      Field("training_before", &ReportContext::training_before),
      Field("devices", &ReportContext::devices),
      Field("dtypes", &ReportContext::dtypes),
      Field("analysis_mode", &ReportContext::analysis_mode, kOptional));
};

inline constexpr absl::string_view kGeneratedInputs = "generated";
inline constexpr absl::string_view kProvidedInputs = "provided";

// {"source", "args", "kwargs"}: the call's own keys beside the source.
struct InputsMetadata {
  // "generated" (from input_shape) or "provided" (args / kwargs).
  std::string source = std::string(kGeneratedInputs);
  CallMetadata call;

  bool operator==(const InputsMetadata&) const = default;

  // "must be 'generated' or 'provided', got 'magic'".
  struct SourceCodec {
    static Json Write(const std::string& source) { return source; }
    static absl::StatusOr<std::string> Read(const JsonValue& node);
  };
  static constexpr auto kFields =
      std::make_tuple(FieldAs<SourceCodec>("source", &InputsMetadata::source),
                      FieldsOf(&InputsMetadata::call));
};

// The totals every report carries, in the order TorchScan emits them.
inline constexpr absl::string_view kTotalNames[] = {
    "parameters",
    "trainable_parameters",
    "frozen_parameters",
    "parameter_bytes",
    "buffer_elements",
    "buffer_bytes",
    "module_flops",
    "operator_flops",
    "macs",
    "dmas",
};

// One layer call's own operator FLOPs (inclusive of the calls nested in it),
// joinable to `layers` by path + call_index. TorchScan Dispatch only: the
// counter sees each layer call begin and end, which upstream's cannot.
struct LayerOperatorFlops {
  std::string path;
  std::int64_t call_index = 0;
  MetricResult total = MetricResult::Unavailable({});
  std::map<std::string, Count> by_operator;

  bool operator==(const LayerOperatorFlops&) const = default;
  static constexpr auto kFields = std::make_tuple(
      Field("path", &LayerOperatorFlops::path),
      FieldAs<IndexCodec>("call_index", &LayerOperatorFlops::call_index),
      Field("total", &LayerOperatorFlops::total),
      FieldAs<MapOf<NonNegativeCountCodec>>("by_operator",
                                            &LayerOperatorFlops::by_operator));
};

Json LayerOperatorFlopsToJson(const LayerOperatorFlops& entry);
absl::StatusOr<LayerOperatorFlops> LayerOperatorFlopsFromJson(
    const Json& node, absl::string_view field);
// The same without the key: {"total": ..., "by_operator": {...}}, as a crawl
// record carries a layer call's operator FLOPs under the call's layer index.
// LayerCallFlopsFromJson leaves path and call_index empty.
Json LayerCallFlopsToJson(const LayerOperatorFlops& entry);
absl::StatusOr<LayerOperatorFlops> LayerCallFlopsFromJson(
    const Json& node, absl::string_view field);

struct AnalysisReport {
  std::int64_t schema_version = kSchemaVersion;
  ReportContext context;
  InputsMetadata inputs;
  // One per module call, in order of call start.
  std::vector<LayerReport> layers;
  FlopReport operator_flops;
  // Present in full-mode reports of TorchScan Dispatch; absent in TorchScan
  // 0.2's reports and in structure mode.
  std::optional<std::vector<LayerOperatorFlops>> layer_operator_flops;
  MetricMap totals;
  // Module diagnostics, then the operator diagnostics of operator_flops.
  std::vector<Diagnostic> diagnostics;

  bool operator==(const AnalysisReport&) const = default;
  // Every total of kTotalNames is present.
  absl::Status Validate(absl::string_view path) const;

  // schema_version 1 only: "unsupported schema version: 2".
  struct SchemaVersionCodec {
    static Json Write(std::int64_t version) { return version; }
    static absl::StatusOr<std::int64_t> Read(const JsonValue& node);
  };
  static constexpr auto kFields = std::make_tuple(
      FieldAs<SchemaVersionCodec>("schema_version",
                                  &AnalysisReport::schema_version),
      Field("context", &AnalysisReport::context),
      Field("inputs", &AnalysisReport::inputs),
      Field("layers", &AnalysisReport::layers),
      FieldAs<JsonFunctions<FlopReportToJson, FlopReportFromJson>>(
          "operator_flops", &AnalysisReport::operator_flops),
      Field("layer_operator_flops", &AnalysisReport::layer_operator_flops,
            kOptional),
      Field("totals", &AnalysisReport::totals),
      Field("diagnostics", &AnalysisReport::diagnostics));
};

Json ReportContextToJson(const ReportContext& context);
absl::StatusOr<ReportContext> ReportContextFromJson(const Json& node,
                                                    absl::string_view field);
Json InputsMetadataToJson(const InputsMetadata& inputs);
absl::StatusOr<InputsMetadata> InputsMetadataFromJson(const Json& node,
                                                      absl::string_view field);

Json AnalysisReportToJson(const AnalysisReport& report);
// Requires schema_version 1, every field of reference 2.3 and the ten totals
// of kTotalNames (further totals are kept). Errors name the field path under
// `field`, e.g. "report.layers[3].metrics.macs.status: ...".
absl::StatusOr<AnalysisReport> AnalysisReportFromJson(
    const Json& node, absl::string_view field = "report");
// ParseJson + AnalysisReportFromJson.
absl::StatusOr<AnalysisReport> ParseAnalysisReport(
    absl::string_view text, absl::string_view field = "report");

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_ANALYSIS_REPORT_H_
