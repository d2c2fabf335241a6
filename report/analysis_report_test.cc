#include "report/analysis_report.h"

#include <functional>
#include <limits>

#include "gtest/gtest.h"
#include "report/field_table_testing.h"
#include "report/json_io.h"
#include "report/test_support.h"

namespace torchscan::report {
namespace {

using testing::ParseOrFail;
using testing::ReadTestData;

// crawl_module(nn.Conv2d(3, 8, 3), (3, 32, 32)), copied from reference 11.
Json Section11() {
  return ParseOrFail(ReadTestData("reference/conv2d_section11.json"));
}

// The error of parsing the Conv2d example report after `edit`.
std::string ErrorAfter(const std::function<void(Json&)>& edit) {
  Json document = Section11();
  edit(document);
  absl::StatusOr<AnalysisReport> report = AnalysisReportFromJson(document);
  if (report.ok()) return "parsed";
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(report.status().message());
}

TEST(AnalysisReportTest, Section11ReportRoundTripsLosslessly) {
  const Json document = Section11();
  absl::StatusOr<AnalysisReport> report = AnalysisReportFromJson(document);
  ASSERT_TRUE(report.ok()) << report.status();
  // Values asserted by upstream's tests (reference 11).
  ASSERT_EQ(report->layers.size(), 1u);
  const LayerReport& layer = report->layers[0];
  EXPECT_EQ(layer.name, "conv2d");
  EXPECT_EQ(layer.parameters.trainable, 224);
  EXPECT_EQ(layer.output.shape, (std::vector<std::int64_t>{1, 8, 30, 30}));
  EXPECT_EQ(*layer.metrics.Find("module_flops")->value(),
            MetricValue(Count(388800)));
  EXPECT_EQ(*layer.metrics.Find("macs")->value(), MetricValue(Count(194400)));
  EXPECT_EQ(*layer.metrics.Find("dmas")->value(), MetricValue(Count(201824)));
  EXPECT_EQ(*report->totals.Find("parameters")->value(),
            MetricValue(Count(224)));
  EXPECT_EQ(*report->operator_flops.total.value(), MetricValue(Count(388800)));
  // Same keys, same order, same values.
  EXPECT_EQ(AnalysisReportToJson(*report), document);
  absl::StatusOr<AnalysisReport> again =
      ParseAnalysisReport(DumpJson(AnalysisReportToJson(*report), 2));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *report);
}

TEST(AnalysisReportTest, KeyOrderIsTorchScans) {
  const Json json = AnalysisReportToJson(testing::Conv2dReportFromParts());
  std::vector<std::string> top, totals, layer;
  for (const auto& [key, value] : json.items()) top.push_back(key);
  for (const auto& [key, value] : json["totals"].items()) totals.push_back(key);
  for (const auto& [key, value] : json["layers"][0].items()) {
    layer.push_back(key);
  }
  EXPECT_EQ(top, (std::vector<std::string>{"schema_version", "context",
                                           "inputs", "layers", "operator_flops",
                                           "totals", "diagnostics"}));
  EXPECT_EQ(totals,
            (std::vector<std::string>{
                "parameters", "trainable_parameters", "frozen_parameters",
                "parameter_bytes", "buffer_elements", "buffer_bytes",
                "module_flops", "operator_flops", "macs", "dmas"}));
  EXPECT_EQ(layer, (std::vector<std::string>{
                       "path", "call_index", "name", "depth", "type", "input",
                       "output", "parameters", "buffers", "metrics"}));
}

TEST(AnalysisReportTest, MalformedJsonIsAnError) {
  absl::StatusOr<AnalysisReport> report =
      ParseAnalysisReport("{\"schema_version\": ");
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().message().substr(0, 30),
            "report: invalid JSON at byte 2");
  EXPECT_FALSE(ParseAnalysisReport("").ok());
  EXPECT_FALSE(ParseAnalysisReport("[]").ok());
  EXPECT_EQ(ParseAnalysisReport("[]").status().message(),
            "report: expected an object, got array");
  EXPECT_EQ(ParseAnalysisReport("[1e400]").status().message(),
            "report: invalid JSON at byte 6: [json.exception.out_of_range.406] "
            "number overflow parsing '1e400'");
  EXPECT_EQ(ParseAnalysisReport(R"({"a": 1, "a": 2})").status().message(),
            "report: duplicate key \"a\"");
}

