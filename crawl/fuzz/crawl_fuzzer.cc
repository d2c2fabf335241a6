// libFuzzer target: the records the Python front end hands the native side
// (the crawl record of the extension module's crawl_report,
// crawl/crawl_document.h, and the module descriptions and calls inside it,
// formulas/module_json.h), in their JSON form, on hostile input. Torch-free,
// so it builds with clang and libFuzzer like report/fuzz/.
//
// Besides crashes, sanitizer reports and uncaught exceptions, it fails on
// broken invariants: every crawl record read must write back to an equal
// record, every report built from one must write back to a fixed point and
// render, and every module metric set must serialize.
//
// Input: one JSON document, tried as a crawl record, as a captured module
// call ({"path", "module", "call"}), as a module description, as a call and
// as a module call's graph ({"family", "operators", "tensors"});
// the leaf calls of a crawl-shaped document are also tried one by one.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "crawl/crawl_document.h"
#include "crawl/crawl_record.h"
#include "crawl/recover_from_graph.h"
#include "formulas/module_json.h"
#include "formulas/module_metrics.h"
#include "report/analysis_report.h"
#include "report/field_table.h"
#include "report/json_io.h"
#include "report/json_reader.h"
#include "report/strict.h"
#include "report/summary.h"

namespace torchscan::crawl {
namespace {

using report::Json;

void Require(bool condition, const char* what) {
  if (condition) return;
  std::fprintf(stderr, "crawl fuzzer invariant broken: %s\n", what);
  std::abort();
}

void ExerciseReport(const report::AnalysisReport& built) {
  const Json json = report::AnalysisReportToJson(built);
  const std::string text = report::DumpPythonJson(json);
  absl::StatusOr<report::AnalysisReport> again =
      report::ParseAnalysisReport(text);
  if (!again.ok()) {
    std::fprintf(stderr, "%s\n%s\n", again.status().ToString().c_str(),
                 text.c_str());
  }
  Require(again.ok(), "a built report parses");
  Require(*again == built, "a built report reads back equal");
  Require(report::AnalysisReportToJson(*again) == json,
          "built report JSON is a fixed point");
  (void)report::IncompleteAnalysisMessage(built);
  (void)report::CheckStrict(built);
  report::SummaryOptions options;
  (void)report::RenderSummary(built, options);
  options.receptive_field = options.effective_rf_stats = true;
  options.max_depth = 1;
  (void)report::RenderSummary(built, options);
}

void ExerciseCapturedCall(const formulas::CapturedModuleCall& call) {
  absl::StatusOr<formulas::ModuleMetrics> metrics =
      formulas::EvaluateModuleMetrics(call);
  if (!metrics.ok()) return;
  const Json json = formulas::ModuleMetricsToJson(*metrics);
  Require(report::ParseJson(report::DumpPythonJson(json)).ok(),
          "module metrics JSON parses");
}

void ExerciseModuleDocument(const Json& json) {
  if (absl::StatusOr<formulas::CapturedModuleCall> captured =
          report::FromJson<formulas::CapturedModuleCall>(
              report::JsonValue(json, "captured_call"));
      captured.ok()) {
    ExerciseCapturedCall(*captured);
  }
  (void)report::FromJson<formulas::ModuleDescription>(
      report::JsonValue(json, "module"));
  (void)report::FromJson<formulas::ModuleCall>(report::JsonValue(json, "call"));
  (void)report::FromJson<formulas::CallValue>(report::JsonValue(json, "value"));
}

// A module call's graph (recover_from_graph.h): read, written back equal,
// and recovered, whose values write back equal too.
void ExerciseModuleGraph(const Json& json) {
  absl::StatusOr<ModuleGraph> graph =
      report::FromJson<ModuleGraph>(report::JsonValue(json, "graph"));
  if (!graph.ok()) return;
  absl::StatusOr<ModuleGraph> again = report::FromJson<ModuleGraph>(
      report::JsonValue(report::ToJson(*graph), "graph"));
  Require(again.ok() && *again == *graph, "a module graph reads back equal");
  const RecoveredAttributes recovered = RecoverAttributes(*graph);
  absl::StatusOr<RecoveredAttributes> written =
      report::FromJson<RecoveredAttributes>(
          report::JsonValue(report::ToJson(recovered), "recovered"));
  Require(written.ok() && *written == recovered,
          "recovered attributes read back equal");
  Require(recovered.unrecovered.size() <= recovered.values.size(),
          "only attributes of the family are unrecovered");
}

void ExerciseDocument(const Json& json) {
  if (absl::StatusOr<CrawlDocument> document =
          report::FromJson<CrawlDocument>(report::JsonValue(json, "crawl"));
      document.ok()) {
    absl::StatusOr<CrawlDocument> again = report::FromJson<CrawlDocument>(
        report::JsonValue(report::ToJson(*document), "crawl"));
    Require(again.ok() && *again == *document,
            "a crawl record reads back equal");
  }
  if (absl::StatusOr<CrawlRecord> record = CrawlRecordFromJson(json);
      record.ok()) {
    if (absl::StatusOr<report::AnalysisReport> built =
            BuildAnalysisReport(*std::move(record));
        built.ok()) {
      ExerciseReport(*built);
    }
  }
  ExerciseModuleDocument(json);
  ExerciseModuleGraph(json);
  if (json.is_object()) {
    if (auto leaf_calls = json.find("leaf_calls");
        leaf_calls != json.end() && leaf_calls->is_array()) {
      for (const Json& leaf : *leaf_calls) ExerciseModuleDocument(leaf);
    }
  }
}

}  // namespace
}  // namespace torchscan::crawl

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<torchscan::report::Json> json =
      torchscan::report::ParseJson(input);
  if (json.ok()) torchscan::crawl::ExerciseDocument(*json);
  return 0;
}
