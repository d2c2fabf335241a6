// A module's description for the module formulas (formulas/
// module_description.h), read natively from the live module object: the
// family chosen with isinstance in the family table's order, the
// hyper-parameters from the attributes each family's row declares
// (formulas/module_families.h), the class name and the parameter count.
//
// It gives exactly what Python's describe_module
// (python/torchscan_dispatch/_describe.py) gives after its JSON is read, or
// declines: for a family whose row declares no attributes (kTransformer),
// and for any attribute missing or of another type than its kind names,
// where describe_module has the last word (its own conversion, or its
// error). The crawl recorder (crawl_recorder.h) calls describe_module only
// then.

#ifndef TORCHSCAN_PYTHON_OPERATORS_MODULE_ATTRIBUTES_H_
#define TORCHSCAN_PYTHON_OPERATORS_MODULE_ATTRIBUTES_H_

#include <cstdint>
#include <optional>
#include <string>

#include "formulas/module_description.h"
#include "python/operators/python_objects.h"  // Python.h first

namespace torchscan::dispatch {

// True with *out set when the native description covers `module`; false,
// with no Python error set, where describe_module decides. `type_name` is
// type(module).__name__. `parameter_count`, when known, is
// sum(p.numel() for p in module.parameters()); nullopt reads it.
bool DescribeModuleNatively(PyObject* module, const std::string& type_name,
                            std::optional<std::int64_t> parameter_count,
                            formulas::ModuleDescription* out);

// Adds module_family_rows() -> list[dict], the family table as Python's
// describe_module and graph recovery derive their own from it, and
// native_module_description_matches(module, description) -> bool | None:
// whether the native description of `module` equals
// ModuleDescriptionFromJson(`description`), a describe_module result; None
// when the native description declines. For tests.
bool AddModuleAttributeFunctions(PyObject* module);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_PYTHON_OPERATORS_MODULE_ATTRIBUTES_H_
