#include "report/analysis_report.h"

#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "report/json_reader.h"

namespace torchscan::report {
namespace {

// A layer call's operator FLOPs without its key (LayerCallFlopsToJson).
struct LayerCallFlops {
  MetricResult total = MetricResult::Unavailable({});
  std::map<std::string, Count> by_operator;

  static constexpr auto kFields =
      std::make_tuple(Field("total", &LayerCallFlops::total),
                      FieldAs<MapOf<NonNegativeCountCodec>>(
                          "by_operator", &LayerCallFlops::by_operator));
};

}  // namespace

absl::StatusOr<std::int64_t> AnalysisReport::SchemaVersionCodec::Read(
    const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(Count version, node.Integer());
  if (version != kSchemaVersion) {
    return node.Error(
        absl::StrCat("unsupported schema version: ", CountToString(version)));
  }
  return kSchemaVersion;
}

absl::Status AnalysisReport::Validate(absl::string_view path) const {
  for (absl::string_view name : kTotalNames) {
    if (!totals.Contains(name)) {
      return FieldError(MemberPath(MemberPath(path, "totals"), name),
                        "is missing");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> InputsMetadata::SourceCodec::Read(
    const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(std::string source, node.String());
  if (source != kGeneratedInputs && source != kProvidedInputs) {
    return node.Error(
        absl::StrCat("must be 'generated' or 'provided', got '", source, "'"));
  }
  return source;
}

Json ReportContextToJson(const ReportContext& context) {
  return ToJson(context);
}

absl::StatusOr<ReportContext> ReportContextFromJson(const Json& node,
                                                    absl::string_view field) {
  return FromJson<ReportContext>(JsonValue(node, std::string(field)));
}

Json InputsMetadataToJson(const InputsMetadata& inputs) {
  return ToJson(inputs);
}

absl::StatusOr<InputsMetadata> InputsMetadataFromJson(const Json& node,
                                                      absl::string_view field) {
  return FromJson<InputsMetadata>(JsonValue(node, std::string(field)));
}

Json LayerCallFlopsToJson(const LayerOperatorFlops& entry) {
  return ToJson(LayerCallFlops{entry.total, entry.by_operator});
}

absl::StatusOr<LayerOperatorFlops> LayerCallFlopsFromJson(
    const Json& node, absl::string_view field) {
  TS_ASSIGN_OR_RETURN(LayerCallFlops call, FromJson<LayerCallFlops>(JsonValue(
                                               node, std::string(field))));
  LayerOperatorFlops entry;
  entry.total = std::move(call.total);
  entry.by_operator = std::move(call.by_operator);
  return entry;
}

Json LayerOperatorFlopsToJson(const LayerOperatorFlops& entry) {
  return ToJson(entry);
}

absl::StatusOr<LayerOperatorFlops> LayerOperatorFlopsFromJson(
    const Json& node, absl::string_view field) {
  return FromJson<LayerOperatorFlops>(JsonValue(node, std::string(field)));
}

Json AnalysisReportToJson(const AnalysisReport& report) {
  return ToJson(report);
}

absl::StatusOr<AnalysisReport> AnalysisReportFromJson(const Json& node,
                                                      absl::string_view field) {
  return FromJson<AnalysisReport>(JsonValue(node, std::string(field)));
}

absl::StatusOr<AnalysisReport> ParseAnalysisReport(absl::string_view text,
                                                   absl::string_view field) {
  absl::StatusOr<Json> document = ParseJson(text);
  if (!document.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", document.status().message()));
  }
  return AnalysisReportFromJson(*document, field);
}

}  // namespace torchscan::report
