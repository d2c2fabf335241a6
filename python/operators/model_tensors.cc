#include "python/operators/model_tensors.h"  // Python.h first

#include <ATen/core/Tensor.h>
#include <c10/core/TensorImpl.h>

#include <set>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/types/span.h"
#include "python/operators/value_descriptions.h"
#include "torchscan/tensor_identity.h"

namespace torchscan::dispatch {
namespace {

// The tensors of one model, each counted once, and what they add up to.
class ModelTensors {
 public:
  // Counts `tensor` unless an equal one was counted; `parameter` says which
  // totals it joins.
  bool Add(PyObject* tensor, bool parameter) {
    const int kind = parameter ? 0 : 1;
    if (ValueDescriber::IsPlainTensor(tensor)) {
      c10::TensorImpl* impl = TensorImplOf(tensor);
      if (impl == nullptr) return false;
      bool first = false;
      const bool ok = RaisingPythonErrors([&] {
        first = seen_[kind].Insert(at::Tensor(
            c10::intrusive_ptr<c10::TensorImpl,
                               c10::UndefinedTensorImpl>::reclaim_copy(impl)));
        return true;
      });
      if (!ok) return false;
      if (!first) return true;
    } else if (!seen_objects_[kind].insert(tensor).second) {
      return true;
    }
    TensorSize size;
    if (!TensorSizeOf(tensor, &size)) return false;
    if (parameter) {
      (size.requires_grad ? trainable_ : frozen_) += size.numel;
      parameter_bytes_ += size.numel * size.element_size;
    } else {
      buffer_elements_ += size.numel;
      buffer_bytes_ += size.numel * size.element_size;
    }
    std::string dtype, device;
    if (!describer_.TensorNames(tensor, &dtype, &device)) return false;
    dtypes_.insert(std::move(dtype));
    devices_.insert(std::move(device));
    return true;
  }

  // ((trainable, frozen, parameter_bytes, buffer_elements, buffer_bytes),
  // devices, dtypes).
  PyObject* ToPython() const {
    OwnedRef totals(Py_BuildValue("(LLLLL)", trainable_, frozen_,
                                  parameter_bytes_, buffer_elements_,
                                  buffer_bytes_));
    OwnedRef devices(SortedList(devices_));
    OwnedRef dtypes(SortedList(dtypes_));
    if (!totals || !devices || !dtypes) return nullptr;
    return PyTuple_Pack(3, totals.get(), devices.get(), dtypes.get());
  }

 private:
  static PyObject* SortedList(const std::set<std::string>& names) {
    OwnedRef list(PyList_New(0));
    if (!list) return nullptr;
    for (const std::string& name : names) {
      OwnedRef item(PyUnicode_FromStringAndSize(
          name.data(), static_cast<Py_ssize_t>(name.size())));
      if (!item || PyList_Append(list.get(), item.get()) < 0) return nullptr;
    }
    return list.release();
  }

