#include "python/operators/module_attributes.h"  // Python.h first

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "formulas/module_families.h"
#include "formulas/module_json.h"
#include "python/operators/value_descriptions.h"
#include "report/field_table.h"
#include "report/json_reader.h"

namespace torchscan::dispatch {
namespace {

using formulas::AttributeKind;
using formulas::AttributeValue;
using formulas::HyperParameter;
using formulas::ModuleAttribute;
using formulas::ModuleFamily;
using formulas::ModuleFamilyRow;
using formulas::ModuleFamilyRowFor;
using formulas::ModuleParams;

constexpr std::size_t kFamilies =
    static_cast<std::size_t>(ModuleFamily::kTransformer) + 1;

// NOTE [Classes resolved once]
// The family rows name torch's classes by qualified name; they are looked
// up at the first description (torch has imported them all by the time a
// crawl runs: torchscan_dispatch._describe imports them too) and kept for
// the life of the process (two threads may both look them up: NOTE
// [Classes found under the GIL] in python_objects.h). A class that cannot be
// found turns the native description off, so describe_module decides every
// module, as before.
struct TorchClasses {
  bool found = false;
  std::array<PyObject*, kFamilies> families = {};  // [kUnsupported] unused
};

// `qualified` ("torch.nn.modules.conv._ConvNd") as a new reference, or
// nullptr with the error cleared (NOTE [Classes resolved once]).
PyObject* ResolveClass(absl::string_view qualified) {
  PyObject* found = ImportQualified(qualified);
  if (found == nullptr) PyErr_Clear();
  return found;
}

// NOTE [Classes found under the GIL] in python_objects.h: a plain static,
// set under the GIL.
const TorchClasses& Classes() {
  static const TorchClasses* classes = nullptr;
  if (classes == nullptr) {
    auto* resolved = new TorchClasses;
    resolved->found = true;
    for (std::size_t i = 1; i < kFamilies; ++i) {
      const char* name =
          ModuleFamilyRowFor(static_cast<ModuleFamily>(i)).torch_class;
      resolved->families[i] = name == nullptr ? nullptr : ResolveClass(name);
      resolved->found = resolved->found && resolved->families[i] != nullptr;
    }
    classes = resolved;
  }
  return *classes;
}

// The interned name of a row's attribute (NOTE [Attribute names made once]
// in python_objects.h), made at its first use.
PyObject* AttributeName(const char* name) {
  static auto* const names = new absl::flat_hash_map<const char*, PyObject*>;
  auto [it, inserted] = names->try_emplace(name, nullptr);
  if (inserted) it->second = PyUnicode_InternFromString(name);
  return it->second;
}

// NOTE [Module attributes read from the module's dicts]
// PyObject_GetAttr finds an nn.Module's parameter, buffer or submodule only
// after the generic lookup has failed: CPython makes an AttributeError, its
// message formatted, and runs Module.__getattr__ in Python. Weights, biases
// and running statistics are all read that way, and a ResNet crawl's
// descriptions cost about 16,500 instructions per module. Where the
// module's class looks names up as nn.Module does (its __getattribute__ is
// object's and its __getattr__ Module's) and no class of its __mro__ has
// that name in its __dict__ (no descriptor, no class attribute: asked once
// per class and name, and kept, with a reference to the class), the
// generic lookup can only find the name in the instance's __dict__, and
// Module.__getattr__ then looks in _parameters, _buffers and _modules, in
// that order. So the value is read from those dicts, in the same order:
// about 7,800 instructions per module. A name found in none of them, dicts
// that are not exactly dicts, and every other class go through
// PyObject_GetAttr. (What a class is given after its first description, a
// __getattr__ or an attribute over a parameter's or buffer's name, is not
// seen.)
class ModuleLookup {
 public:
  // `object.<name>` as a new reference, or nullptr with an error set.
  static PyObject* Get(PyObject* object, const char* name) {
    PyObject* key = AttributeName(name);
    if (key == nullptr) return nullptr;
    if (Instance().ReadsDicts(Py_TYPE(object), name, key)) {
      if (PyObject* found = FromDicts(object, key)) return found;
      if (PyErr_Occurred()) return nullptr;
    }
    return PyObject_GetAttr(object, key);
  }

 private:
  struct Class {
    bool module_lookup = false;
    absl::flat_hash_map<const char*, bool> class_has;  // by name
  };

