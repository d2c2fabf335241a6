#include "python/operators/value_descriptions.h"  // Python.h first

#include <c10/core/TensorImpl.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "python/operators/report_objects.h"
#include "report/count.h"

namespace torchscan::dispatch {
namespace {

using report::MappingItem;
using report::ValueMetadata;

// The classes the rules name, looked up at their first use and kept for the
// life of the process (NOTE [Classes found under the GIL] in
// python_objects.h).
PyObject* TensorClass() {
  static PyObject* found = nullptr;
  if (found == nullptr) found = ImportQualified("torch.Tensor");
  return found;
}

PyObject* ParameterClass() {
  static PyObject* found = nullptr;
  if (found == nullptr) found = ImportQualified("torch.nn.Parameter");
  return found;
}

PyObject* MappingClass() {
  static PyObject* found = nullptr;
  if (found == nullptr) found = ImportQualified("collections.abc.Mapping");
  return found;
}

// type(value).<attribute> as text ("__name__" or "__qualname__").
bool TypeAttribute(PyObject* value, PyObject* attribute, std::string* out) {
  OwnedRef name(
      PyObject_GetAttr(reinterpret_cast<PyObject*>(Py_TYPE(value)), attribute));
  return name && Utf8(name.get(), out);
}

bool TypeName(PyObject* value, std::string* out) {
  static PyObject* const kName = PyUnicode_InternFromString("__name__");
  return TypeAttribute(value, kName, out);
}

// The scalars' exact types, named without a lookup; nullptr otherwise.
const char* ExactScalarName(PyTypeObject* type) {
  if (type == &PyBool_Type) return "bool";
  if (type == &PyLong_Type) return "int";
  if (type == &PyFloat_Type) return "float";
  if (type == &PyComplex_Type) return "complex";
  if (type == &PyUnicode_Type) return "str";
  if (type == &PyBytes_Type) return "bytes";
  return nullptr;
}

bool IsScalar(PyObject* value) {
  return PyLong_Check(value) || PyFloat_Check(value) ||
         PyComplex_Check(value) || PyUnicode_Check(value) ||
         PyBytes_Check(value);  // PyLong_Check takes bools
}

bool AsInt64(PyObject* value, std::int64_t* out) {
  OwnedRef index(PyNumber_Index(value));
  if (!index) return false;
  *out = PyLong_AsLongLong(index.get());
  return !(*out == -1 && PyErr_Occurred());
}

// str(getattr(value, attribute)).
bool StrOf(PyObject* value, const char* attribute, std::string* out) {
  OwnedRef attr(PyObject_GetAttrString(value, attribute));
  OwnedRef text(attr ? PyObject_Str(attr.get()) : nullptr);
  return text && Utf8(text.get(), out);
}

// StrOf(tensor, attribute), made once per `key` into `cache`.
const std::string* PythonString(std::map<int, std::string>& cache, int key,
                                PyObject* tensor, const char* attribute) {
  if (auto it = cache.find(key); it != cache.end()) return &it->second;
  std::string name;
  if (!StrOf(tensor, attribute, &name)) return nullptr;
  return &cache.emplace(key, std::move(name)).first->second;
}

// A mapping key as TorchScan keeps it (report::MappingKey): an int or a
// bool, or a string for which key.isidentifier() is true; nullopt else.
bool KeptKey(PyObject* key, std::optional<report::MappingKey>* out) {
  if (PyBool_Check(key)) {
    *out = report::MappingKey(key == Py_True);
  } else if (PyLong_Check(key)) {
    // Past 64 bits, through its decimal text (Count holds 128).
    OwnedRef index(PyNumber_Index(key));  // an int subclass's own str()
    OwnedRef text(index ? PyObject_Str(index.get()) : nullptr);
    std::string digits;
    if (!text || !Utf8(text.get(), &digits)) return false;
    const std::optional<report::Count> number = report::ParseCount(digits);
    if (!number) {
      PyErr_SetString(PyExc_OverflowError,
                      "describe_value: a mapping key is out of range");
      return false;
    }
    *out = report::MappingKey(std::in_place_type<report::Count>, *number);
  } else if (PyUnicode_Check(key)) {
    static PyObject* const kIsIdentifier =
        PyUnicode_InternFromString("isidentifier");
    OwnedRef identifier(
        PyObject_CallMethodObjArgs(key, kIsIdentifier, nullptr));
    if (!identifier) return false;
    const int truth = PyObject_IsTrue(identifier.get());
    if (truth < 0) return false;
    if (truth == 0) return true;
    std::string text;
    if (!Utf8(key, &text)) return false;
    *out = report::MappingKey(std::move(text));
  }
  return true;
}

}  // namespace

bool ValueDescriber::IsPlainTensor(PyObject* value) {
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(value));
  return type == TensorClass() || type == ParameterClass();
}