  // Parameters [0] and buffers [1] are each counted once, apart.
  SeenTensors seen_[2];
  // Tensors that are not plain, by object (their storage is theirs to say).
  absl::flat_hash_set<PyObject*> seen_objects_[2];
  ValueDescriber describer_;  // keeps the dtype and device names it made
  std::set<std::string> dtypes_, devices_;
  long long trainable_ = 0, frozen_ = 0, parameter_bytes_ = 0;
  long long buffer_elements_ = 0, buffer_bytes_ = 0;
};

// Adds every item of `iterable` to `tensors`. The items are kept alive by
// `kept` while the set holds their addresses (tensor_identity.h).
bool AddAll(PyObject* iterable, bool parameters, ModelTensors* tensors,
            PyObject* kept) {
  OwnedRef list(PySequence_List(iterable));
  if (!list || PyList_Append(kept, list.get()) < 0) return false;
  for (Py_ssize_t i = 0, n = PyList_Size(list.get()); i < n; ++i) {
    if (!tensors->Add(PyList_GetItem(list.get(), i), parameters)) return false;
  }
  return true;
}

// Whether torch.nn.Module's `names` are what `type` has.
bool InheritsModuleMethods(PyTypeObject* type,
                           absl::Span<PyObject* const> names, bool* out) {
  // NOTE [Classes found under the GIL] in python_objects.h.
  static PyObject* module_class = nullptr;
  if (module_class == nullptr) {
    module_class = ImportQualified("torch.nn.Module");
    if (module_class == nullptr) return false;
  }
  *out = true;
  for (PyObject* name : names) {
    OwnedRef own(PyObject_GetAttr(reinterpret_cast<PyObject*>(type), name));
    OwnedRef base(PyObject_GetAttr(module_class, name));
    if (!own || !base) return false;
    *out = *out && own.get() == base.get();
  }
  return true;
}

// The totals of two iterables of tensors, as model_tensor_totals returns them.
PyObject* TotalsOf(PyObject* parameters, PyObject* buffers) {
  OwnedRef kept(PyList_New(0));
  if (!kept) return nullptr;
  ModelTensors tensors;
  if (!AddAll(parameters, /*parameters=*/true, &tensors, kept.get()) ||
      !AddAll(buffers, /*parameters=*/false, &tensors, kept.get())) {
    return nullptr;
  }
  return tensors.ToPython();
}

PyObject* ModelTensorTotals(PyObject*, PyObject* const* args,
                            Py_ssize_t nargs) {
  if (!CheckArguments(kExtensionModule, "model_tensor_totals", nargs, 2)) {
    return nullptr;
  }
  return TotalsOf(args[0], args[1]);
}

PyObject* ModuleTensorTotals(PyObject*, PyObject* const* args,
                             Py_ssize_t nargs) {
  if (!CheckArguments(kExtensionModule, "module_tensor_totals", nargs, 2)) {
    return nullptr;
  }
  static PyObject* const kModules = PyUnicode_InternFromString("modules");
  static PyObject* const kNamedModules =
      PyUnicode_InternFromString("named_modules");
  static PyObject* const kParameters = PyUnicode_InternFromString("parameters");
  static PyObject* const kBuffers = PyUnicode_InternFromString("buffers");
  static PyObject* const kOwnParameters =
      PyUnicode_InternFromString("_parameters");
  static PyObject* const kOwnBuffers = PyUnicode_InternFromString("_buffers");
  PyObject* root = args[0];
  bool from_dicts = false;
  if (!InheritsOwnTensorMethods(Py_TYPE(root), &from_dicts)) return nullptr;
  if (from_dicts &&
      !InheritsModuleMethods(Py_TYPE(root), {kModules, kNamedModules},
                             &from_dicts)) {
    return nullptr;
  }
  if (!from_dicts) {
    OwnedRef parameters(PyObject_CallMethodObjArgs(root, kParameters, nullptr));
    OwnedRef buffers(PyObject_CallMethodObjArgs(root, kBuffers, nullptr));
    if (!parameters || !buffers) return nullptr;
    return TotalsOf(parameters.get(), buffers.get());
  }
  OwnedRef kept(PyList_New(0));
  if (!kept) return nullptr;
  ModelTensors tensors;
  OwnedRef modules(PySequence_List(args[1]));
  if (!modules) return nullptr;
  // Parameters first, then buffers: the order of the two walks (only the
  // first of equal tensors counts).
  for (PyObject* dict_name : {kOwnParameters, kOwnBuffers}) {
    for (Py_ssize_t i = 0, n = PyList_Size(modules.get()); i < n; ++i) {
      OwnedRef own = OwnTensors(PyList_GetItem(modules.get(), i), dict_name);
      if (!own || !AddAll(own.get(), dict_name == kOwnParameters, &tensors,
                          kept.get())) {
        return nullptr;
      }
    }
  }
  return tensors.ToPython();
}

PyMethodDef kFunctions[] = {
    {"model_tensor_totals", AsCFunction(ModelTensorTotals), METH_FASTCALL,
     "model_tensor_totals(parameters, buffers) -> (totals, devices, dtypes): "
     "the model totals of a report, each tensor counted once."},
    {"module_tensor_totals", AsCFunction(ModuleTensorTotals), METH_FASTCALL,
     "module_tensor_totals(root, modules) -> (totals, devices, dtypes): the "
     "same for root.parameters() and root.buffers(); modules is "
     "list(root.modules())."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool TensorSizeOf(PyObject* tensor, TensorSize* size) {
  if (ValueDescriber::IsPlainTensor(tensor)) {
    c10::TensorImpl* impl = TensorImplOf(tensor);
    if (impl == nullptr) return false;
    return RaisingPythonErrors([&] {
      size->numel = impl->numel();
      size->element_size = static_cast<std::int64_t>(impl->itemsize());
      size->requires_grad = impl->requires_grad();
      return true;
    });
  }
  static PyObject* const kNumel = PyUnicode_InternFromString("numel");
  static PyObject* const kElementSize =
      PyUnicode_InternFromString("element_size");
  static PyObject* const kRequiresGrad =
      PyUnicode_InternFromString("requires_grad");
  OwnedRef numel(PyObject_CallMethodObjArgs(tensor, kNumel, nullptr));
  OwnedRef element_size(
      PyObject_CallMethodObjArgs(tensor, kElementSize, nullptr));
  OwnedRef requires_grad(PyObject_GetAttr(tensor, kRequiresGrad));
  if (!numel || !element_size || !requires_grad) return false;
  size->numel = PyLong_AsLongLong(numel.get());
  size->element_size = PyLong_AsLongLong(element_size.get());
  if (PyErr_Occurred()) return false;
  return IsTrue(requires_grad.get(), &size->requires_grad);
}

bool InheritsOwnTensorMethods(PyTypeObject* type, bool* out) {
  static PyObject* const kMethods[] = {
      PyUnicode_InternFromString("parameters"),
      PyUnicode_InternFromString("named_parameters"),
      PyUnicode_InternFromString("buffers"),
      PyUnicode_InternFromString("named_buffers"),
      PyUnicode_InternFromString("_named_members"),
  };
  return InheritsModuleMethods(type, kMethods, out);
}

OwnedRef OwnTensors(PyObject* module, PyObject* dict_name) {
  OwnedRef dict(PyObject_GetAttr(module, dict_name));
  if (!dict) return OwnedRef();
  OwnedRef values(PyMapping_Values(dict.get()));
  if (!values) return OwnedRef();
  OwnedRef tensors(PyList_New(0));
  if (!tensors) return OwnedRef();
  for (Py_ssize_t i = 0, n = PyList_Size(values.get()); i < n; ++i) {
    PyObject* value = PyList_GetItem(values.get(), i);
    if (value == Py_None) continue;
    // By identity, as the memo set does (a tensor's == is elementwise).
    bool present = false;
    for (Py_ssize_t j = 0, kept = PyList_Size(tensors.get()); j < kept; ++j) {
      present = present || PyList_GetItem(tensors.get(), j) == value;
    }
    if (!present && PyList_Append(tensors.get(), value) < 0) {
      return OwnedRef();
    }
  }
  return tensors;
}

bool AddModelTensorFunctions(PyObject* module) {
  return PyModule_AddFunctions(module, kFunctions) == 0;
}

}  // namespace torchscan::dispatch
