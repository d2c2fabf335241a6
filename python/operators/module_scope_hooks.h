// by_module's module hooks (module_scope_hooks.cc): adds the types
// ModuleScopeTracker and ModuleScopeCache to the library's extension module
// (hooks_module.cc).

#ifndef TORCHSCAN_PYTHON_OPERATORS_MODULE_SCOPE_HOOKS_H_
#define TORCHSCAN_PYTHON_OPERATORS_MODULE_SCOPE_HOOKS_H_

#include "python/operators/python_objects.h"

namespace torchscan::dispatch {

// False with a Python error set on failure.
bool AddModuleScopeTracker(PyObject* module);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_PYTHON_OPERATORS_MODULE_SCOPE_HOOKS_H_