bool ValueDescriber::Describe(PyObject* value, ValueMetadata* out) {
  PyTypeObject* type = Py_TYPE(value);
  if (const char* scalar = ExactScalarName(type)) {
    *out = ValueMetadata::Scalar(scalar);
    return true;
  }
  if (value == Py_None) {
    *out = ValueMetadata::None();
    return true;
  }
  if (IsPlainTensor(value)) return DescribeTensor(value, out);
  PyObject* tensor_class = TensorClass();
  if (tensor_class == nullptr) return false;
  const int tensor = PyObject_IsInstance(value, tensor_class);
  if (tensor < 0) return false;
  if (tensor > 0) return DescribeTensorByAttributes(value, out);
  if (PyTuple_Check(value)) return DescribeSequence(value, /*tuple=*/true, out);
  if (PyList_Check(value)) return DescribeSequence(value, /*tuple=*/false, out);
  PyObject* mapping_class = MappingClass();
  if (mapping_class == nullptr) return false;
  const int mapping = PyObject_IsInstance(value, mapping_class);
  if (mapping < 0) return false;
  if (mapping > 0) return DescribeMapping(value, out);
  std::string name;
  if (IsScalar(value)) {
    if (!TypeName(value, &name)) return false;
    *out = ValueMetadata::Scalar(std::move(name));
    return true;
  }
  static PyObject* const kQualName = PyUnicode_InternFromString("__qualname__");
  if (!TypeAttribute(value, kQualName, &name)) return false;
  *out = ValueMetadata::Object(std::move(name));
  return true;
}

bool ValueDescriber::DescribeCall(PyObject* args, PyObject* kwargs,
                                  report::CallMetadata* out) {
  for (Py_ssize_t i = 0, n = PyTuple_Size(args); i < n; ++i) {
    if (!Describe(PyTuple_GetItem(args, i), &out->args.emplace_back())) {
      return false;
    }
  }
  PyObject *key, *value;
  Py_ssize_t position = 0;
  while (PyDict_Next(kwargs, &position, &key, &value)) {
    auto& [name, described] = out->kwargs.emplace_back();
    if (!Utf8(key, &name) || !Describe(value, &described)) return false;
  }
  return true;
}

// A plain tensor from its TensorImpl; one whose sizes are not plain
// (nested) by its attributes.
bool ValueDescriber::DescribeTensor(PyObject* tensor, ValueMetadata* out) {
  c10::TensorImpl* impl = TensorImplOf(tensor);
  if (impl == nullptr) return false;
  std::vector<std::int64_t> shape;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  c10::Device device(c10::DeviceType::CPU);
  bool requires_grad = false;
  try {
    shape = impl->sizes().vec();
    dtype = c10::typeMetaToScalarType(impl->dtype());
    device = impl->device();
    requires_grad = impl->requires_grad();
  } catch (const c10::Error&) {
    return DescribeTensorByAttributes(tensor, out);
  }
  const std::string* dtype_name = nullptr;
  const std::string* device_name = nullptr;
  if (!PlainTensorNames(tensor, dtype, device, &dtype_name, &device_name)) {
    return false;
  }
  *out = ValueMetadata::Tensor(std::move(shape), *dtype_name, *device_name,
                               requires_grad);
  return true;
}

bool ValueDescriber::PlainTensorNames(PyObject* tensor, c10::ScalarType dtype,
                                      c10::Device device,
                                      const std::string** dtype_name,
                                      const std::string** device_name) {
  *dtype_name =
      PythonString(dtype_names_, static_cast<int>(dtype), tensor, "dtype");
  *device_name =
      PythonString(device_names_,
                   (static_cast<int>(device.type()) << 16) + device.index() + 1,
                   tensor, "device");
  return *dtype_name != nullptr && *device_name != nullptr;
}

bool ValueDescriber::TensorNames(PyObject* tensor, std::string* dtype,
                                 std::string* device) {
  if (!IsPlainTensor(tensor)) {
    return StrOf(tensor, "dtype", dtype) && StrOf(tensor, "device", device);
  }
  c10::TensorImpl* impl = TensorImplOf(tensor);
  if (impl == nullptr) return false;
  const std::string* dtype_name = nullptr;
  const std::string* device_name = nullptr;
  if (!PlainTensorNames(tensor, c10::typeMetaToScalarType(impl->dtype()),
                        impl->device(), &dtype_name, &device_name)) {
    return false;
  }
  *dtype = *dtype_name;
  *device = *device_name;
  return true;
}

