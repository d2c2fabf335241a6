// by_module's module hooks: the ModuleScopeTracker type of the library's
// CPython extension module (hooks_module.cc).
//
// by_module follows ModuleTracker: a global forward pre-hook and forward
// hook see every module call. Written in Python, their bodies cost 4 to 5 us
// per module call on top of the hooks' own dispatch (docs/performance.md):
// naming the module, a dict lookup of the cached scope transition, a ctypes
// call into the session, and sorting the call's tensors for the gradient
// watches. Here the same work is a few hash lookups (under 1 us), and Python
// keeps only what Python alone can do: a thin hook that Dynamo can trace (NOTE
// [Hooks under torch.compile] in _module_scopes.py), naming a module the first
// time it runs (ModuleTracker's rules walk named_children), and the rare values
// the fast path declines (tensor subclasses, pytrees).

#include "python/operators/module_scope_hooks.h"  // Python.h first

#include <ATen/core/Tensor.h>
#include <c10/core/GradMode.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "python/operators/gradient_watches.h"
#include "python/operators/open_measurements.h"
#include "python/operators/python_objects.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/scope_table.h"

namespace torchscan::dispatch {
namespace {

// Values that are pytree leaves and never tensors: they add no gradient to
// watch, so the fast path skips them instead of declining the whole value.
bool HoldsNoTensor(PyObject* value) {
  PyTypeObject* type = Py_TYPE(value);
  return value == Py_None || type == &PyBool_Type || type == &PyLong_Type ||
         type == &PyFloat_Type || type == &PyUnicode_Type;
}

// NOTE [Gradient watches inside functorch transforms]
// Inside grad, vjp, jacrev and hessian, a module's inputs and outputs are
// functorch GradTrackingTensors: torch.Tensor objects whose own autograd
// metadata belongs to the transform's level, differentiated by the
// transform's call of autograd.grad, which runs their tensor hooks as usual.
// Handing them to Python's register_multi_grad_hook failed the workload:
// that function asks `_will_engine_execute_node` about each tensor's node,
// which raises for a leaf's accumulator under autograd.grad ("A leaf node was
// passed to _will_engine_execute_node"), and every transform differentiates
// with autograd.grad with respect to leaves it creates, so any module called
// on the differentiated input (jacrev(model)(x)) raised, as FlopCounterMode
// does. The native watch reads the graph task's exec_info itself, where a
// captured leaf's accumulator is an ordinary entry (gradient_watches.cc), and
// otherwise expects the gradients register_multi_grad_hook expects, so it
// takes these tensors like any plain tensor and by_module keeps
// ModuleTracker's rules: it equals FlopCounterMode's wherever FlopCounterMode
// does not raise. (vmap's BatchedTensors do not require grad at their level;
// they are never watched, by either.)

// Module labels cached per module object: a weak reference that tells the
// id is still the module, and the label's id in one ScopeTable.
class ModuleLabels {
 public:
  ModuleLabels() = default;
  ModuleLabels(const ModuleLabels&) = delete;
  ModuleLabels& operator=(const ModuleLabels&) = delete;
  ~ModuleLabels() { Clear(); }

  // The label of `module`, if cached and the module is still alive.
  bool Find(PyObject* module, std::uint32_t* label) const {
    auto it = modules_.find(module);
    if (it == modules_.end() || PyWeakref_GetObject(it->second.ref) != module) {
      return false;
    }
    *label = it->second.label;
    return true;
  }

  // Caches `label` for `module`, taking the weak reference `ref`.
  void Set(PyObject* module, PyObject* ref, std::uint32_t label) {
    auto [it, inserted] = modules_.try_emplace(module);
    if (!inserted) Py_DECREF(it->second.ref);
    it->second = KnownModule{ref, label};
  }

  void Clear() {
    for (auto& [module, known] : modules_) Py_DECREF(known.ref);
    modules_.clear();
  }

