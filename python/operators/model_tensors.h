// A model's parameters and buffers, read natively: the sizes of one tensor,
// and the model totals of a crawl report (each tensor counted once, by the
// rule of torchscan/tensor_identity.h, as the C++ front ends count them).
//
// Plain tensors and parameters (ValueDescriber::IsPlainTensor) are read from
// their TensorImpl; anything else (a tensor subclass, an uninitialized lazy
// parameter) through its Python attributes, so a subclass's own numel() and
// an uninitialized parameter's error are what they are in Python.
//
// Adds to the extension module (hooks_module.cc):
//
//   model_tensor_totals(parameters, buffers)
//       -> ((trainable, frozen, parameter_bytes, buffer_elements,
//            buffer_bytes), devices, dtypes)
//       The totals of the report's `model` part over two iterables of
//       tensors (module.parameters(), module.buffers()), each tensor counted
//       once among its kind: a plain tensor with storage data by its view
//       (storage, offset, sizes, strides, dtype), any other by its object; the
//       first of equal tensors is the one counted. `devices` and `dtypes` are
//       the sorted str(t.device) and str(t.dtype) of the counted tensors (the
//       report context's lists).
//   module_tensor_totals(root, modules) -> the same
//       The same for root.parameters() and root.buffers(), where `modules`
//       is list(root.modules()): read from each module's own dicts when
//       root's class inherits the methods that walk them (NOTE below), else
//       through those methods.
//
// NOTE [A module's own tensors from its dicts]
// For a module whose class overrides none of the methods they go through
// (parameters, named_parameters, buffers, named_buffers, _named_members),
// module.parameters(recurse=False) and module.buffers(recurse=False) are
// the values of module._parameters and module._buffers that are not None,
// each object once, in order (nn.Module._named_members), and with
// recurse=True the same over every module of module.modules() (when
// modules and named_modules are not overridden either). Reading the dicts
// spares Python generators per module, which were most of a crawl's
// pre-hook time and all of its model totals' (docs/performance.md, section
// 4d). A class that overrides any of them is asked through its methods.

#ifndef TORCHSCAN_PYTHON_OPERATORS_MODEL_TENSORS_H_
#define TORCHSCAN_PYTHON_OPERATORS_MODEL_TENSORS_H_

#include <cstdint>

#include "python/operators/python_objects.h"  // Python.h first

namespace torchscan::dispatch {

struct TensorSize {
  std::int64_t numel = 0;
  std::int64_t element_size = 0;
  bool requires_grad = false;
};

// numel(), element_size() and requires_grad of `tensor`. Needs the GIL;
// false with a Python error set on failure.
bool TensorSizeOf(PyObject* tensor, TensorSize* size);

// Whether `type` inherits parameters, named_parameters, buffers,
// named_buffers and _named_members from torch.nn.Module (NOTE above).
// False with a Python error set on failure.
bool InheritsOwnTensorMethods(PyTypeObject* type, bool* out);

// The values of module.<dict_name> (_parameters or _buffers) that are not
// None, each object once, as a list; nullptr with a Python error set on
// failure.
OwnedRef OwnTensors(PyObject* module, PyObject* dict_name);

// Adds model_tensor_totals and module_tensor_totals; false with a Python
// error set on failure.
bool AddModelTensorFunctions(PyObject* module);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_PYTHON_OPERATORS_MODEL_TENSORS_H_