// list(t.shape), str(t.dtype), str(t.device), t.requires_grad.
bool ValueDescriber::DescribeTensorByAttributes(PyObject* tensor,
                                                ValueMetadata* out) {
  OwnedRef sizes(PyObject_GetAttrString(tensor, "shape"));
  OwnedRef list(sizes ? PySequence_List(sizes.get()) : nullptr);
  if (!list) return false;
  std::vector<std::int64_t> shape(PyList_Size(list.get()));
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (!AsInt64(PyList_GetItem(list.get(), i), &shape[i])) return false;
  }
  std::string dtype, device;
  if (!StrOf(tensor, "dtype", &dtype) || !StrOf(tensor, "device", &device)) {
    return false;
  }
  OwnedRef grad(PyObject_GetAttrString(tensor, "requires_grad"));
  const int requires_grad = grad ? PyObject_IsTrue(grad.get()) : -1;
  if (requires_grad < 0) return false;
  *out = ValueMetadata::Tensor(std::move(shape), std::move(dtype),
                               std::move(device), requires_grad != 0);
  return true;
}

// Items in iteration order (a subclass's own __iter__ included).
bool ValueDescriber::DescribeSequence(PyObject* value, bool tuple,
                                      ValueMetadata* out) {
  OwnedRef items(PyTuple_CheckExact(value) || PyList_CheckExact(value)
                     ? Py_NewRef(value)
                     : PySequence_List(value));  // iterates the subclass
  if (!items) return false;
  const Py_ssize_t size = PySequence_Size(items.get());
  if (size < 0) return false;
  std::vector<ValueMetadata> described(static_cast<std::size_t>(size));
  for (Py_ssize_t i = 0; i < size; ++i) {
    OwnedRef item(PySequence_GetItem(items.get(), i));
    if (!item || !Describe(item.get(), &described[i])) return false;
  }
  *out = tuple ? ValueMetadata::Tuple(std::move(described))
               : ValueMetadata::List(std::move(described));
  return true;
}

// type(value).__name__ and value.items(), in their order.
bool ValueDescriber::DescribeMapping(PyObject* value, ValueMetadata* out) {
  std::string type;
  if (!TypeName(value, &type)) return false;
  static PyObject* const kItems = PyUnicode_InternFromString("items");
  OwnedRef items(PyObject_CallMethodObjArgs(value, kItems, nullptr));
  OwnedRef iterator(items ? PyObject_GetIter(items.get()) : nullptr);
  if (!iterator) return false;
  std::vector<MappingItem> entries;
  while (OwnedRef pair{PyIter_Next(iterator.get())}) {
    OwnedRef parts(PySequence_Tuple(pair.get()));
    if (!parts) return false;
    if (PyTuple_Size(parts.get()) != 2) {
      PyErr_SetString(PyExc_ValueError,
                      "describe_value: a mapping item is not a (key, value) "
                      "pair");
      return false;
    }
    PyObject* key = PyTuple_GetItem(parts.get(), 0);
    MappingItem& entry = entries.emplace_back();
    if (!KeptKey(key, &entry.key) || !TypeName(key, &entry.key_type) ||
        !Describe(PyTuple_GetItem(parts.get(), 1), &entry.value)) {
      return false;
    }
  }
  if (PyErr_Occurred()) return false;
  *out = ValueMetadata::Mapping(std::move(type), std::move(entries));
  return true;
}

namespace {

// describe_value(value) -> dict
PyObject* DescribeValueFunction(PyObject*, PyObject* const* args,
                                Py_ssize_t nargs) {
  if (!CheckArguments(kExtensionModule, "describe_value", nargs, 1)) {
    return nullptr;
  }
  ValueDescriber describer;
  ValueMetadata described;
  if (!describer.Describe(args[0], &described)) return nullptr;
  return ToPython(described);
}

// describe_call(args, kwargs) -> {"args": [...], "kwargs": {...}}
PyObject* DescribeCallFunction(PyObject*, PyObject* const* args,
                               Py_ssize_t nargs) {
  if (!CheckArguments(kExtensionModule, "describe_call", nargs, 2)) {
    return nullptr;
  }
  OwnedRef positional(PySequence_Tuple(args[0]));
  if (!positional) return nullptr;
  OwnedRef keywords(PyDict_New());
  if (!keywords || PyDict_Update(keywords.get(), args[1]) < 0) return nullptr;
  ValueDescriber describer;
  report::CallMetadata call;
  if (!describer.DescribeCall(positional.get(), keywords.get(), &call)) {
    return nullptr;
  }
  return ToPython(call);
}

PyMethodDef kFunctions[] = {
    {"describe_value", AsCFunction(DescribeValueFunction), METH_FASTCALL,
     "describe_value(value) -> dict: value's metadata by TorchScan 0.2's "
     "describe rules (python/operators/value_descriptions.h)."},
    {"describe_call", AsCFunction(DescribeCallFunction), METH_FASTCALL,
     "describe_call(args, kwargs) -> dict: {'args': [...], 'kwargs': {...}}, "
     "each value described by describe_value's rules."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool AddValueDescriptionFunctions(PyObject* module) {
  return PyModule_AddFunctions(module, kFunctions) == 0;
}

}  // namespace torchscan::dispatch