TEST(AnalysisReportTest, ErrorsNameTheFieldAndTheProblem) {
  EXPECT_EQ(ErrorAfter([](Json& d) { d["layers"] = Json::object(); }),
            "report.layers: expected an array, got object");
  EXPECT_EQ(ErrorAfter([](Json& d) { d["totals"].erase("macs"); }),
            "report.totals.macs: is missing");
  EXPECT_EQ(ErrorAfter([](Json& d) { d.erase("inputs"); }),
            "report.inputs: is missing");
  EXPECT_EQ(ErrorAfter([](Json& d) {
              d["layers"][0]["metrics"]["macs"]["status"] = "done";
            }),
            "report.layers[0].metrics.macs.status: status must be 'complete', "
            "'partial', or 'unavailable', got 'done'");
  EXPECT_EQ(
      ErrorAfter(
          [](Json& d) { d["layers"][0]["metrics"]["macs"]["status"] = 3; }),
      "report.layers[0].metrics.macs.status: expected a string, got number");
  EXPECT_EQ(ErrorAfter([](Json& d) { d["schema_version"] = 2; }),
            "report.schema_version: unsupported schema version: 2");
  EXPECT_EQ(ErrorAfter([](Json& d) { d["schema_version"] = "1"; }),
            "report.schema_version: expected an integer, got string \"1\"");
  EXPECT_EQ(
      ErrorAfter([](Json& d) { d["layers"][0]["output"]["kind"] = "blob"; }),
      "report.layers[0].output.kind: unknown kind 'blob' (expected tensor, "
      "none, tuple, list, mapping, scalar, object or pending)");
  EXPECT_EQ(ErrorAfter([](Json& d) { d["layers"][0]["extra"] = 1; }),
            "report.layers[0].extra: unknown field");
  EXPECT_EQ(
      ErrorAfter([](Json& d) { d["inputs"]["source"] = "magic"; }),
      "report.inputs.source: must be 'generated' or 'provided', got 'magic'");
  EXPECT_EQ(ErrorAfter([](Json& d) { d["layers"][0]["call_index"] = -1; }),
            "report.layers[0].call_index: must not be negative, got -1");
  EXPECT_EQ(ErrorAfter([](Json& d) { d["context"]["devices"][0] = 7; }),
            "report.context.devices[0]: expected a string, got integer");
  EXPECT_EQ(
      ErrorAfter([](Json& d) {
        d["diagnostics"].push_back(Json{{"code", "x"},
                                        {"severity", "warning"},
                                        {"metric", "m"},
                                        {"message", "y"}});
      }),
      "report.diagnostics[0]: needs exactly one of 'path' and 'operator'");
}

TEST(AnalysisReportTest, CountsMustBeNonNegativeIntegers) {
  EXPECT_EQ(ErrorAfter([](Json& d) {
              d["layers"][0]["metrics"]["macs"]["value"] = -5;
              d["layers"][0]["metrics"]["macs"]["known_value"] = -5;
            }),
            "report.layers[0].metrics.macs.value: a count of MACs must be a "
            "non-negative integer, got -5");
  EXPECT_EQ(ErrorAfter([](Json& d) {
              d["totals"]["parameters"]["value"] = 2.5;
              d["totals"]["parameters"]["known_value"] = 2.5;
            }),
            "report.totals.parameters.value: a count of elements must be a "
            "non-negative integer, got 2.5");
  EXPECT_EQ(
      ErrorAfter([](Json& d) {
        Json& macs = d["totals"]["macs"];
        macs["status"] = "partial";
        macs["value"] = nullptr;
        macs["known_value"] = "12";
      }),
      "report.totals.macs.known_value: a count of MACs must be a non-negative "
      "integer, got string '12'");
  EXPECT_EQ(
      ErrorAfter(
          [](Json& d) { d["layers"][0]["parameters"]["trainable"] = 1.5; }),
      "report.layers[0].parameters.trainable: expected a non-negative integer, "
      "got float 1.5");
  EXPECT_EQ(
      ErrorAfter([](Json& d) { d["layers"][0]["buffers"]["bytes"] = -1; }),
      "report.layers[0].buffers.bytes: must not be negative, got -1");
  EXPECT_EQ(ErrorAfter([](Json& d) {
              d["operator_flops"]["total"]["value"] = -1;
              d["operator_flops"]["total"]["known_value"] = -1;
            }),
            "report.operator_flops.total.value: a count of FLOPs must be a "
            "non-negative integer, got -1");
}

