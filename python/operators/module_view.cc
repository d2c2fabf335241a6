#include "python/operators/module_view.h"  // Python.h first

#include <memory>

namespace torchscan::dispatch {
namespace {

// A view's target and its own attributes (a dict).
class ModuleView {
 public:
  ModuleView(PyObject* target, PyObject* own)
      : target_(Py_NewRef(target)), own_(Py_NewRef(own)) {}
  ~ModuleView() { Clear(); }

  // A new reference, or nullptr with the target's AttributeError set.
  PyObject* Get(PyObject* name) {
    if (own_ != nullptr) {
      PyObject* value = PyDict_GetItemWithError(own_, name);
      if (value != nullptr) return Py_NewRef(value);
      if (PyErr_Occurred()) return nullptr;
    }
    if (target_ == nullptr) {
      PyErr_SetObject(PyExc_AttributeError, name);
      return nullptr;
    }
    return PyObject_GetAttr(target_, name);
  }

  // `value` nullptr deletes the view's own attribute.
  int Set(PyObject* name, PyObject* value) {
    if (own_ == nullptr) {
      PyErr_SetString(PyExc_AttributeError, "the module view was cleared");
      return -1;
    }
    if (value != nullptr) return PyDict_SetItem(own_, name, value);
    if (PyDict_DelItem(own_, name) == 0) return 0;
    if (PyErr_ExceptionMatches(PyExc_KeyError)) {
      PyErr_Clear();
      PyErr_SetObject(PyExc_AttributeError, name);
    }
    return -1;
  }

  PyObject* target() const { return target_; }

  int Traverse(visitproc visit, void* arg) {
    Py_VISIT(target_);
    Py_VISIT(own_);
    return 0;
  }
  void Clear() {
    Py_CLEAR(target_);
    Py_CLEAR(own_);
  }

 private:
  PyObject* target_;
  PyObject* own_;
};

using ViewType = NativeType<ModuleView>;

PyObject* ViewNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject *target, *own;
  if (kwargs != nullptr && PyDict_Size(kwargs) != 0) {
    PyErr_SetString(PyExc_TypeError, "ModuleView() takes no keyword arguments");
    return nullptr;
  }
  if (!PyArg_ParseTuple(args, "OO!:ModuleView", &target, &PyDict_Type, &own)) {
    return nullptr;
  }
  // A copy: the caller's dict stays the caller's.
  OwnedRef copy(PyDict_Copy(own));
  if (!copy) return nullptr;
  return ViewType::New(type, std::make_unique<ModuleView>(target, copy.get()));
}

PyObject* ViewGetAttr(PyObject* self, PyObject* name) {
  return ViewType::Of(self)->Get(name);
}

int ViewSetAttr(PyObject* self, PyObject* name, PyObject* value) {
  return ViewType::Of(self)->Set(name, value);
}

PyObject* ViewRepr(PyObject* self) {
  PyObject* target = ViewType::Of(self)->target();
  if (target == nullptr) return PyUnicode_FromString("<module view, cleared>");
  return PyUnicode_FromFormat("<module view of %R>", target);
}

PyType_Slot kViewSlots[] = {
    {Py_tp_new, reinterpret_cast<void*>(ViewNew)},
    {Py_tp_dealloc, reinterpret_cast<void*>(ViewType::Dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(ViewType::Traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(ViewType::Clear)},
    {Py_tp_getattro, reinterpret_cast<void*>(ViewGetAttr)},
    {Py_tp_setattro, reinterpret_cast<void*>(ViewSetAttr)},
    {Py_tp_repr, reinterpret_cast<void*>(ViewRepr)},
    {Py_tp_doc,
     const_cast<char*>("ModuleView(target, own): `target`'s attributes, "
                       "except the names of the dict `own` "
                       "(python/operators/module_view.h).")},
    {0, nullptr},
};

PyType_Spec kViewSpec = {
    "torchscan_dispatch._hooks.ModuleView",  ViewType::kBasicSize, 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, kViewSlots,
};

}  // namespace

bool AddModuleView(PyObject* module) {
  return AddType(module, "ModuleView", &kViewSpec);
}

}  // namespace torchscan::dispatch
