// The library's CPython extension module, torchscan_dispatch._hooks: how
// the Python package calls the library, Python objects in and out. It holds
// the native bodies of the package's per-call hooks (module_scope_hooks.h,
// crawl_recorder.h), the control of a measurement (counting_functions.h)
// and what is read of it (measurement_functions.h), the report functions
// (report_functions.h), the evaluation of recorded crawls
// (crawl_functions.h) and the model totals they need (model_tensors.h), the
// native module description's test hook
// (module_attributes.h), the peak memory measurement (memory_functions.h),
// the calls around compiled code (compiled_region_calls.h) and the views
// of `torch` its integration puts in Dynamo's place (module_view.h), eager
// flex attention (flex_attention_calls.h), and the command line's parser
// and listings (cli_functions.h).
//
// Python imports it from the copy of the library torch.ops.load_library
// loaded (python/torchscan_dispatch/_library.py), so the operators and these
// types share one copy of the library's state (the open measurements).
//
// NOTE [The stable ABI]
// The module uses only the stable ABI of CPython 3.10 (Py_LIMITED_API, set
// in python_objects.h), so the library does not depend on the minor version
// of the interpreter that loads it, just as it does not link libpython: that
// interpreter provides the symbols. Nothing here touches the layout of
// torch's own Python objects: a tensor's TensorImpl is read from
// Tensor._cdata, everything else through attributes.

#include "python/operators/cli_functions.h"  // Python.h first
#include "python/operators/compiled_region_calls.h"
#include "python/operators/counting_functions.h"
#include "python/operators/crawl_functions.h"
#include "python/operators/crawl_recorder.h"
#include "python/operators/flex_attention_calls.h"
#include "python/operators/measurement_functions.h"
#include "python/operators/memory_functions.h"
#include "python/operators/model_tensors.h"
#include "python/operators/module_attributes.h"
#include "python/operators/module_scope_hooks.h"
#include "python/operators/module_view.h"
#include "python/operators/python_objects.h"
#include "python/operators/report_functions.h"
#include "python/operators/value_descriptions.h"

namespace {

PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT,
    "_hooks",
    "The library's functions and hooks for the torchscan_dispatch package "
    "(python/operators/hooks_module.cc).",
    -1,
    nullptr,
};

}  // namespace

PyMODINIT_FUNC PyInit__hooks() {
  using namespace torchscan::dispatch;
  OwnedRef module(PyModule_Create(&kModule));
  if (!module || !AddModuleScopeTracker(module.get()) ||
      !AddCrawlRecorder(module.get()) || !AddReportFunctions(module.get()) ||
      !AddCrawlFunctions(module.get()) || !AddMemoryFunctions(module.get()) ||
      !AddModelTensorFunctions(module.get()) ||
      !AddCountingFunctions(module.get()) ||
      !AddMeasurementFunctions(module.get()) ||
      !AddCompiledRegionFunctions(module.get()) ||
      !AddModuleView(module.get()) ||
      !AddFlexAttentionFunctions(module.get()) ||
      !AddCliFunctions(module.get()) ||
      !AddModuleAttributeFunctions(module.get()) ||
      !AddValueDescriptionFunctions(module.get())) {
    return nullptr;
  }
  return module.release();
}