// Receptive fields are not counts: TorchScan 0.2 emits negative ints
// (ConvTranspose), fractions (adaptive pooling) and "same" padding.
TEST(AnalysisReportTest, ReceptiveFieldValuesMayBeAnyNumberOrPaddingText) {
  EXPECT_EQ(ErrorAfter([](Json& d) {
              Json& metrics = d["layers"][0]["metrics"];
              metrics["receptive_field"]["value"] = -3;
              metrics["receptive_field"]["known_value"] = -3;
              metrics["effective_stride"]["value"] = 0.5;
              metrics["effective_stride"]["known_value"] = 0.5;
              metrics["effective_padding"]["value"] = "same";
              metrics["effective_padding"]["known_value"] = "same";
            }),
            "parsed");
  EXPECT_EQ(
      ErrorAfter([](Json& d) {
        Json& stride = d["layers"][0]["metrics"]["effective_stride"];
        stride["value"] = "same";
        stride["known_value"] = "same";
      }),
      "report.layers[0].metrics.effective_stride.value: expected a number, "
      "got string 'same'");
}

TEST(AnalysisReportTest, HugeNumbersAreExactUpTo127BitsAndRejectedBeyond) {
  const Count max = std::numeric_limits<Count>::max();
  for (Count value : {Count(1) << 63, Count(1) << 64, max}) {
    Json document = Section11();
    document["totals"]["module_flops"]["value"] = CountToJson(value);
    document["totals"]["module_flops"]["known_value"] = CountToJson(value);
    const std::string text = DumpPythonJson(document);
    absl::StatusOr<AnalysisReport> report = ParseAnalysisReport(text);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(*report->totals.Find("module_flops")->value(),
              MetricValue(value));
    EXPECT_EQ(DumpPythonJson(AnalysisReportToJson(*report)), text);
  }
  std::string text = DumpPythonJson(Section11());
  const std::string needle = "\"value\": 388800";
  text.replace(text.find(needle), needle.size(),
               "\"value\": 170141183460469231731687303715884105728");
  absl::StatusOr<AnalysisReport> report = ParseAnalysisReport(text);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().message(),
            "report: integer 170141183460469231731687303715884105728 is out of "
            "range (at most 2^127 - 1)");
}

TEST(AnalysisReportTest, HostileNestingIsAnErrorNotACrash) {
  std::string deep(100000, '[');
  EXPECT_FALSE(ParseAnalysisReport(deep).ok());
  // Value metadata nested 300 levels (within JSON's limit) is refused too.
  Json value = Json{{"kind", "none"}};
  for (int i = 0; i < 300; ++i) {
    value = Json{{"kind", "list"}, {"items", Json::array({value})}};
  }
  const std::string error =
      ErrorAfter([&](Json& d) { d["layers"][0]["output"] = value; });
  EXPECT_NE(error.find("nesting deeper than 200 levels"), std::string::npos)
      << error;
}

TEST(AnalysisReportTest, ContextKeepsStructureModeAndUnknownKeysInOrder) {
  Json document = Section11();
  document["context"]["analysis_mode"] = "structure";
  document["context"]["host"] = "ci";
  absl::StatusOr<AnalysisReport> report = AnalysisReportFromJson(document);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->context.analysis_mode, "structure");
  EXPECT_EQ(AnalysisReportToJson(*report), document);
}

