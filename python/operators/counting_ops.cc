// The torch.ops.torchscan operators of a measurement that stay operators
// (NOTE [Which control calls stay operators] in counting_functions.h); the
// rest of a measurement's control is the extension module's
// (counting_functions.h, measurement_functions.h).
//
//   _take_deferred_calls(handle) -> list of (qualified name, overload,
//       arguments, results): the calls of a stopped measurement kept for
//       Python's formulas, values as torch.ops gives them (tensors
//       included); resolve_deferred gives back their FLOPs.
//   _build_info() -> str: JSON {"library_path", "torch_version",
//       "dispatch_key", "counting_available", "counting_error"} of the copy
//       of the library that owns the operators (_library.py).

#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>
#include <dlfcn.h>
#include <torch/library.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "python/operators/open_measurements.h"
#include "report/json_io.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/dispatch_key.h"
#include "torchscan_dispatch/fallback_registration.h"
#include "torchscan_dispatch/operator_info.h"
#include "torchscan_dispatch/own_operators.h"

namespace torchscan::dispatch {
namespace {

using report::Json;

// Deferred calls as a list of (qualified name, overload, arguments, results).
//
// NOTE [Deferred calls cross as IValues]
// A deferred call's arguments and results are IValues: tensors, scalars,
// lists, dtypes, devices, None. Turning them into the Python objects a
// formula reads is what torch's own bindings do (torch.ops converts an
// operator's result); the extension module uses CPython's stable ABI and
// does not link them (NOTE [The stable ABI] in hooks_module.cc), so this
// call stays an operator.
c10::IValue TakeDeferredCalls(std::int64_t handle) {
  TORCH_CHECK(OpenMeasurements::Get().Stopped(handle),
              "torchscan: stop measurement ", handle,
              " before evaluating its calls");
  CountingSession& session = OpenMeasurements::Get().Session(handle);
  std::vector<DeferredCall> calls = session.TakeDeferredCalls();
  c10::impl::GenericList list(c10::AnyType::get());
  for (const DeferredCall& call : calls) {
    const OperatorInfo& info = OperatorInfoById(call.operator_id);
    c10::impl::GenericList arguments(c10::AnyType::get());
    for (const c10::IValue& argument : call.arguments)
      arguments.push_back(argument);
    c10::impl::GenericList results(c10::AnyType::get());
    for (const c10::IValue& result : call.results) results.push_back(result);
    list.push_back(
        c10::ivalue::Tuple::create({info.packet, info.overload,
                                    std::move(arguments), std::move(results)}));
  }
  HandedOutCalls::Get().Add(handle, std::move(calls));
  return list;
}

// The file this library was loaded from, so Python can tell whether the
// torchscan operators it calls belong to the copy it loaded.
std::string LoadedFrom() {
  Dl_info where;
  if (dladdr(reinterpret_cast<void*>(&LoadedFrom), &where) == 0 ||
      where.dli_fname == nullptr) {
    return "";
  }
  return where.dli_fname;
}

// NOTE [Who owns the operators]
// The first copy of the library loaded into a process owns the torchscan
// operators; a later copy's registrations fail softly (own_operators.h).
// Python asks _build_info which copy that is (library_path): only an
// operator answers for the owner, while a function of the extension module
// answers for the copy it was imported from, and that copy's path is what
// Python imports the extension module from (_library.hooks()). So this
// stays an operator.
std::string BuildInfo() {
  Json info = Json::object();
  info["library_path"] = LoadedFrom();
  info["torch_version"] = TORCHSCAN_TORCH_FULL_VERSION;
  info["dispatch_key"] = c10::toString(kCountingKey);
  const absl::Status fallback = CountingFallbackStatus();
  info["counting_available"] = fallback.ok();
  info["counting_error"] = std::string(fallback.message());
  return report::DumpJson(info);
}

// This block owns the namespace (DEF); the other operators of this folder are
// fragments.
const OwnOperators registration(
    torch::Library::DEF, {"_take_deferred_calls", "_build_info"},
    [](torch::Library& library) {
      library.def("_take_deferred_calls(int handle) -> Any",
                  &TakeDeferredCalls);
      library.def("_build_info() -> str", &BuildInfo);
    },
    __FILE__, __LINE__);

}  // namespace
}  // namespace torchscan::dispatch