 private:
  struct KnownModule {
    PyObject* ref;  // a weak reference that tells the id is still the module
    std::uint32_t label;
  };
  absl::flat_hash_map<PyObject*, KnownModule> modules_;
};

// What by_module keeps of one model across its measurements (NOTE [Scopes
// kept per model] in torchscan_dispatch/scope_table.h): the table of its
// module labels and scopes, which the next measurement's session adopts, and
// its modules' labels as ModuleTracker names them from its root. Held by
// _module_scopes._NamedTree; the labels are valid exactly while the names
// Python kept for the tree are (NOTE [Names kept per model]).
struct ModuleScopeCache {
  std::shared_ptr<ScopeTable> table = std::make_shared<ScopeTable>();
  ModuleLabels labels;

  int Traverse(visitproc, void*) { return 0; }
  void Clear() {}
};

using CacheType = NativeType<ModuleScopeCache>;
// The ModuleScopeCache type (AddModuleScopeTracker).
PyTypeObject* cache_type = nullptr;

// The state of one ModuleScopes (python/torchscan_dispatch/_module_scopes.py):
// the measuring thread's module scope. Transitions between scopes are cached
// in the session's module table; with a table kept for the model (Adopt),
// hook calls of a model measured before allocate nothing.
class ModuleScopeTracker {
 public:
  ModuleScopeTracker(std::int64_t handle, PyObject* namer, PyObject* slow_watch,
                     PyObject* tensor_type, PyObject* parameter_type,
                     PyObject* compiler)
      : handle_(handle),
        thread_(PyThread_get_thread_ident()),
        namer_(Py_NewRef(namer)),
        slow_watch_(Py_NewRef(slow_watch)),
        tensor_type_(Py_NewRef(tensor_type)),
        parameter_type_(Py_NewRef(parameter_type)),
        compiler_(Py_NewRef(compiler)) {}

  ModuleScopeTracker(const ModuleScopeTracker&) = delete;
  ModuleScopeTracker& operator=(const ModuleScopeTracker&) = delete;
  ~ModuleScopeTracker() {
    ForgetNames();
    Clear();
  }

  // The forward pre-hook (`entering`, with the call's positional arguments)
  // and the forward hook (with its output). Calls on other threads are
  // ignored: their operators are not counted either.
  bool ModuleCall(PyObject* module, PyObject* value, bool entering) {
    if (PyThread_get_thread_ident() != thread_) return true;
    bool compiling;
    if (!Compiling(&compiling)) return false;
    if (compiling) return true;
    std::uint32_t label;
    if (!LabelOf(module, &label) || !Change(label, entering)) return false;
    // ModuleTracker's gradient hooks: a module leaves the backward scope
    // when its inputs' gradients are computed and enters it when its
    // outputs' are. Without grad mode nothing here is differentiable.
    if (!c10::GradMode::is_enabled()) return true;
    return Watch(value, label, /*entering=*/!entering);
  }

  // Adds `label` to (`entering`) or removes it from the scope. The session
  // reads its current scope itself, so a gradient watch that changed it
  // meanwhile is taken into account.
  bool Change(std::uint32_t label, bool entering) {
    return RaisingPythonErrors([&] {
      Session().ChangeModuleLabel(label, entering);
      return true;
    });
  }

  // Makes the interned scope `id` current (0: no module is running).
  bool SetScope(std::uint32_t id) {
    return RaisingPythonErrors([&] {
      absl::Status status = Session().SetScopeId(ScopeChannel::kModules, id);
      if (!status.ok()) return RaiseStatus(status);
      return true;
    });
  }

  // Uses the labels and scopes kept for a model (`cache`, a
  // ModuleScopeCache) from now on, if the session can adopt its table (it
  // has no module label of its own yet). Python calls this right after
  // naming a root with the names kept for it, so the cached labels are the
  // ones this measurement gives. Sets `*adopted`.
  bool Adopt(PyObject* cache, bool* adopted) {
    ModuleScopeCache* kept = CacheType::Of(cache);
    return RaisingPythonErrors([&] {
      *adopted = Session().AdoptModuleScopes(kept->table);
      if (*adopted) {
        PyObject* previous = std::exchange(cache_, Py_NewRef(cache));
        Py_XDECREF(previous);
        names_ = &kept->labels;
      }
      return true;
    });
  }