  static ModuleLookup& Instance() {
    static auto* const lookup = new ModuleLookup;  // under the GIL
    return *lookup;
  }

  // Bounds the classes kept (a program that makes classes in a loop).
  static constexpr std::size_t kMostClasses = 4096;

  // Both questions are answered before the maps are touched: answering
  // runs Python (an import, a class's __mro__), during which another
  // thread or a finalizer may use this lookup too.
  bool ReadsDicts(PyTypeObject* type, const char* name, PyObject* key) {
    auto it = classes_.find(type);
    if (it == classes_.end()) {
      if (classes_.size() >= kMostClasses) return false;
      const bool module_lookup = LooksUpAsModule(type);
      auto [made, inserted] = classes_.try_emplace(type);
      if (inserted) {
        Py_INCREF(type);  // the class stays alive, so its address unique
        made->second.module_lookup = module_lookup;
      }
      it = made;
    }
    if (!it->second.module_lookup) return false;
    if (auto known = it->second.class_has.find(name);
        known != it->second.class_has.end()) {
      return !known->second;
    }
    const bool has = ClassHas(type, key);
    it = classes_.find(type);
    if (it == classes_.end()) return false;
    it->second.class_has.try_emplace(name, has);
    return !has;
  }

  // Whether a class in `type`'s __mro__ has `key` in its __dict__: what
  // the generic lookup would find before the instance's __dict__ (a data
  // descriptor) or before __getattr__. True, with the error cleared, when
  // that cannot be read.
  static bool ClassHas(PyTypeObject* type, PyObject* key) {
    static PyObject* const kMro = PyUnicode_InternFromString("__mro__");
    static PyObject* const kDict = PyUnicode_InternFromString("__dict__");
    OwnedRef mro(PyObject_GetAttr(reinterpret_cast<PyObject*>(type), kMro));
    if (!mro || !PyTuple_Check(mro.get())) {
      PyErr_Clear();
      return true;
    }
    for (Py_ssize_t i = 0, n = PyTuple_Size(mro.get()); i < n; ++i) {
      OwnedRef dict(PyObject_GetAttr(PyTuple_GetItem(mro.get(), i), kDict));
      const int found = dict ? PySequence_Contains(dict.get(), key) : -1;
      if (found != 0) {
        PyErr_Clear();
        return true;
      }
    }
    return false;
  }

  // Whether `type`'s __getattribute__ is object's and its __getattr__
  // nn.Module's.
  static bool LooksUpAsModule(PyTypeObject* type) {
    static PyObject* const kGetAttribute =
        PyUnicode_InternFromString("__getattribute__");
    static PyObject* const kGetAttr = PyUnicode_InternFromString("__getattr__");
    static PyObject* module_getattr = nullptr;
    static PyObject* object_getattribute = nullptr;
    if (module_getattr == nullptr) {
      OwnedRef module_class(ImportQualified("torch.nn.modules.module.Module"));
      PyObject* found = module_class
                            ? PyObject_GetAttr(module_class.get(), kGetAttr)
                            : nullptr;
      if (found == nullptr) {
        PyErr_Clear();
        return false;
      }
      module_getattr = found;
      object_getattribute = PyObject_GetAttr(
          reinterpret_cast<PyObject*>(&PyBaseObject_Type), kGetAttribute);
      if (object_getattribute == nullptr) {
        PyErr_Clear();
        return false;
      }
    }
    PyObject* self = reinterpret_cast<PyObject*>(type);
    OwnedRef getattr(PyObject_GetAttr(self, kGetAttr));
    OwnedRef getattribute(getattr ? PyObject_GetAttr(self, kGetAttribute)
                                  : nullptr);
    if (!getattribute) {
      PyErr_Clear();
      return false;
    }
    return getattr.get() == module_getattr &&
           getattribute.get() == object_getattribute;
  }

