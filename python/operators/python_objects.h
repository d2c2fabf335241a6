// What the library's CPython extension module (hooks_module.cc) shares:
// owned references, turning C++ errors into Python exceptions, the
// TensorImpl behind a plain tensor, and plain Python data as JSON and back.
//
// Everything here uses only CPython's stable ABI (NOTE [The stable ABI] in
// hooks_module.cc). Include this header first: Python.h sets feature macros
// the C library reads.

#ifndef TORCHSCAN_PYTHON_OPERATORS_PYTHON_OBJECTS_H_
#define TORCHSCAN_PYTHON_OPERATORS_PYTHON_OBJECTS_H_

#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030A0000
#include <Python.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/json_io.h"

namespace torchscan::dispatch {

// Every step of the extension module returns false with a Python error set
// when it fails.

// An owned reference, released when it goes out of scope.
class OwnedRef {
 public:
  explicit OwnedRef(PyObject* object = nullptr) : object_(object) {}
  OwnedRef(const OwnedRef&) = delete;
  OwnedRef& operator=(const OwnedRef&) = delete;
  OwnedRef(OwnedRef&& other) noexcept : object_(other.release()) {}
  ~OwnedRef() { Py_XDECREF(object_); }

  PyObject* get() const { return object_; }
  PyObject* release() { return std::exchange(object_, nullptr); }
  void reset(PyObject* object) { Py_XDECREF(std::exchange(object_, object)); }
  explicit operator bool() const { return object_ != nullptr; }

 private:
  PyObject* object_;
};

// NOTE [Attribute names made once]
// An attribute or method name is an interned string made once per call site
// (`static PyObject* const kName = PyUnicode_InternFromString("name")`), not
// PyObject_GetAttrString or PyObject_CallMethod, which make a new string on
// every call. Besides the allocation, CPython's type attribute cache keeps
// the last such string of each cached lookup alive, so per-call names leave
// a few hundred live strings behind that tracemalloc attributes to our hooks
// (tests/python/test_memory_growth.py measured 40-70 KB of them).

// Runs `body` (returning bool) and turns a C++ exception into a
// RuntimeError with its message, as torch.ops does.
template <typename Body>
bool RaisingPythonErrors(Body body) {
  try {
    return body();
  } catch (const c10::Error& error) {
    PyErr_SetString(PyExc_RuntimeError, error.what_without_backtrace());
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_RuntimeError, error.what());
  }
  return false;
}

// `text` (a str) as UTF-8.
bool Utf8(PyObject* text, std::string* out);

// bool(value), as Python computes it.
bool IsTrue(PyObject* value, bool* out);

// `value` (an int) as a measurement handle; a TypeError or OverflowError
// otherwise.
bool Handle(PyObject* value, std::int64_t* out);

// A RuntimeError with the status's message; returns false.
bool RaiseStatus(const absl::Status& status);

// A ValueError with the status's message; returns false.
bool RaiseValueError(const absl::Status& status);

// NOTE [The GIL while the library works]
// The library's work behind a function (a report rendered, a crawl
// evaluated, a device's memory statistics read) touches no Python object and
// may take tens of milliseconds. torch.ops released the GIL around the
// operators these functions replace, so other Python threads ran meanwhile;
// the functions release it too, between converting their arguments and
// building their result, which need it.

// Runs `body` (returning absl::StatusOr<T>) without the GIL. Its value goes
// to *out, then true. An error status is raised by `raise_status` (one of
// the Raise* functions above), a C++ exception is a RuntimeError with its
// message (a c10::Error's without its backtrace); then false.
template <typename T, typename Body, typename RaiseFunction>
bool WithoutGil(Body body, T* out, RaiseFunction raise_status) {
  std::optional<absl::StatusOr<T>> result;
  std::string exception;
  PyThreadState* thread = PyEval_SaveThread();
  try {
    result.emplace(body());
  } catch (const c10::Error& error) {
    exception = error.what_without_backtrace();
  } catch (const std::exception& error) {
    exception = error.what();
  } catch (...) {
    exception = "an unknown C++ exception";
  }
  PyEval_RestoreThread(thread);
  if (!result) {
    PyErr_SetString(PyExc_RuntimeError, exception.c_str());
    return false;
  }
  if (!result->ok()) return raise_status(result->status());
  *out = *std::move(*result);
  return true;
}

// None for `ok`, else nullptr (the error is set): a method's result.
PyObject* NoneOrRaise(bool ok);