TEST(AnalysisReportTest, LayerCallFlopsAreTheEntryWithoutItsKey) {
  LayerOperatorFlops entry;
  entry.path = "features.0";
  entry.call_index = 2;
  entry.total = testing::PartialMetric(Count(5), "flops", "module_call");
  entry.by_operator = {{"aten.mm", 5}, {"aten.add", 0}};
  const Json call = LayerCallFlopsToJson(entry);
  EXPECT_EQ(
      R"({"total":{"status":"partial","value":null,"known_value":5,)"
      R"("unit":"flops","scope":"module_call","method":)"
      R"("torchscan_module_formula"},"by_operator":{"aten.add":0,"aten.mm":5}})",
      DumpJson(call));
  absl::StatusOr<LayerOperatorFlops> read = LayerCallFlopsFromJson(call, "c");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ("", read->path);
  EXPECT_EQ(entry.by_operator, read->by_operator);
  EXPECT_EQ(entry.total, read->total);
  EXPECT_EQ("c.path: unknown field",
            LayerCallFlopsFromJson(LayerOperatorFlopsToJson(entry), "c")
                .status()
                .message());
}

// A full report: the Conv2d example with every optional part set.
AnalysisReport FullReport() {
  absl::StatusOr<AnalysisReport> report = AnalysisReportFromJson(Section11());
  EXPECT_TRUE(report.ok()) << report.status();
  if (!report.ok()) return AnalysisReport{};
  report->context.analysis_mode = "structure";
  report->context.extra = Json{{"host", "ci"}};
  LayerOperatorFlops entry;
  entry.total = testing::CompleteMetric(Count(388800), "flops", "module_call",
                                        "dispatch");
  entry.by_operator = {{"aten.convolution", 388800}};
  report->layer_operator_flops = std::vector<LayerOperatorFlops>{entry};
  report->diagnostics = {
      Diagnostic::ForPath("unsupported_module", "macs", "", "no formula"),
      Diagnostic::ForOperator("no_formula", "flops", "aten.sin", "none")};
  return *report;
}

}  // namespace

template <>
struct FieldTableSamples<ParameterAttribution> {
  static std::vector<ParameterAttribution> Get() {
    return {{}, {Count(1) << 100, 2, 3, true}};
  }
};
template <>
struct FieldTableSamples<BufferAttribution> {
  static std::vector<BufferAttribution> Get() { return {{}, {4, 16, true}}; }
};
template <>
struct FieldTableSamples<LayerReport> {
  static std::vector<LayerReport> Get() { return FullReport().layers; }
};
template <>
struct FieldTableSamples<ReportContext> {
  static std::vector<ReportContext> Get() { return {FullReport().context}; }
};
template <>
struct FieldTableSamples<InputsMetadata> {
  static std::vector<InputsMetadata> Get() {
    InputsMetadata provided = FullReport().inputs;
    provided.source = std::string(kProvidedInputs);
    return {FullReport().inputs, provided};
  }
};
template <>
struct FieldTableSamples<LayerOperatorFlops> {
  static std::vector<LayerOperatorFlops> Get() {
    return *FullReport().layer_operator_flops;
  }
};
template <>
struct FieldTableSamples<AnalysisReport> {
  static std::vector<AnalysisReport> Get() {
    AnalysisReport full = FullReport();
    AnalysisReport plain = full;
    plain.layer_operator_flops.reset();
    plain.diagnostics.clear();
    return {full, plain};
  }
};

namespace {

using ReportRecords =
    ::testing::Types<ParameterAttribution, BufferAttribution, LayerReport,
                     ReportContext, InputsMetadata, LayerOperatorFlops,
                     AnalysisReport>;
INSTANTIATE_TYPED_TEST_SUITE_P(AnalysisReport, FieldTableRoundTrip,
                               ReportRecords);

}  // namespace
}  // namespace torchscan::report