  // The value of `key` in the instance's __dict__, then in its
  // _parameters, _buffers and _modules: a new reference; nullptr, with an
  // error set only when reading failed, where none holds it or one of
  // those is not a dict.
  static PyObject* FromDicts(PyObject* object, PyObject* key) {
    static PyObject* const kOwners[] = {
        PyUnicode_InternFromString("_parameters"),
        PyUnicode_InternFromString("_buffers"),
        PyUnicode_InternFromString("_modules"),
    };
    OwnedRef state(PyObject_GenericGetDict(object, nullptr));
    if (!state) return nullptr;
    if (PyObject* value = PyDict_GetItemWithError(state.get(), key)) {
      return Py_NewRef(value);
    }
    if (PyErr_Occurred()) return nullptr;
    for (PyObject* owner_name : kOwners) {
      PyObject* owner = PyDict_GetItemWithError(state.get(), owner_name);
      if (owner == nullptr) {
        if (PyErr_Occurred()) return nullptr;
        continue;  // as Module.__getattr__ skips it
      }
      if (!PyDict_CheckExact(owner)) return nullptr;  // PyObject_GetAttr's
      if (PyObject* value = PyDict_GetItemWithError(owner, key)) {
        return Py_NewRef(value);
      }
      if (PyErr_Occurred()) return nullptr;
    }
    return nullptr;
  }