// NOTE [Classes found under the GIL]
// Classes the library looks up are found at their first use and kept for
// the life of the process. A function-local static initialised by the
// lookup would hold C++'s initialisation lock while the import may release
// the GIL; another thread could then wait on that lock holding the GIL, and
// neither would go on. The pointers are plain statics set under the GIL
// instead: two threads may both look a class up, and one reference is kept
// twice, never released.

// The class (or any attribute of a module) that `qualified` names, as
// "torch.nn.modules.conv._ConvNd" or "collections.abc.Mapping": its module
// imported, then the attribute read. A new reference, or nullptr with the
// Python error set (the caller decides whether a missing class is an error).
PyObject* ImportQualified(absl::string_view qualified);

// The TensorImpl of a tensor, from Tensor._cdata; the Python tensor keeps
// it alive. nullptr with an error set on failure.
c10::TensorImpl* TensorImplOf(PyObject* tensor);

// Plain Python data as JSON, as json.dumps writes it and ParseJson reads it
// back, without the text: dicts with str keys (in insertion order), lists
// and tuples, str, int, float, bool, None, and their subclasses
// (torch.__version__ is a str). Ints are exact over Count's range (128 bits,
// json_io.h), as JSON reports hold them.
//
// Anything else is a ValueError, one line naming the path of the bad value
// from `name`, after `prefix`: "<prefix>report.layers[3].flops: an int
// outside 128 bits". Refused: a value of another type, a float that is not
// finite (JSON has none), an int outside 128 bits, a dict key that is not a
// str, and nesting deeper than kMaxJsonDepth (ParseJson's limit; a list that
// holds itself ends there too).
bool ToJson(PyObject* value, absl::string_view name, report::Json* out,
            absl::string_view prefix = "");

// Whether ToJson would accept `value`, without building the JSON: true, or
// false with ToJson's ValueError set. What a reader of Python objects
// (report_from_objects.h) checks first, so that a value no JSON report can
// hold is refused as before, wherever it stands.
bool CheckJsonData(PyObject* value, absl::string_view name,
                   absl::string_view prefix = "");

// A JSON document as Python data (dict, list, str, int, float, bool, None),
// keys in document order: what json.loads gives for the document's text
// (DumpJson), without the text; integers beyond 64 bits are exact ints. A
// new reference, or nullptr with an error set.
PyObject* FromJson(const report::Json& value);

// The extension module's name as Python imports it (_library.hooks()): the
// `type` its functions' argument errors name.
inline constexpr char kExtensionModule[] = "torchscan_dispatch._hooks";

// A TypeError unless a method of `type` got `expected` arguments.
bool CheckArguments(const char* type, const char* method, Py_ssize_t nargs,
                    Py_ssize_t expected);

// A METH_FASTCALL function as the PyCFunction a PyMethodDef holds.
template <typename Fast>
PyCFunction AsCFunction(Fast function) {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(function));
}

// The garbage-collected heap type whose instances each own one `T`, which
// reports the Python objects it holds (int Traverse(visitproc, void*)) and
// drops them (void Clear()). A type's slots are New's caller (its tp_new),
// Dealloc, Traverse and Clear; Of is the `T` of an instance.
template <typename T>
class NativeType {
  struct Object {
    PyObject_HEAD T* native;
  };

 public:
  // The spec's basicsize.
  static constexpr int kBasicSize = sizeof(Object);

  static T* Of(PyObject* self) {
    return reinterpret_cast<Object*>(self)->native;
  }

  // A new instance of `type` owning `native`.
  static PyObject* New(PyTypeObject* type, std::unique_ptr<T> native) {
    auto alloc = reinterpret_cast<allocfunc>(PyType_GetSlot(type, Py_tp_alloc));
    PyObject* self = alloc(type, 0);
    if (self != nullptr)
      reinterpret_cast<Object*>(self)->native = native.release();
    return self;
  }

  static void Dealloc(PyObject* self) {
    PyTypeObject* type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    delete std::exchange(reinterpret_cast<Object*>(self)->native, nullptr);
    reinterpret_cast<freefunc>(PyType_GetSlot(type, Py_tp_free))(self);
    Py_DECREF(type);
  }

  static int Traverse(PyObject* self, visitproc visit, void* arg) {
    Py_VISIT(Py_TYPE(self));
    T* native = Of(self);
    return native == nullptr ? 0 : native->Traverse(visit, arg);
  }

  static int Clear(PyObject* self) {
    if (T* native = Of(self)) native->Clear();
    return 0;
  }
};

// Adds the type made from `spec` to `module` as `name`.
bool AddType(PyObject* module, const char* name, PyType_Spec* spec);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_PYTHON_OPERATORS_PYTHON_OBJECTS_H_
