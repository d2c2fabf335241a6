#include "python/operators/python_objects.h"

#include <string>

namespace torchscan::dispatch {

bool RaiseStatus(const absl::Status& status) {
  PyErr_SetString(PyExc_RuntimeError, std::string(status.message()).c_str());
  return false;
}

PyObject* NoneOrRaise(bool ok) {
  if (!ok) return nullptr;
  Py_RETURN_NONE;
}

bool CheckArguments(const char* type, const char* method, Py_ssize_t nargs,
                    Py_ssize_t expected) {
  if (nargs == expected) return true;
  PyErr_Format(PyExc_TypeError, "%s.%s takes %zd arguments (%zd given)", type,
               method, expected, nargs);
  return false;
}

bool AddType(PyObject* module, const char* name, PyType_Spec* spec) {
  OwnedRef type(PyType_FromSpec(spec));
  return type && PyModule_AddObjectRef(module, name, type.get()) == 0;
}

c10::TensorImpl* TensorImplOf(PyObject* tensor) {
  static PyObject* const kCdata = PyUnicode_InternFromString("_cdata");
  OwnedRef address(PyObject_GetAttr(tensor, kCdata));
  if (!address) return nullptr;
  void* impl = PyLong_AsVoidPtr(address.get());
  if (impl == nullptr && !PyErr_Occurred()) {
    PyErr_SetString(PyExc_TypeError, "a tensor without a TensorImpl");
  }
  return static_cast<c10::TensorImpl*>(impl);
}

bool Utf8(PyObject* text, std::string* out) {
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(text, &size);
  if (utf8 == nullptr) return false;
  out->assign(utf8, size);
  return true;
}

bool ToJson(PyObject* value, report::Json* out) {
  PyTypeObject* type = Py_TYPE(value);
  if (value == Py_None) {
    *out = nullptr;
  } else if (type == &PyBool_Type) {
    *out = value == Py_True;
  } else if (PyLong_Check(value)) {
    int overflow = 0;
    const long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (number == -1 && PyErr_Occurred()) return false;
    if (overflow != 0) {
      PyErr_SetString(PyExc_OverflowError, "an int outside 64 bits");
      return false;
    }
    *out = static_cast<std::int64_t>(number);
  } else if (PyFloat_Check(value)) {
    *out = PyFloat_AsDouble(value);
  } else if (PyUnicode_Check(value)) {
    std::string text;
    if (!Utf8(value, &text)) return false;
    *out = std::move(text);
  } else if (PyList_Check(value) || PyTuple_Check(value)) {
    OwnedRef items(PySequence_Tuple(value));
    if (!items) return false;
    *out = report::Json::array();
    for (Py_ssize_t i = 0, n = PyTuple_Size(items.get()); i < n; ++i) {
      report::Json item;
      if (!ToJson(PyTuple_GetItem(items.get(), i), &item)) return false;
      out->push_back(std::move(item));
    }
  } else if (PyDict_Check(value)) {
    *out = report::Json::object();
    PyObject *key, *item;
    Py_ssize_t position = 0;
    while (PyDict_Next(value, &position, &key, &item)) {
      std::string name;
      if (!PyUnicode_Check(key)) {
        PyErr_SetString(PyExc_TypeError, "a dict key that is not a str");
        return false;
      }
      report::Json converted;
      if (!Utf8(key, &name) || !ToJson(item, &converted)) return false;
      (*out)[name] = std::move(converted);
    }
  } else {
    PyErr_Format(PyExc_TypeError, "cannot describe a value of %R as JSON",
                 reinterpret_cast<PyObject*>(type));
    return false;
  }
  return true;
}

PyObject* FromJson(const report::Json& value) {
  using Type = report::Json::value_t;
  switch (value.type()) {
    case Type::null:
    case Type::discarded:
      return Py_NewRef(Py_None);
    case Type::boolean:
      return PyBool_FromLong(value.get<bool>());
    case Type::number_integer:
      return PyLong_FromLongLong(value.get<std::int64_t>());
    case Type::number_unsigned:
      return PyLong_FromUnsignedLongLong(value.get<std::uint64_t>());
    case Type::number_float:
      return PyFloat_FromDouble(value.get<double>());
    case Type::string: {
      const std::string& text = value.get_ref<const std::string&>();
      return PyUnicode_FromStringAndSize(text.data(), text.size());
    }
    case Type::array: {
      OwnedRef list(PyList_New(0));
      if (!list) return nullptr;
      for (const report::Json& item : value) {
        OwnedRef converted(FromJson(item));
        if (!converted || PyList_Append(list.get(), converted.get()) < 0) {
          return nullptr;
        }
      }
      return list.release();
    }
    case Type::object: {
      OwnedRef dict(PyDict_New());
      if (!dict) return nullptr;
      for (const auto& [key, item] : value.items()) {
        OwnedRef converted(FromJson(item));
        if (!converted || PyDict_SetItemString(dict.get(), key.c_str(),
                                               converted.get()) < 0) {
          return nullptr;
        }
      }
      return dict.release();
    }
    case Type::binary:
      break;
  }
  PyErr_SetString(PyExc_TypeError, "a binary JSON value");
  return nullptr;
}

}  // namespace torchscan::dispatch