  // Watches the gradients of `tensors` (plain tensors that require grad,
  // a sequence) for `label`.
  bool WatchTensors(PyObject* tensors, std::uint32_t label, bool entering) {
    OwnedRef items(PySequence_Tuple(tensors));
    if (!items) return false;
    std::vector<PyObject*> found;
    for (Py_ssize_t i = 0, n = PyTuple_Size(items.get()); i < n; ++i) {
      found.push_back(PyTuple_GetItem(items.get(), i));
    }
    return WatchFound(found, label, entering);
  }

  // The id of `label` in the session's module table; false with an error
  // set when the measurement is gone.
  bool Intern(absl::string_view label, std::uint32_t* id) {
    return RaisingPythonErrors([&] {
      *id = Session().ModuleLabelId(label);
      return true;
    });
  }

  // Forgets the cached labels; Python calls this whenever ModuleTracker's
  // naming renames a module (a parent running for the first time names its
  // children after itself). Labels kept for a model stay as they are (they
  // are right for its names), but this measurement no longer uses them.
  void ForgetNames() {
    own_names_.Clear();
    names_ = &own_names_;
  }

  bool watching() const { return watching_; }

  int Traverse(visitproc visit, void* arg) {
    Py_VISIT(namer_);
    Py_VISIT(slow_watch_);
    Py_VISIT(tensor_type_);
    Py_VISIT(parameter_type_);
    Py_VISIT(compiler_);
    Py_VISIT(cache_);
    return 0;
  }

  void Clear() {
    Py_CLEAR(namer_);
    Py_CLEAR(slow_watch_);
    Py_CLEAR(tensor_type_);
    Py_CLEAR(parameter_type_);
    Py_CLEAR(compiler_);
    names_ = &own_names_;
    Py_CLEAR(cache_);
  }

 private:
  // torch.compiler.is_compiling() outside Dynamo's traces: true while
  // torch.export or Inductor traces the module in Python (module hooks run
  // on fake tensors there, nothing the measurement runs).
  // NOTE [Hooks under torch.compile] in _module_scopes.py: inside Dynamo's
  // traces, the Python hook already returned.
  bool Compiling(bool* compiling) {
    static PyObject* const kFlag =
        PyUnicode_InternFromString("_is_compiling_flag");
    if (compiler_ == nullptr) return RaiseClosed();
    OwnedRef flag(PyObject_GetAttr(compiler_, kFlag));
    if (!flag) {
      // A torch without the flag: ask the public function.
      PyErr_Clear();
      static PyObject* const kIsCompiling =
          PyUnicode_InternFromString("is_compiling");
      flag.reset(PyObject_CallMethodObjArgs(compiler_, kIsCompiling, nullptr));
      if (!flag) return false;
    }
    const int value = PyObject_IsTrue(flag.get());
    if (value < 0) return false;
    *compiling = value != 0;
    return true;
  }

  CountingSession& Session() {
    return OpenMeasurements::Get().Session(handle_);
  }

  // The module's label, cached until its module dies or a rename; Python
  // names modules it has not named yet.
  bool LabelOf(PyObject* module, std::uint32_t* label) {
    if (names_->Find(module, label)) return true;
    if (namer_ == nullptr) return RaiseClosed();
    OwnedRef name(PyObject_CallFunctionObjArgs(namer_, module, nullptr));
    if (!name) return false;
    Py_ssize_t size = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(name.get(), &size);
    if (utf8 == nullptr) return false;
    if (!Intern(absl::string_view(utf8, size), label)) return false;
    OwnedRef ref(PyWeakref_NewRef(module, nullptr));
    if (!ref) {
      // Not weakly referenceable: named again on every call, still right.
      PyErr_Clear();
      return true;
    }
    // Naming may have forgotten every cached label or adopted a model's.
    names_->Set(module, ref.release(), *label);
    return true;
  }

