#include "crawl/crawl_document.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "report/analysis_report.h"
#include "report/count.h"
#include "report/diagnostic.h"
#include "report/field_table.h"
#include "report/field_table_testing.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "report/test_support.h"

namespace torchscan::crawl {
namespace {

using report::Json;

// A full-mode document of a Linear(4, 6) as layer 1 of 3, as the
// ExportedProgram crawler sends it.
Json FullDocument() {
  return Json::parse(R"({
    "mode": "full", "layer_count": 3, "torch_version": "2.13.0+cpu",
    "model": {"trainable_parameters": 30, "frozen_parameters": 0,
              "parameter_bytes": 120, "buffer_elements": 0,
              "buffer_bytes": 0},
    "leaf_calls": [{"layer": 1, "path": "0",
      "module": {"type": "Linear", "family": "linear", "in_features": 4,
                 "out_features": 6, "bias": true, "parameter_count": 30},
      "call": {"inputs": [{"kind": "tensor", "shape": [1, 4],
                           "dtype": "torch.float32", "device": "cpu",
                           "requires_grad": false}],
               "output": {"kind": "tensor", "shape": [1, 6],
                          "dtype": "torch.float32", "device": "cpu",
                          "requires_grad": false}}}],
    "operator_flops": {"schema_version": 1,
      "context": {"torch_version": "2.13.0+cpu",
                  "method": "torch.utils.flop_counter.FlopCounterMode"},
      "total": {"status": "complete", "value": 48, "known_value": 48,
                "unit": "FLOPs", "scope": "workload",
                "method": "torch.utils.flop_counter.FlopCounterMode"},
      "by_module": {}, "by_operator": {"aten.addmm": 48},
      "ignored_operators": {}, "diagnostics": []},
    "layer_call_flops": {"1": {"total": {"status": "complete", "value": 48,
        "known_value": 48, "unit": "FLOPs", "scope": "module_call",
        "method": "torch.utils.flop_counter.FlopCounterMode"},
      "by_operator": {"aten.addmm": 48}}}})");
}

std::string ErrorOf(const Json& document) {
  absl::StatusOr<CrawlRecord> record = CrawlRecordFromJson(document);
  return record.ok() ? "ok" : std::string(record.status().message());
}

TEST(CrawlDocumentTest, ReadsEveryPartOfAFullRecord) {
  absl::StatusOr<CrawlRecord> record = CrawlRecordFromJson(FullDocument());
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(3u, record->parts.layers.size());
  EXPECT_EQ("2.13.0+cpu", record->parts.context.torch_version);
  EXPECT_EQ(report::Count(120), record->parts.model.parameter_bytes);
  ASSERT_EQ(1u, record->leaf_calls.size());
  EXPECT_EQ(1u, record->leaf_calls[0].layer);
  EXPECT_EQ("0", record->leaf_calls[0].call.path);
  ASSERT_TRUE(record->operator_flops.has_value());
  EXPECT_EQ(report::Count(48),
            record->operator_flops->by_operator.at("aten.addmm"));
  ASSERT_EQ(1u, record->layer_call_flops.size());
  EXPECT_EQ(report::Count(48),
            record->layer_call_flops.at(1).by_operator.at("aten.addmm"));
}

TEST(CrawlDocumentTest, AnUnknownModeIsNamed) {
  Json document = FullDocument();
  document["mode"] = "fast";
  EXPECT_EQ("crawl.mode: must be 'full' or 'structure'", ErrorOf(document));
}

TEST(CrawlDocumentTest, AMissingLayerCountIsNamed) {
  EXPECT_EQ("crawl.layer_count: is missing",
            ErrorOf(Json::parse(R"({"mode": "structure"})")));
}

TEST(CrawlDocumentTest, ANegativeLayerCountIsRefused) {
  Json document = FullDocument();
  document["layer_count"] = -1;
  EXPECT_EQ("crawl.layer_count: is not a layer count", ErrorOf(document));
}

TEST(CrawlDocumentTest, ALeafCallPastTheLayersIsNamed) {
  Json document = FullDocument();
  document["layer_count"] = 1;
  document.erase("layer_call_flops");
  EXPECT_EQ("crawl.leaf_calls[0].layer: is not a layer index",
            ErrorOf(document));
}

TEST(CrawlDocumentTest, LayerCallFlopsPastTheLayersAreNamed) {
  Json document = FullDocument();
  document["layer_call_flops"]["7"] = document["layer_call_flops"]["1"];
  EXPECT_EQ("crawl.layer_call_flops.7: is not a layer index",
            ErrorOf(document));
  document["layer_call_flops"].erase("7");
  document["layer_call_flops"]["x"] = document["layer_call_flops"]["1"];
  EXPECT_EQ("crawl.layer_call_flops.x: is not a layer index",
            ErrorOf(document));
}

TEST(CrawlDocumentTest, AFullRecordNeedsItsOperatorFlops) {
  Json document = FullDocument();
  document.erase("operator_flops");
  EXPECT_EQ("crawl.operator_flops: is missing", ErrorOf(document));
}

TEST(CrawlDocumentTest, AStructureRecordHasNoLeafCalls) {
  Json document = FullDocument();
  document["mode"] = "structure";
  EXPECT_EQ("crawl.leaf_calls: unknown field", ErrorOf(document));
  for (const char* key : {"leaf_calls", "operator_flops", "layer_call_flops"}) {
    document.erase(key);
  }
  absl::StatusOr<CrawlRecord> record = CrawlRecordFromJson(document);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_FALSE(record->operator_flops.has_value());
  EXPECT_TRUE(record->leaf_calls.empty());
}

TEST(CrawlDocumentTest, AnUnknownKeyIsNamed) {
  Json document = FullDocument();
  document["leaf_call"] = Json::array();
  EXPECT_EQ("crawl.leaf_call: unknown field", ErrorOf(document));
}

absl::StatusOr<CrawlDocument> DocumentOf(const Json& json) {
  return report::FromJson<CrawlDocument>(report::JsonValue(json, "crawl"));
}

TEST(CrawlDocumentTest, AMeasuredRecordTakesTheMeasurementsFlops) {
  Json json = FullDocument();
  json.erase("operator_flops");
  json.erase("layer_call_flops");
  absl::StatusOr<CrawlDocument> document = DocumentOf(json);
  ASSERT_TRUE(document.ok()) << document.status();
  report::FlopReport measured = report::testing::FlopReportWithEveryMember();
  report::LayerOperatorFlops call;
  call.by_operator = {{"aten.mm", 5}};
  absl::StatusOr<CrawlRecord> record =
      MeasuredCrawlRecordOf(*document, measured, {{2, call}});
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(measured, record->operator_flops);
  EXPECT_EQ(call, record->layer_call_flops.at(2));
  EXPECT_EQ("crawl.layer_call_flops.3: is not a layer index",
            MeasuredCrawlRecordOf(*document, measured, {{3, call}})
                .status()
                .message());
}

TEST(CrawlDocumentTest, AMeasuredRecordCarriesNoFlopsOfItsOwn) {
  absl::StatusOr<CrawlDocument> document = DocumentOf(FullDocument());
  ASSERT_TRUE(document.ok()) << document.status();
  EXPECT_EQ(
      "crawl.operator_flops: comes from the measurement, not from the crawl "
      "record",
      MeasuredCrawlRecordOf(*document, report::FlopReport(), {})
          .status()
          .message());
  document->operator_flops.reset();
  EXPECT_EQ(
      "crawl.layer_call_flops: comes from the measurement, not from the "
      "crawl record",
      MeasuredCrawlRecordOf(*document, report::FlopReport(), {})
          .status()
          .message());
  document->layer_call_flops.clear();
  EXPECT_TRUE(MeasuredCrawlRecordOf(*document, report::FlopReport(), {}).ok());
}

TEST(CrawlDocumentTest, AMeasuredRecordIsFull) {
  Json json = FullDocument();
  json["mode"] = "structure";
  for (const char* key : {"leaf_calls", "operator_flops", "layer_call_flops"}) {
    json.erase(key);
  }
  absl::StatusOr<CrawlDocument> document = DocumentOf(json);
  ASSERT_TRUE(document.ok()) << document.status();
  EXPECT_EQ("crawl.mode: a measured crawl must be 'full'",
            MeasuredCrawlRecordOf(*document, report::FlopReport(), {})
                .status()
                .message());
}

}  // namespace
}  // namespace torchscan::crawl

