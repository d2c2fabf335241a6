// Operators through which Python's crawl_module reaches C++: the evaluation of
// the crawls it records (the module formulas and the report assembly,
// crawl/crawl_json.h), and the analysis of a TorchScript module. Python's
// forward hooks never fire inside TorchScript, so a torch.jit.ScriptModule
// (loaded from a file, scripted or traced) goes through the C++ TorchScript
// front end (torchscan/crawl.h), which observes every submodule call of the
// interpreted graphs.

#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/library.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "crawl/crawl_json.h"
#include "python/operators/open_measurements.h"
#include "python/operators/value_arguments.h"
#include "report/analysis_report.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "report/strict.h"
#include "torchscan/crawl.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/own_operators.h"

namespace torchscan::dispatch {
namespace {

using report::Json;

// The computed parts of a crawl's report (crawl/crawl_json.h).
std::string EvaluateCrawl(std::string crawl_json) {
  absl::StatusOr<Json> parts =
      crawl::EvaluateCrawlParts(ParseJsonArgument(crawl_json));
  CheckValue(parts.status());
  return report::DumpJson(*parts);
}

// The same for a full-mode crawl measured by session `handle`: its
// operator FlopReport and layer calls' operator FLOPs are read from the
// session, not from the record.
std::string EvaluateMeasuredCrawl(std::int64_t handle, std::string crawl_json) {
  CountingSession& session = OpenMeasurements::Get().Session(handle);
  absl::StatusOr<report::FlopReport> flops = session.BuildReport();
  TORCH_CHECK(flops.ok(), "torchscan: ", flops.status().ToString());
  absl::StatusOr<std::map<std::size_t, report::LayerOperatorFlops>>
      layer_call_flops = session.BuildLayerCallFlops();
  TORCH_CHECK(layer_call_flops.ok(),
              "torchscan: ", layer_call_flops.status().ToString());
  absl::StatusOr<std::string> parts = crawl::EvaluateMeasuredCrawlText(
      ParseJsonArgument(crawl_json), *std::move(flops),
      *std::move(layer_call_flops));
  CheckValue(parts.status());
  return *std::move(parts);
}

// `module`: a ScriptModule's object; `args`: the forward arguments (a
// tuple); `mode`: "full" or "structure". Returns
// {"report": AnalysisReport, "incomplete": "<strict message>" or null}.
// Python prepares the inputs (its input metadata says whether they were
// generated) and applies `strict`. Exceptions from the forward propagate.
std::string CrawlScriptModuleOperator(c10::IValue module, c10::IValue args,
                                      std::string mode) {
  TORCH_CHECK_VALUE(
      module.isObject() && module.toObjectRef().type()->is_module(),
      "torchscan: expected a TorchScript module");
  TORCH_CHECK_VALUE(args.isTuple(), "torchscan: args must be a tuple");
  TORCH_CHECK_VALUE(mode == "full" || mode == "structure",
                    "mode must be 'full' or 'structure'.");
  CrawlOptions options;
  options.args = args.toTupleRef().elements().vec();
  options.mode = mode == "full" ? CrawlMode::kFull : CrawlMode::kStructure;
  absl::StatusOr<report::AnalysisReport> report =
      CrawlScriptModule(torch::jit::Module(module.toObject()), options);
  TORCH_CHECK_VALUE(report.ok(), std::string(report.status().message()));
  Json out = Json::object();
  out["report"] = report::AnalysisReportToJson(*report);
  out["incomplete"] = report::IsIncomplete(*report)
                          ? Json(report::IncompleteAnalysisMessage(*report))
                          : Json();
  return report::DumpJson(out);
}

const OwnOperators registration(
    torch::Library::FRAGMENT,
    {"_evaluate_crawl", "_evaluate_measured_crawl", "_crawl_script_module"},
    [](torch::Library& library) {
      library.def("_evaluate_crawl(str crawl) -> str", &EvaluateCrawl);
      library.def("_evaluate_measured_crawl(int handle, str crawl) -> str",
                  &EvaluateMeasuredCrawl);
      library.def("_crawl_script_module(Any module, Any args, str mode) -> str",
                  &CrawlScriptModuleOperator);
    },
    __FILE__, __LINE__);

}  // namespace
}  // namespace torchscan::dispatch