  bool IsPlainTensor(PyObject* value) const {
    PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(value));
    return type == tensor_type_ || type == parameter_type_;
  }

  // Appends `tensor` to `found` when it requires grad; false on error.
  bool AddIfRequiresGrad(PyObject* tensor, std::vector<PyObject*>* found) {
    static PyObject* const kRequiresGrad =
        PyUnicode_InternFromString("requires_grad");
    OwnedRef requires_grad(PyObject_GetAttr(tensor, kRequiresGrad));
    if (!requires_grad) return false;
    if (requires_grad.get() == Py_True) found->push_back(tensor);
    return true;
  }

  // The gradient watch of a module call's arguments or output. The fast
  // path takes a plain tensor or a tuple of plain tensors and values that
  // hold none, also inside functorch transforms (NOTE [Gradient watches
  // inside functorch transforms]); Python takes anything else (pytrees,
  // tensor subclasses) with the same rules.
  bool Watch(PyObject* value, std::uint32_t label, bool entering) {
    std::vector<PyObject*> found;
    bool plain = true;
    if (IsPlainTensor(value)) {
      if (!AddIfRequiresGrad(value, &found)) return false;
    } else if (Py_TYPE(value) == &PyTuple_Type) {
      for (Py_ssize_t i = 0, n = PyTuple_Size(value); plain && i < n; ++i) {
        PyObject* item = PyTuple_GetItem(value, i);
        if (IsPlainTensor(item)) {
          if (!AddIfRequiresGrad(item, &found)) return false;
        } else {
          plain = HoldsNoTensor(item);
        }
      }
    } else {
      plain = HoldsNoTensor(value);
    }
    if (plain && found.empty()) return true;
    if (plain) return WatchFound(found, label, entering);
    if (slow_watch_ == nullptr) return RaiseClosed();
    const std::string* text = nullptr;
    if (!RaisingPythonErrors([&] {
          text = &Session().ModuleLabel(label);
          return true;
        })) {
      return false;
    }
    OwnedRef name(PyUnicode_FromStringAndSize(text->data(), text->size()));
    if (!name) return false;
    OwnedRef done(PyObject_CallFunctionObjArgs(slow_watch_, value, name.get(),
                                               entering ? Py_True : Py_False,
                                               nullptr));
    return static_cast<bool>(done);
  }

  static bool RaiseClosed() {
    PyErr_SetString(PyExc_RuntimeError, "the module scopes were cleared");
    return false;
  }

  bool WatchFound(const std::vector<PyObject*>& found, std::uint32_t label,
                  bool entering) {
    std::vector<at::Tensor> tensors;
    tensors.reserve(found.size());
    for (PyObject* tensor : found) {
      c10::TensorImpl* impl = TensorImplOf(tensor);
      if (impl == nullptr) return false;
      // The Python tensor keeps its TensorImpl alive during this call.
      tensors.emplace_back(
          c10::intrusive_ptr<c10::TensorImpl>::reclaim_copy(impl));
    }
    return RaisingPythonErrors([&] {
      WatchGradients(handle_, tensors, Session().ModuleLabel(label), entering);
      watching_ = true;
      return true;
    });
  }

