#include "python/operators/python_objects.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "report/count.h"

namespace torchscan::dispatch {

bool RaiseStatus(const absl::Status& status) {
  PyErr_SetString(PyExc_RuntimeError, std::string(status.message()).c_str());
  return false;
}

bool RaiseValueError(const absl::Status& status) {
  PyErr_SetString(PyExc_ValueError, std::string(status.message()).c_str());
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

PyObject* ImportQualified(absl::string_view qualified) {
  const std::size_t dot = qualified.rfind('.');
  if (dot == absl::string_view::npos) {
    const std::string name(qualified);
    PyErr_Format(PyExc_ValueError, "not a qualified name: %s", name.c_str());
    return nullptr;
  }
  const std::string owner(qualified.substr(0, dot));
  const std::string name(qualified.substr(dot + 1));
  OwnedRef module(PyImport_ImportModule(owner.c_str()));
  return module ? PyObject_GetAttrString(module.get(), name.c_str()) : nullptr;
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

bool IsTrue(PyObject* value, bool* out) {
  const int truth = PyObject_IsTrue(value);
  if (truth < 0) return false;
  *out = truth != 0;
  return true;
}

bool Handle(PyObject* value, std::int64_t* out) {
  const long long handle = PyLong_AsLongLong(value);
  if (handle == -1 && PyErr_Occurred()) return false;
  *out = handle;
  return true;
}

namespace {

// NOTE [Paths of bad values]
// A report has thousands of values and is converted on every call, so the
// path of a value is not built while converting: each level keeps the key
// or index that led to it on the C++ stack, linked to its parent's, and the
// path is spelled out only when a value is refused.
struct PathStep {
  const PathStep* parent;
  PyObject* key;  // a str, or nullptr for an item of a list or tuple
  Py_ssize_t index;
};

class PythonToJson {
 public:
  PythonToJson(absl::string_view name, absl::string_view prefix)
      : name_(name), prefix_(prefix) {}

  // Converts `value` into *out, or only checks it when `out` is nullptr
  // (CheckJsonData).
  bool Convert(PyObject* value, const PathStep* step, std::size_t depth,
               report::Json* out) const {
    PyTypeObject* type = Py_TYPE(value);
    if (value == Py_None) {
      if (out != nullptr) *out = nullptr;
    } else if (type == &PyBool_Type) {
      if (out != nullptr) *out = value == Py_True;
    } else if (PyLong_Check(value)) {
      return Int(value, step, out);
    } else if (PyFloat_Check(value)) {
      const double number = PyFloat_AsDouble(value);
      if (!std::isfinite(number)) {
        return Refuse(step, absl::StrCat(std::isnan(number) ? "nan"
                                         : number > 0       ? "inf"
                                                            : "-inf",
                                         " is not a JSON number"));
      }
      if (out != nullptr) *out = number;
    } else if (PyUnicode_Check(value)) {
      if (out == nullptr) return Text(value, step, nullptr);
      std::string text;
      if (!Text(value, step, &text)) return false;
      *out = std::move(text);
    } else if (PyList_Check(value) || PyTuple_Check(value)) {
      return Array(value, step, depth, out);
    } else if (PyDict_Check(value)) {
      return Object(value, step, depth, out);
    } else {
      return Refuse(step, absl::StrCat("a value of type ", TypeName(value),
                                       " is not JSON data"));
    }
    return true;
  }

 private:
  // Exact over Count's range: beyond 64 bits through the decimal digits,
  // which is how JSON text carries them too.
  bool Int(PyObject* value, const PathStep* step, report::Json* out) const {
    int overflow = 0;
    const long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (number == -1 && PyErr_Occurred()) return false;
    if (overflow == 0) {
      if (out != nullptr) *out = static_cast<std::int64_t>(number);
      return true;
    }
    OwnedRef exact(PyNumber_Index(value));  // int.__str__, not a subclass's
    OwnedRef digits(exact ? PyObject_Str(exact.get()) : nullptr);
    std::string text;
    if (!digits || !Utf8(digits.get(), &text)) {
      // Python refuses the digits of ints far beyond 128 bits
      // (sys.set_int_max_str_digits).
      if (!PyErr_ExceptionMatches(PyExc_ValueError)) return false;
      PyErr_Clear();
    }
    std::optional<report::Count> count = report::ParseCount(text);
    if (!count) {
      return Refuse(step,
                    "an int outside 128 bits (JSON reports hold -2^127 to "
                    "2^127 - 1)");
    }
    if (out != nullptr) *out = report::CountToJson(*count);
    return true;
  }

  // Checks that `value` has UTF-8 text (which CPython then keeps with it,
  // so a reader asks for it again at no cost) and copies it to *out unless
  // `out` is nullptr.
  bool Text(PyObject* value, const PathStep* step, std::string* out) const {
    Py_ssize_t size = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(value, &size);
    if (utf8 != nullptr) {
      if (out != nullptr) out->assign(utf8, size);
      return true;
    }
    if (!PyErr_ExceptionMatches(PyExc_UnicodeError)) return false;
    PyErr_Clear();
    return Refuse(step, "a str that is not valid Unicode (a lone surrogate)");
  }

  bool Array(PyObject* value, const PathStep* step, std::size_t depth,
             report::Json* out) const {
    if (!CheckDepth(step, depth)) return false;
    const bool list = PyList_Check(value);
    const Py_ssize_t size = list ? PyList_Size(value) : PyTuple_Size(value);
    if (out != nullptr) {
      *out = report::Json::array();
      out->get_ref<report::Json::array_t&>().reserve(size);
    }
    for (Py_ssize_t i = 0; i < size; ++i) {
      // Borrowed: converting runs no Python code that could change `value`.
      PyObject* item =
          list ? PyList_GetItem(value, i) : PyTuple_GetItem(value, i);
      const PathStep here{step, nullptr, i};
      if (out == nullptr) {
        if (!Convert(item, &here, depth + 1, nullptr)) return false;
        continue;
      }
      report::Json converted;
      if (!Convert(item, &here, depth + 1, &converted)) return false;
      out->push_back(std::move(converted));
    }
    return true;
  }

  bool Object(PyObject* value, const PathStep* step, std::size_t depth,
              report::Json* out) const {
    if (!CheckDepth(step, depth)) return false;
    report::Json::object_t ignored;
    if (out != nullptr) *out = report::Json::object();
    // Appended, not inserted: a dict's keys are distinct already, and the
    // ordered map's insert searches every key before it.
    auto& object =
        out == nullptr ? ignored : out->get_ref<report::Json::object_t&>();
    if (out != nullptr) object.reserve(PyDict_Size(value));
    PyObject *key, *item;
    Py_ssize_t position = 0;
    while (PyDict_Next(value, &position, &key, &item)) {
      if (!PyUnicode_Check(key)) {
        return Refuse(step, absl::StrCat("a dict key of type ", TypeName(key),
                                         ", not str"));
      }
      const PathStep here{step, key, 0};
      std::string name;
      report::Json converted;
      if (!Text(key, &here, out == nullptr ? nullptr : &name) ||
          !Convert(item, &here, depth + 1,
                   out == nullptr ? nullptr : &converted)) {
        return false;
      }
      if (out != nullptr) {
        object.emplace_back(std::move(name), std::move(converted));
      }
    }
    return true;
  }

  bool CheckDepth(const PathStep* step, std::size_t depth) const {
    if (depth < report::kMaxJsonDepth) return true;
    return Refuse(step, absl::StrCat("nested deeper than ",
                                     report::kMaxJsonDepth, " levels"));
  }

  // A ValueError "<prefix><path>: <problem>"; returns false.
  bool Refuse(const PathStep* step, absl::string_view problem) const {
    std::vector<const PathStep*> steps;
    for (; step != nullptr; step = step->parent) steps.push_back(step);
    std::string path(name_);
    for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
      if ((*it)->key == nullptr) {
        absl::StrAppend(&path, "[", (*it)->index, "]");
        continue;
      }
      Py_ssize_t size = 0;
      const char* key = PyUnicode_AsUTF8AndSize((*it)->key, &size);
      if (key == nullptr) PyErr_Clear();
      absl::StrAppend(&path, ".",
                      key == nullptr ? "?" : absl::string_view(key, size));
    }
    const std::string message = absl::StrCat(prefix_, path, ": ", problem);
    PyErr_SetString(PyExc_ValueError, message.c_str());
    return false;
  }

  // The name of `value`'s type ("Tensor"), for messages.
  static std::string TypeName(PyObject* value) {
    static PyObject* const kName = PyUnicode_InternFromString("__name__");
    OwnedRef name(
        PyObject_GetAttr(reinterpret_cast<PyObject*>(Py_TYPE(value)), kName));
    std::string text;
    if (!name || !PyUnicode_Check(name.get()) || !Utf8(name.get(), &text)) {
      PyErr_Clear();
      return "?";
    }
    return text;
  }

  absl::string_view name_;
  absl::string_view prefix_;
};

}  // namespace

bool ToJson(PyObject* value, absl::string_view name, report::Json* out,
            absl::string_view prefix) {
  return PythonToJson(name, prefix).Convert(value, nullptr, 0, out);
}

bool CheckJsonData(PyObject* value, absl::string_view name,
                   absl::string_view prefix) {
  return PythonToJson(name, prefix).Convert(value, nullptr, 0, nullptr);
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
        OwnedRef name(PyUnicode_FromStringAndSize(key.data(), key.size()));
        OwnedRef converted(name ? FromJson(item) : nullptr);
        if (!converted ||
            PyDict_SetItem(dict.get(), name.get(), converted.get()) < 0) {
          return nullptr;
        }
      }
      return dict.release();
    }
    case Type::binary:
      if (report::IsJsonInteger(value)) {
        absl::StatusOr<report::Count> count = report::JsonToCount(value, "");
        if (count.ok()) {
          return PyLong_FromString(report::CountToString(*count).c_str(),
                                   nullptr, 10);
        }
      }
      break;
  }
  PyErr_SetString(PyExc_TypeError, "a binary JSON value");
  return nullptr;
}

}  // namespace torchscan::dispatch
