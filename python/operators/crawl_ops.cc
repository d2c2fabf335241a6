// The operator through which Python's crawl_module analyses a TorchScript
// module. Python's forward hooks never fire inside TorchScript, so a
// torch.jit.ScriptModule (loaded from a file, scripted or traced) goes
// through the C++ TorchScript front end (torchscan/crawl.h), which observes
// every submodule call of the interpreted graphs. (The crawls Python records
// are evaluated by the extension module's functions, crawl_functions.h.)
//
// NOTE [Why the TorchScript crawl is an operator]
// Everything else Python calls goes through the extension module
// (hooks_module.cc), Python objects in and out. That module uses only
// CPython's stable ABI and reads torch's Python objects through attributes
// (NOTE [The stable ABI]), and no attribute of a Python ScriptModule leads
// to the torch::jit::Module behind it: ScriptModule._c is a pybind11 object,
// whose C++ value only pybind11's own (non-stable) machinery can reach.
// PyTorch's operator unboxing is the one way in without that: an `Any`
// argument arrives as the module's IValue. So this stays a torch.ops
// operator, and its result stays JSON text that Python reads with
// json.loads (handing the text to the extension module to convert would
// parse the same text in C++ instead, for nothing).

#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/library.h>

#include <string>

#include "absl/status/statusor.h"
#include "report/analysis_report.h"
#include "report/json_io.h"
#include "report/strict.h"
#include "torchscan/crawl.h"
#include "torchscan_dispatch/own_operators.h"

namespace torchscan::dispatch {
namespace {

using report::Json;

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
    torch::Library::FRAGMENT, {"_crawl_script_module"},
    [](torch::Library& library) {
      library.def("_crawl_script_module(Any module, Any args, str mode) -> str",
                  &CrawlScriptModuleOperator);
    },
    __FILE__, __LINE__);

}  // namespace
}  // namespace torchscan::dispatch