  absl::flat_hash_map<PyTypeObject*, Class> classes_;
};

// The first family whose class `module` is an instance of, in the rows'
// order (upstream's); kUnsupported when none. False when isinstance raised.
bool FamilyOf(PyObject* module, const TorchClasses& classes,
              ModuleFamily* family) {
  *family = ModuleFamily::kUnsupported;
  for (std::size_t i = 1; i < kFamilies; ++i) {
    const int match = PyObject_IsInstance(module, classes.families[i]);
    if (match < 0) return false;
    if (match > 0) {
      *family = static_cast<ModuleFamily>(i);
      return true;
    }
  }
  return true;
}

// Every function below returns false, with no Python error set, where the
// value is not of the kind's type: describe_module decides then.

bool ExactInt(PyObject* value, std::int64_t* out) {
  if (!PyLong_CheckExact(value)) return false;
  int overflow = 0;
  const long long result = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow != 0 || (result == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return false;
  }
  *out = result;
  return true;
}

// float(value) of a float or an int, finite (the JSON describe_module's
// description becomes holds no other).
bool Number(PyObject* value, double* out) {
  if (!PyFloat_CheckExact(value) && !PyLong_CheckExact(value)) return false;
  const double result = PyFloat_AsDouble(value);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  if (!std::isfinite(result)) return false;
  *out = result;
  return true;
}

// A tuple or list of ints.
bool IntItems(PyObject* value, std::vector<std::int64_t>* out) {
  const bool tuple = PyTuple_CheckExact(value);
  if (!tuple && !PyList_CheckExact(value)) return false;
  const Py_ssize_t size = tuple ? PyTuple_Size(value) : PyList_Size(value);
  out->resize(size);
  for (Py_ssize_t i = 0; i < size; ++i) {
    PyObject* item =
        tuple ? PyTuple_GetItem(value, i) : PyList_GetItem(value, i);
    if (item == nullptr || !ExactInt(item, &(*out)[i])) {
      PyErr_Clear();
      return false;
    }
  }
  return true;
}

bool Hyper(PyObject* value, bool allow_string, HyperParameter* out) {
  std::int64_t number = 0;
  if (ExactInt(value, &number)) {
    *out = HyperParameter::Int(number);
    return true;
  }
  std::vector<std::int64_t> items;
  if (IntItems(value, &items)) {
    *out = HyperParameter::Tuple(std::move(items));
    return true;
  }
  if (allow_string && PyUnicode_CheckExact(value)) {
    std::string text;
    if (!Utf8(value, &text)) {
      PyErr_Clear();
      return false;
    }
    *out = HyperParameter::String(std::move(text));
    return true;
  }
  return false;
}

bool NumelOf(PyObject* tensor, std::int64_t* out) {
  if (!ValueDescriber::IsPlainTensor(tensor)) return false;
  c10::TensorImpl* impl = TensorImplOf(tensor);
  if (impl == nullptr) {
    PyErr_Clear();
    return false;
  }
  try {
    *out = impl->numel();
  } catch (const c10::Error&) {
    return false;
  }
  return true;
}

bool ReadAttributes(PyObject* object, const ModuleFamilyRow& row,
                    ModuleParams* params);

// One attribute as its kind reads it.
bool ReadAttribute(PyObject* object, const ModuleAttribute& attribute,
                   AttributeValue* out) {
  OwnedRef value(ModuleLookup::Get(object, attribute.name));
  if (!value) {
    const bool absent = PyErr_ExceptionMatches(PyExc_AttributeError);
    PyErr_Clear();
    if (absent && attribute.kind == AttributeKind::kSetAndNotNone) {
      *out = false;
      return true;
    }
    if (absent && attribute.kind == AttributeKind::kHyperIfPresent) {
      *out = std::optional<HyperParameter>();
      return true;
    }
    return false;
  }
  PyObject* v = value.get();
  switch (attribute.kind) {
    case AttributeKind::kInt: {
      std::int64_t number = 0;
      if (!ExactInt(v, &number)) return false;
      *out = number;
      return true;
    }
    case AttributeKind::kTruth:
      if (v != Py_True && v != Py_False) return false;
      *out = v == Py_True;
      return true;
    case AttributeKind::kIsNotNone:
    case AttributeKind::kSetAndNotNone:
      *out = v != Py_None;
      return true;
    case AttributeKind::kNumber: {
      double number = 0;
      if (!Number(v, &number)) return false;
      *out = number;
      return true;
    }
    case AttributeKind::kNumberOrNone: {
      double number = 0;
      if (v == Py_None) {
        *out = std::optional<double>();
        return true;
      }
      if (!Number(v, &number)) return false;
      *out = std::optional<double>(number);
      return true;
    }
    case AttributeKind::kNumelOrNone: {
      std::int64_t numel = 0;
      if (v == Py_None) {
        *out = std::optional<std::int64_t>();
        return true;
      }
      if (!NumelOf(v, &numel)) return false;
      *out = std::optional<std::int64_t>(numel);
      return true;
    }
    case AttributeKind::kHyper:
    case AttributeKind::kHyperOrString: {
      HyperParameter hyper;
      if (!Hyper(v, attribute.kind == AttributeKind::kHyperOrString, &hyper)) {
        return false;
      }
      *out = std::move(hyper);
      return true;
    }
    case AttributeKind::kHyperIfPresent: {
      HyperParameter hyper;
      if (!Hyper(v, /*allow_string=*/false, &hyper)) return false;
      *out = std::optional<HyperParameter>(std::move(hyper));
      return true;
    }
    case AttributeKind::kIntTuple: {
      std::vector<std::int64_t> items;
      if (!IntItems(v, &items)) return false;
      *out = std::move(items);
      return true;
    }
    case AttributeKind::kLinear: {
      ModuleParams linear;
      if (!ReadAttributes(v, ModuleFamilyRowFor(ModuleFamily::kLinear),
                          &linear)) {
        return false;
      }
      *out = std::get<formulas::LinearParams>(std::move(linear));
      return true;
    }
  }
  return false;
}

// The row's attributes of `object`, stored in *params.
bool ReadAttributes(PyObject* object, const ModuleFamilyRow& row,
                    ModuleParams* params) {
  for (const ModuleAttribute& attribute : formulas::Listed(row.attributes)) {
    AttributeValue value;
    if (!ReadAttribute(object, attribute, &value)) return false;
    attribute.store(*params, std::move(value));
  }
  return true;
}

// sum(p.numel() for p in module.parameters()), natively for plain tensors.
bool ParameterCount(PyObject* module, std::int64_t* out) {
  static PyObject* const kParameters = PyUnicode_InternFromString("parameters");
  OwnedRef iterable(PyObject_CallMethodObjArgs(module, kParameters, nullptr));
  OwnedRef list(iterable ? PySequence_List(iterable.get()) : nullptr);
  if (!list) {
    PyErr_Clear();
    return false;
  }
  *out = 0;
  for (Py_ssize_t i = 0, n = PyList_Size(list.get()); i < n; ++i) {
    std::int64_t numel = 0;
    if (!NumelOf(PyList_GetItem(list.get(), i), &numel)) return false;
    *out += numel;
  }
  return true;
}

// native_module_description_matches(module, description) -> bool | None
PyObject* NativeModuleDescriptionMatches(PyObject*, PyObject* const* args,
                                         Py_ssize_t nargs) {
  if (!CheckArguments(kExtensionModule, "native_module_description_matches",
                      nargs, 2)) {
    return nullptr;
  }
  static PyObject* const kName = PyUnicode_InternFromString("__name__");
  OwnedRef name(
      PyObject_GetAttr(reinterpret_cast<PyObject*>(Py_TYPE(args[0])), kName));
  std::string type_name;
  if (!name || !Utf8(name.get(), &type_name)) return nullptr;
  formulas::ModuleDescription native;
  if (!DescribeModuleNatively(args[0], type_name, std::nullopt, &native)) {
    Py_RETURN_NONE;
  }
  report::Json json;
  if (!ToJson(args[1], "description", &json)) return nullptr;
  absl::StatusOr<formulas::ModuleDescription> described =
      report::FromJson<formulas::ModuleDescription>(
          report::JsonValue(json, "description"));
  if (!described.ok()) {
    RaiseValueError(described.status());
    return nullptr;
  }
  return PyBool_FromLong(native == *described);
}

// The Python name of an attribute kind, as _describe.py's readers know it.
const char* KindName(AttributeKind kind) {
  switch (kind) {
    case AttributeKind::kInt:
      return "int";
    case AttributeKind::kTruth:
      return "truth";
    case AttributeKind::kIsNotNone:
      return "is_not_none";
    case AttributeKind::kSetAndNotNone:
      return "set_and_not_none";
    case AttributeKind::kNumber:
      return "number";
    case AttributeKind::kNumberOrNone:
      return "number_or_none";
    case AttributeKind::kNumelOrNone:
      return "numel_or_none";
    case AttributeKind::kHyper:
      return "hyper";
    case AttributeKind::kHyperOrString:
      return "hyper_or_string";
    case AttributeKind::kHyperIfPresent:
      return "hyper_if_present";
    case AttributeKind::kIntTuple:
      return "int_tuple";
    case AttributeKind::kLinear:
      return "linear";
  }
  return "";
}

// module_family_rows() -> list[dict]: each family's row as Python's
// describe_module and graph recovery read it, in the rows' order.
PyObject* FamilyRowsForPython(PyObject*, PyObject* const*, Py_ssize_t nargs) {
  if (!CheckArguments(kExtensionModule, "module_family_rows", nargs, 0)) {
    return nullptr;
  }
  report::Json rows = report::Json::array();
  for (const ModuleFamilyRow& row : formulas::ModuleFamilyRows()) {
    if (row.family == ModuleFamily::kUnsupported) continue;
    report::Json attributes = report::Json::array();
    for (const ModuleAttribute& attribute : formulas::Listed(row.attributes)) {
      attributes.push_back(
          {attribute.name, KindName(attribute.kind), attribute.key});
    }
    report::Json script_classes = report::Json::array();
    for (const char* name : formulas::Listed(row.script_classes)) {
      script_classes.push_back(name);
    }
    report::Json operators = report::Json::array();
    for (const char* op : formulas::Listed(row.activation_operators)) {
      operators.push_back(op);
    }
    rows.push_back({
        {"family", std::string(formulas::ModuleFamilyName(row.family))},
        {"torch_class", row.torch_class},
        {"script_classes", std::move(script_classes)},
        {"has_params", row.read_params != nullptr},
        {"attributes", std::move(attributes)},
        {"activation_operators", std::move(operators)},
    });
  }
  return FromJson(rows);
}

PyMethodDef kFunctions[] = {
    {"module_family_rows", AsCFunction(FamilyRowsForPython), METH_FASTCALL,
     "module_family_rows() -> list[dict]: the module family table "
     "(formulas/module_families.h) as Python reads it: family, torch_class, "
     "script_classes, has_params, attributes ([name, kind, JSON key]) and "
     "activation_operators."},
    {"native_module_description_matches",
     AsCFunction(NativeModuleDescriptionMatches), METH_FASTCALL,
     "native_module_description_matches(module, description) -> bool | None: "
     "whether the native description of module equals describe_module's "
     "(None: the native description declines). For tests."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool DescribeModuleNatively(PyObject* module, const std::string& type_name,
                            std::optional<std::int64_t> parameter_count,
                            formulas::ModuleDescription* out) {
  const TorchClasses& classes = Classes();
  if (!classes.found) return false;
  formulas::ModuleDescription description;
  if (!FamilyOf(module, classes, &description.family)) {
    PyErr_Clear();
    return false;
  }
  const ModuleFamilyRow& row = ModuleFamilyRowFor(description.family);
  if (!formulas::DescribedByAttributes(row) ||
      !ReadAttributes(module, row, &description.params)) {
    return false;
  }
  std::int64_t count = 0;
  if (parameter_count) {
    count = *parameter_count;
  } else if (!ParameterCount(module, &count)) {
    return false;
  }
  description.parameter_count = count;
  description.type = type_name;
  if (!formulas::ValidateModuleDescription(description).ok()) return false;
  *out = std::move(description);
  return true;
}

bool AddModuleAttributeFunctions(PyObject* module) {
  return PyModule_AddFunctions(module, kFunctions) == 0;
}

}  // namespace torchscan::dispatch