  const std::int64_t handle_;
  const unsigned long thread_;
  bool watching_ = false;
  PyObject* namer_;       // module -> label (ModuleTracker's naming)
  PyObject* slow_watch_;  // (value, label, entering) -> None
  PyObject* tensor_type_;
  PyObject* parameter_type_;
  PyObject* compiler_;         // the torch.compiler module
  PyObject* cache_ = nullptr;  // the adopted ModuleScopeCache, if any
  // Module labels: this measurement's own, or the adopted model's.
  ModuleLabels own_names_;
  ModuleLabels* names_ = &own_names_;
};

// ---------------------------------------------------------------------------
// The Python type.

using TrackerType = NativeType<ModuleScopeTracker>;

ModuleScopeTracker* TrackerOf(PyObject* self) { return TrackerType::Of(self); }

bool CheckArguments(const char* method, Py_ssize_t nargs, Py_ssize_t expected) {
  return dispatch::CheckArguments("ModuleScopeTracker", method, nargs,
                                  expected);
}

// A label argument, interned; false with an error set when not a str.
bool LabelArgument(ModuleScopeTracker* tracker, PyObject* value,
                   std::uint32_t* label) {
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(value, &size);
  if (utf8 == nullptr) return false;
  return tracker->Intern(absl::string_view(utf8, size), label);
}

PyObject* TrackerNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  long long handle = 0;
  PyObject *namer, *slow_watch, *tensor_type, *parameter_type, *compiler;
  if (!PyArg_ParseTuple(args, "LOOOOO:ModuleScopeTracker", &handle, &namer,
                        &slow_watch, &tensor_type, &parameter_type,
                        &compiler)) {
    return nullptr;
  }
  return TrackerType::New(type, std::make_unique<ModuleScopeTracker>(
                                    handle, namer, slow_watch, tensor_type,
                                    parameter_type, compiler));
}

// enter(module, args): the forward pre-hook's body.
PyObject* TrackerEnter(PyObject* self, PyObject* const* args,
                       Py_ssize_t nargs) {
  if (!CheckArguments("enter", nargs, 2)) return nullptr;
  return NoneOrRaise(
      TrackerOf(self)->ModuleCall(args[0], args[1], /*entering=*/true));
}

// leave(module, output): the forward hook's body.
PyObject* TrackerLeave(PyObject* self, PyObject* const* args,
                       Py_ssize_t nargs) {
  if (!CheckArguments("leave", nargs, 2)) return nullptr;
  return NoneOrRaise(
      TrackerOf(self)->ModuleCall(args[0], args[1], /*entering=*/false));
}

// change(label, entering): for Python's gradient hooks.
PyObject* TrackerChange(PyObject* self, PyObject* const* args,
                        Py_ssize_t nargs) {
  if (!CheckArguments("change", nargs, 2)) return nullptr;
  std::uint32_t label;
  if (!LabelArgument(TrackerOf(self), args[0], &label)) return nullptr;
  const int entering = PyObject_IsTrue(args[1]);
  if (entering < 0) return nullptr;
  return NoneOrRaise(TrackerOf(self)->Change(label, entering != 0));
}

// adopt(cache): uses a ModuleScopeCache kept for the model; whether the
// session took it.
PyObject* TrackerAdopt(PyObject* self, PyObject* const* args,
                       Py_ssize_t nargs) {
  if (!CheckArguments("adopt", nargs, 1)) return nullptr;
  if (cache_type == nullptr || !PyObject_TypeCheck(args[0], cache_type)) {
    PyErr_SetString(PyExc_TypeError,
                    "ModuleScopeTracker.adopt takes a ModuleScopeCache");
    return nullptr;
  }
  bool adopted = false;
  if (!TrackerOf(self)->Adopt(args[0], &adopted)) return nullptr;
  return PyBool_FromLong(adopted);
}

// set_scope(id)
PyObject* TrackerSetScope(PyObject* self, PyObject* const* args,
                          Py_ssize_t nargs) {
  if (!CheckArguments("set_scope", nargs, 1)) return nullptr;
  const unsigned long long id = PyLong_AsUnsignedLongLong(args[0]);
  if (PyErr_Occurred()) return nullptr;
  if (id > UINT32_MAX) {
    PyErr_Format(PyExc_RuntimeError, "scope id %llu was never handed out", id);
    return nullptr;
  }
  return NoneOrRaise(TrackerOf(self)->SetScope(static_cast<std::uint32_t>(id)));
}

// watch(tensors, label, entering): plain tensors that require grad.
PyObject* TrackerWatch(PyObject* self, PyObject* const* args,
                       Py_ssize_t nargs) {
  if (!CheckArguments("watch", nargs, 3)) return nullptr;
  std::uint32_t label;
  if (!LabelArgument(TrackerOf(self), args[1], &label)) return nullptr;
  const int entering = PyObject_IsTrue(args[2]);
  if (entering < 0) return nullptr;
  return NoneOrRaise(
      TrackerOf(self)->WatchTensors(args[0], label, entering != 0));
}