namespace torchscan::report {

// A full document with every key, the same without its FLOPs (a measured
// crawl's), and a structure document with neither version nor diagnostics.
template <>
struct FieldTableSamples<crawl::CrawlDocument> {
  static std::vector<crawl::CrawlDocument> Get() {
    crawl::CrawlDocument full = *FromJson<crawl::CrawlDocument>(
        JsonValue(crawl::FullDocument(), "crawl"));
    full.diagnostics.push_back(
        Diagnostic::ForPath("unrecovered_module_attribute", "module_flops", "0",
                            "Linear.bias could not be recovered"));
    crawl::CrawlDocument measured = full;
    measured.operator_flops.reset();
    measured.layer_call_flops.clear();
    crawl::CrawlDocument structure;
    structure.layer_count = 2;
    structure.model.buffer_bytes = Count(1) << 70;
    return {std::move(full), std::move(measured), std::move(structure)};
  }
};
template <>
struct FieldTableSamples<crawl::LeafCallDocument> {
  static std::vector<crawl::LeafCallDocument> Get() {
    return {FieldTableSamples<crawl::CrawlDocument>::Get()[0].leaf_calls};
  }
};
using CrawlDocumentRecords =
    ::testing::Types<crawl::CrawlDocument, crawl::LeafCallDocument>;
INSTANTIATE_TYPED_TEST_SUITE_P(CrawlDocument, FieldTableRoundTrip,
                               CrawlDocumentRecords);

}  // namespace torchscan::report
