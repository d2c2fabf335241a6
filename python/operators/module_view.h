// ModuleView(target, own): a module as one caller should see it. Reading an
// attribute gives the view's own value of that name when it has one, else
// the target's, read from the target at that moment; setting or deleting
// one changes only the view's own attributes. The torch.compile
// integration puts such views of `torch` and `torch._C` in place of
// Dynamo's module-level `torch` (python/torchscan_dispatch/_compiled_calls.py),
// so that Dynamo's compiled calls get our guard class and everything else
// unchanged.
//
// NOTE [Why a native view]
// Dynamo reads about ten `torch.*` attributes on every compiled call and one
// on every call of a function under torch._dynamo.disable, with or without
// a measurement. A Python class with __getattr__ answers each of those
// through a failed instance lookup (an AttributeError made and cleared) and
// a Python frame, 0.5 to 0.7 us per read, which made a disabled function's
// call 2.4 times slower with the library loaded but idle. This type's
// tp_getattro is a dict lookup and the target's own getattr, so a read costs
// what it costs on the module itself plus one dict probe.

#ifndef TORCHSCAN_PYTHON_OPERATORS_MODULE_VIEW_H_
#define TORCHSCAN_PYTHON_OPERATORS_MODULE_VIEW_H_

#include "python/operators/python_objects.h"

namespace torchscan::dispatch {

// Adds the type ModuleView to `module`; false with a Python error set on
// failure.
bool AddModuleView(PyObject* module);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_PYTHON_OPERATORS_MODULE_VIEW_H_