PyObject* TrackerForgetNames(PyObject* self, PyObject* /*unused*/) {
  TrackerOf(self)->ForgetNames();
  Py_RETURN_NONE;
}

PyObject* TrackerWatching(PyObject* self, PyObject* /*unused*/) {
  return PyBool_FromLong(TrackerOf(self)->watching());
}

PyMethodDef kTrackerMethods[] = {
    {"enter", AsCFunction(TrackerEnter), METH_FASTCALL,
     "enter(module, args): a module call begins."},
    {"leave", AsCFunction(TrackerLeave), METH_FASTCALL,
     "leave(module, output): a module call ends."},
    {"change", AsCFunction(TrackerChange), METH_FASTCALL,
     "change(label, entering): adds or removes a label from the scope."},
    {"adopt", AsCFunction(TrackerAdopt), METH_FASTCALL,
     "adopt(cache): uses the labels and scopes kept for a model."},
    {"set_scope", AsCFunction(TrackerSetScope), METH_FASTCALL,
     "set_scope(id): makes an interned scope current."},
    {"watch", AsCFunction(TrackerWatch), METH_FASTCALL,
     "watch(tensors, label, entering): native gradient watches."},
    {"forget_names", TrackerForgetNames, METH_NOARGS,
     "forget_names(): drops every cached module label."},
    {"watching", TrackerWatching, METH_NOARGS,
     "watching(): whether any native gradient watch was registered."},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot kTrackerSlots[] = {
    {Py_tp_new, reinterpret_cast<void*>(TrackerNew)},
    {Py_tp_dealloc, reinterpret_cast<void*>(TrackerType::Dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(TrackerType::Traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(TrackerType::Clear)},
    {Py_tp_methods, kTrackerMethods},
    {Py_tp_doc,
     const_cast<char*>(
         "ModuleScopeTracker(handle, namer, slow_watch, tensor_type, "
         "parameter_type, torch.compiler): the module scope of measurement "
         "`handle` on the "
         "creating thread.")},
    {0, nullptr},
};

PyType_Spec kTrackerSpec = {
    "torchscan_dispatch._hooks.ModuleScopeTracker", TrackerType::kBasicSize, 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,        kTrackerSlots,
};

// ---------------------------------------------------------------------------
// ModuleScopeCache: what is kept of one model across measurements.

PyObject* CacheNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  if (!PyArg_ParseTuple(args, ":ModuleScopeCache")) return nullptr;
  return CacheType::New(type, std::make_unique<ModuleScopeCache>());
}

PyType_Slot kCacheSlots[] = {
    {Py_tp_new, reinterpret_cast<void*>(CacheNew)},
    {Py_tp_dealloc, reinterpret_cast<void*>(CacheType::Dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(CacheType::Traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(CacheType::Clear)},
    {Py_tp_doc,
     const_cast<char*>("ModuleScopeCache(): the module labels and scopes kept "
                       "for one model across its measurements.")},
    {0, nullptr},
};

PyType_Spec kCacheSpec = {
    "torchscan_dispatch._hooks.ModuleScopeCache", CacheType::kBasicSize, 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,      kCacheSlots,
};

}  // namespace

bool AddModuleScopeTracker(PyObject* module) {
  if (!AddType(module, "ModuleScopeTracker", &kTrackerSpec)) return false;
  OwnedRef type(PyType_FromSpec(&kCacheSpec));
  if (!type ||
      PyModule_AddObjectRef(module, "ModuleScopeCache", type.get()) != 0) {
    return false;
  }
  // Kept for the type test of adopt(): the library stays loaded.
  PyObject* previous = reinterpret_cast<PyObject*>(std::exchange(
      cache_type, reinterpret_cast<PyTypeObject*>(type.release())));
  Py_XDECREF(previous);
  return true;
}

}  // namespace torchscan::dispatch
