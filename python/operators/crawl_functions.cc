#include "python/operators/crawl_functions.h"  // Python.h first

#include <c10/util/Exception.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>

#include "absl/status/statusor.h"
#include "crawl/crawl_json.h"
#include "python/operators/open_measurements.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "torchscan/layer_call_flops.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/layer_call_flops.h"

namespace torchscan::dispatch {
namespace {

using report::Json;

// The crawl record argument as JSON, its bad values named from "crawl".
bool CrawlArgument(PyObject* value, Json* out) {
  return ToJson(value, "crawl", out, "crawl is not a JSON crawl record: ");
}

PyObject* EvaluateCrawl(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  Json crawl;
  if (!CheckArguments(kExtensionModule, "evaluate_crawl", nargs, 1) ||
      !CrawlArgument(args[0], &crawl)) {
    return nullptr;
  }
  Json parts;
  const bool ok = WithoutGil([&] { return crawl::EvaluateCrawlParts(crawl); },
                             &parts, RaiseValueError);
  return ok ? FromJson(parts) : nullptr;
}

// The measurement's own failures (an unknown handle, a report that cannot
// be built) are c10::Errors, RuntimeErrors in Python as the operator raised
// them; the record's are ValueErrors.
absl::StatusOr<Json> EvaluateMeasured(std::int64_t handle, const Json& crawl) {
  CountingSession& session = OpenMeasurements::Get().Session(handle);
  absl::StatusOr<report::FlopReport> flops = session.BuildReport();
  TORCH_CHECK(flops.ok(), "torchscan: ", flops.status().ToString());
  absl::StatusOr<std::map<std::size_t, LayerCallFlops>> layer_call_flops =
      session.BuildLayerCallFlops();
  TORCH_CHECK(layer_call_flops.ok(),
              "torchscan: ", layer_call_flops.status().ToString());
  return crawl::EvaluateMeasuredCrawlParts(
      crawl, *std::move(flops),
      ToLayerOperatorFlops(*std::move(layer_call_flops)));
}

PyObject* EvaluateMeasuredCrawl(PyObject*, PyObject* const* args,
                                Py_ssize_t nargs) {
  if (!CheckArguments(kExtensionModule, "evaluate_measured_crawl", nargs, 2)) {
    return nullptr;
  }
  std::int64_t handle = 0;
  Json crawl;
  if (!Handle(args[0], &handle) || !CrawlArgument(args[1], &crawl)) {
    return nullptr;
  }
  Json parts;
  const bool ok = WithoutGil([&] { return EvaluateMeasured(handle, crawl); },
                             &parts, RaiseValueError);
  return ok ? FromJson(parts) : nullptr;
}

PyMethodDef kFunctions[] = {
    {"evaluate_crawl", AsCFunction(EvaluateCrawl), METH_FASTCALL,
     "evaluate_crawl(crawl) -> dict: the computed parts of a crawl's "
     "report."},
    {"evaluate_measured_crawl", AsCFunction(EvaluateMeasuredCrawl),
     METH_FASTCALL,
     "evaluate_measured_crawl(handle, crawl) -> dict: the same, operator "
     "FLOPs from the measurement."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool AddCrawlFunctions(PyObject* module) {
  return PyModule_AddFunctions(module, kFunctions) == 0;
}

}  // namespace torchscan::dispatch
