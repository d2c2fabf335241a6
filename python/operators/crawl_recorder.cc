// crawl_module's layer hooks as native code: the CrawlRecorder type of the
// library's CPython extension module (hooks_module.cc).
//
// Python's crawl_module (python/torchscan_dispatch/crawler.py) registers a
// forward pre-hook and forward hook on every module; their bodies are this
// recorder's methods. It builds the crawl's typed record (crawl/crawl_record.h)
// from the moment a call is seen: each layer record with its input and
// output metadata and its parameter and buffer tallies, each metric-leaf
// call for the module formulas, and the layer-call scopes of the
// measurement counting the forward. The finished report is assembled by the
// same code as every C++ front end's and converted to Python data once, at
// the end (the dicts and lists json.loads would give).
//
// Python keeps what only Python can do, once per module rather than once per
// call: the module tree and forward signatures (at registration), a
// module's parameters and buffers (its first call, after lazy modules have
// initialised), the hyper-parameters of the modules the native description
// declines (module_attributes.h: describe_module, at the first metric-leaf
// call). Values are described by the one rule set of
// value_descriptions.h.

#include "python/operators/crawl_recorder.h"  // Python.h first

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "crawl/crawl_record.h"
#include "formulas/module_call.h"
#include "formulas/module_description.h"
#include "formulas/module_json.h"
#include "python/operators/model_tensors.h"
#include "python/operators/module_attributes.h"
#include "python/operators/open_measurements.h"
#include "python/operators/python_objects.h"
#include "python/operators/report_objects.h"
#include "python/operators/value_descriptions.h"
#include "report/aggregate.h"
#include "report/analysis_report.h"
#include "report/field_table.h"
#include "report/json_io.h"
#include "report/json_reader.h"
#include "report/layer_report.h"
#include "report/metric_result.h"
#include "report/strict.h"
#include "report/value_metadata.h"
#include "torchscan/crawl_support.h"
#include "torchscan/layer_call_flops.h"
#include "torchscan_dispatch/counting_session.h"

namespace torchscan::dispatch {
namespace {

using report::ValueMetadata;

// A forward signature's shape, for TorchScan 0.2's argument ordering.
constexpr int kNoSignature = -2;  // inputs are args then kwargs values
constexpr int kBindsByName = -1;  // Python binds the call to the signature

// One registered module and what its calls have recorded so far.
struct RegisteredModule {
  std::string path;
  std::string label;  // FlopCounterMode's module name
  // type(module).__name__ for `type`: a lazy module becomes its final
  // class (LazyLinear -> Linear) at its first call.
  PyTypeObject* type = nullptr;
  std::string type_name;
  bool metric_leaf = false;
  bool recurse = false;           // its tallies include its children's tensors
  PyObject* signature = nullptr;  // owned; None when there is none
  int arity = kNoSignature;
  std::int64_t calls = 0;
  std::vector<std::size_t> open_layers;  // calls begun and not ended
  bool claimed = false;                  // its parameters and buffers were read
  bool has_parameters = false;
  bool has_buffers = false;
  // The numel of every tensor module.parameters(recurse) gave when claimed.
  std::int64_t parameter_count = 0;
  std::optional<formulas::ModuleDescription> description;
};

class CrawlRecorder {
 public:
  // `handle` < 0: a structure-mode crawl, with no measurement.
  CrawlRecorder(std::int64_t handle, PyObject* describe_module,
                PyObject* ordered_inputs)
      : handle_(handle),
        thread_(PyThread_get_thread_ident()),
        describe_module_(Py_NewRef(describe_module)),
        ordered_inputs_(Py_NewRef(ordered_inputs)) {}

  CrawlRecorder(const CrawlRecorder&) = delete;
  CrawlRecorder& operator=(const CrawlRecorder&) = delete;
  ~CrawlRecorder() {
    Clear();
    for (auto& [module, registered] : modules_) {
      Py_XDECREF(registered.signature);
      Py_DECREF(module);
    }
  }

  bool full() const { return handle_ >= 0; }

  bool Register(PyObject* module, RegisteredModule registered) {
    auto [it, inserted] = modules_.try_emplace(module, std::move(registered));
    if (!inserted) {
      PyErr_SetString(PyExc_ValueError, "module registered twice");
      return false;
    }
    Py_INCREF(module);
    Py_XINCREF(it->second.signature);
    return true;
  }

  // The forward pre-hook: a layer call begins.
  bool Enter(PyObject* module, PyObject* args, PyObject* kwargs) {
    RegisteredModule* registered = Find(module);
    if (registered == nullptr) return true;
    report::ParameterAttribution parameters;
    report::BufferAttribution buffers;
    if (!Claim(module, registered, &parameters, &buffers)) return false;
    report::CallMetadata input;
    if (!TypeName(module, registered) ||
        !describer_.DescribeCall(args, kwargs, &input)) {
      return false;
    }
    layers_.push_back(NewLayerRecord(registered->path, registered->calls++,
                                     registered->type_name, std::move(input),
                                     parameters, buffers));
    layers_.back().metrics.Set(
        "calls",
        report::MetricResult::Complete(
            report::Count(1),
            report::MetricKind{"calls", std::string(report::kModuleCallScope),
                               std::string(report::kModuleHookMethod)}));
    const std::size_t index = layers_.size() - 1;
    registered->open_layers.push_back(index);
    if (!full()) return true;
    return RaisingPythonErrors([&] {
      Session().EnterLayer(std::to_string(index), registered->label);
      return true;
    });
  }

  // The forward hook: the layer call ends with `output`.
  bool Leave(PyObject* module, PyObject* args, PyObject* kwargs,
             PyObject* output) {
    RegisteredModule* registered = Find(module);
    if (registered == nullptr || registered->open_layers.empty()) return true;
    const std::size_t index = registered->open_layers.back();
    registered->open_layers.pop_back();
    if (full() && !RaisingPythonErrors([&] {
          Session().ExitLayer(std::to_string(index), registered->label);
          return true;
        })) {
      return false;
    }
    ValueMetadata described;
    if (!describer_.Describe(output, &described)) return false;
    if (registered->metric_leaf && full()) {
      formulas::CapturedModuleCall captured;
      captured.path = registered->path;
      if (!Description(module, registered, &captured.module) ||
          !LeafInputs(registered, args, kwargs, &captured.call.inputs)) {
        return false;
      }
      captured.call.output = formulas::CallValueOf(described);
      leaf_calls_.push_back(
          crawl::CapturedLeafCall{index, std::move(captured)});
    }
    layers_[index].output = std::move(described);
    return true;
  }

  // A module without a layer record begins (`entering`) or ends a call:
  // attributed for by_module only.
  bool Scope(const std::string& label, bool entering) {
    if (!full() || PyThread_get_thread_ident() != thread_) return true;
    return RaisingPythonErrors([&] {
      if (entering) {
        Session().EnterLayer("", label);
      } else {
        Session().ExitLayer("", label);
      }
      return true;
    });
  }

  // The finished report as Python data (what json.loads gives for its
  // JSON, written from its field tables: report_objects.h), and TorchScan's
  // strict-mode message when it is incomplete (else None): a (dict, str | None)
  // tuple.
  PyObject* Report(const report::ModelTensorTotals& model, PyObject* context,
                   PyObject* inputs) {
    crawl::CrawlRecord record;
    report::Json context_json, inputs_json;
    if (!ToJson(context, "context", &context_json) ||
        !ToJson(inputs, "inputs", &inputs_json)) {
      return nullptr;
    }
    absl::StatusOr<report::ReportContext> parsed_context =
        report::ReportContextFromJson(context_json, "context");
    if (!parsed_context.ok()) {
      RaiseValueError(parsed_context.status());
      return nullptr;
    }
    absl::StatusOr<report::InputsMetadata> parsed_inputs =
        report::InputsMetadataFromJson(inputs_json, "inputs");
    if (!parsed_inputs.ok()) {
      RaiseValueError(parsed_inputs.status());
      return nullptr;
    }
    record.parts.context = *std::move(parsed_context);
    record.parts.inputs = *std::move(parsed_inputs);
    record.parts.model = model;
    record.parts.layers = std::move(layers_);
    record.leaf_calls = std::move(leaf_calls_);
    layers_.clear();
    leaf_calls_.clear();
    std::optional<absl::StatusOr<report::AnalysisReport>> built;
    if (!RaisingPythonErrors([&] {
          if (full()) {
            CountingSession& session = Session();
            absl::StatusOr<report::FlopReport> flops = session.BuildReport();
            if (!flops.ok()) return RaiseStatus(flops.status());
            auto layer_call_flops = session.BuildLayerCallFlops();
            if (!layer_call_flops.ok()) {
              return RaiseStatus(layer_call_flops.status());
            }
            record.operator_flops = *std::move(flops);
            record.layer_call_flops =
                ToLayerOperatorFlops(*std::move(layer_call_flops));
          }
          built = crawl::BuildAnalysisReport(std::move(record));
          return true;
        })) {
      return nullptr;
    }
    if (!built->ok()) {
      RaiseValueError(built->status());
      return nullptr;
    }
    const report::AnalysisReport& report = **built;
    OwnedRef document(ToPython(report));
    if (!document) return nullptr;
    OwnedRef incomplete(
        report::IsIncomplete(report)
            ? PyUnicode_FromString(
                  report::IncompleteAnalysisMessage(report).c_str())
            : Py_NewRef(Py_None));
    if (!incomplete) return nullptr;
    return PyTuple_Pack(2, document.get(), incomplete.get());
  }

  int Traverse(visitproc visit, void* arg) {
    Py_VISIT(describe_module_);
    Py_VISIT(ordered_inputs_);
    for (auto& [module, registered] : modules_) {
      Py_VISIT(module);
      Py_VISIT(registered.signature);
    }
    return 0;
  }

  void Clear() {
    Py_CLEAR(describe_module_);
    Py_CLEAR(ordered_inputs_);
  }

 private:
  // A ValueError naming the malformed field; returns false.
  static bool RaiseValueError(const absl::Status& status) {
    PyErr_SetString(PyExc_ValueError, std::string(status.message()).c_str());
    return false;
  }

  static bool RaiseCleared() {
    PyErr_SetString(PyExc_RuntimeError, "the crawl recorder was cleared");
    return false;
  }

  CountingSession& Session() {
    return OpenMeasurements::Get().Session(handle_);
  }

  // The registered module, or nullptr for a call of another thread (its
  // operators are not counted either) or of a module the crawl did not
  // register.
  RegisteredModule* Find(PyObject* module) {
    if (PyThread_get_thread_ident() != thread_) return nullptr;
    auto it = modules_.find(module);
    return it == modules_.end() ? nullptr : &it->second;
  }

  static bool TypeName(PyObject* module, RegisteredModule* registered) {
    static PyObject* const kName = PyUnicode_InternFromString("__name__");
    if (Py_TYPE(module) == registered->type) return true;
    OwnedRef name(
        PyObject_GetAttr(reinterpret_cast<PyObject*>(Py_TYPE(module)), kName));
    if (!name || !Utf8(name.get(), &registered->type_name)) return false;
    registered->type = Py_TYPE(module);
    return true;
  }

  // A layer call's parameter and buffer tallies, counting only the tensors
  // no earlier layer call claimed, and claiming them. A module's tensors are
  // read once per crawl: from its second call on, all of them are claimed.
  bool Claim(PyObject* module, RegisteredModule* registered,
             report::ParameterAttribution* parameters,
             report::BufferAttribution* buffers) {
    if (registered->claimed) {
      parameters->shared = registered->has_parameters;
      buffers->shared = registered->has_buffers;
      return true;
    }
    static PyObject* const kParameters =
        PyUnicode_InternFromString("parameters");
    static PyObject* const kBuffers = PyUnicode_InternFromString("buffers");
    static PyObject* const kOwnParameters =
        PyUnicode_InternFromString("_parameters");
    static PyObject* const kOwnBuffers = PyUnicode_InternFromString("_buffers");
    bool from_dicts = false;
    if (!registered->recurse && !ReadsOwnDicts(module, &from_dicts)) {
      return false;
    }
    OwnedRef parameter_list =
        from_dicts ? OwnTensors(module, kOwnParameters)
                   : ListOf(module, kParameters, registered->recurse);
    if (!parameter_list) return false;
    for (Py_ssize_t i = 0, n = PyList_Size(parameter_list.get()); i < n; ++i) {
      PyObject* parameter = PyList_GetItem(parameter_list.get(), i);
      registered->has_parameters = true;
      TensorSize size;
      if (!TensorSizeOf(parameter, &size)) return false;
      registered->parameter_count += size.numel;
      if (!seen_tensors_.insert(parameter).second) {
        parameters->shared = true;
        continue;
      }
      (size.requires_grad ? parameters->trainable : parameters->frozen) +=
          size.numel;
      parameters->bytes += size.numel * size.element_size;
    }
    OwnedRef buffer_list = from_dicts
                               ? OwnTensors(module, kOwnBuffers)
                               : ListOf(module, kBuffers, registered->recurse);
    if (!buffer_list) return false;
    for (Py_ssize_t i = 0, n = PyList_Size(buffer_list.get()); i < n; ++i) {
      PyObject* buffer = PyList_GetItem(buffer_list.get(), i);
      registered->has_buffers = true;
      if (!seen_tensors_.insert(buffer).second) {
        buffers->shared = true;
        continue;
      }
      TensorSize size;
      if (!TensorSizeOf(buffer, &size)) return false;
      buffers->elements += size.numel;
      buffers->bytes += size.numel * size.element_size;
    }
    // Keeps every claimed tensor's id valid for the crawl, as Python's id()
    // set relied on the module tree holding them.
    claimed_lists_.push_back(std::move(parameter_list));
    claimed_lists_.push_back(std::move(buffer_list));
    registered->claimed = true;
    return true;
  }

  // module.<method>(recurse) as a list.
  static OwnedRef ListOf(PyObject* module, PyObject* method, bool recurse) {
    OwnedRef iterable(PyObject_CallMethodObjArgs(
        module, method, recurse ? Py_True : Py_False, nullptr));
    if (!iterable) return OwnedRef();
    return OwnedRef(PySequence_List(iterable.get()));
  }

  // NOTE [A module's own tensors from its dicts] in model_tensors.h; the
  // answer is kept per class for the crawl.
  bool ReadsOwnDicts(PyObject* module, bool* out) {
    PyTypeObject* type = Py_TYPE(module);
    if (auto it = reads_own_dicts_.find(type); it != reads_own_dicts_.end()) {
      *out = it->second;
      return true;
    }
    if (!InheritsOwnTensorMethods(type, out)) return false;
    reads_own_dicts_.emplace(type, *out);
    return true;
  }

  // The module's hyper-parameters, described once per crawl: natively
  // where the family table covers the module, else by Python.
  bool Description(PyObject* module, RegisteredModule* registered,
                   formulas::ModuleDescription* out) {
    if (!registered->description) {
      formulas::ModuleDescription native;
      if (DescribeModuleNatively(module, registered->type_name,
                                 ClaimedParameterCount(module, registered),
                                 &native)) {
        registered->description = std::move(native);
      }
    }
    if (!registered->description) {
      if (describe_module_ == nullptr) return RaiseCleared();
      OwnedRef described(
          PyObject_CallFunctionObjArgs(describe_module_, module, nullptr));
      report::Json json;
      if (!described || !ToJson(described.get(), "module", &json)) return false;
      absl::StatusOr<formulas::ModuleDescription> parsed =
          report::FromJson<formulas::ModuleDescription>(
              report::JsonValue(json, "module"));
      if (!parsed.ok()) return RaiseValueError(parsed.status());
      registered->description = *std::move(parsed);
    }
    *out = *registered->description;
    return true;
  }

  // sum(p.numel() for p in module.parameters()) from the claimed list, when
  // that list was the recursive one: claimed with `recurse`, or of a module
  // without submodules (every metric leaf but MultiheadAttention and a
  // Transformer root, which claim recursively); nullopt otherwise.
  static std::optional<std::int64_t> ClaimedParameterCount(
      PyObject* module, const RegisteredModule* registered) {
    if (!registered->claimed) return std::nullopt;
    if (registered->recurse) return registered->parameter_count;
    static PyObject* const kModules = PyUnicode_InternFromString("_modules");
    OwnedRef children(PyObject_GetAttr(module, kModules));
    if (!children) {
      PyErr_Clear();
      return std::nullopt;
    }
    const bool leaf =
        PyDict_Check(children.get()) && PyDict_Size(children.get()) == 0;
    return leaf ? std::optional<std::int64_t>(registered->parameter_count)
                : std::nullopt;
  }

  // The call's arguments in forward-signature order (TorchScan 0.2's
  // ordering for the formulas), as the formulas see them.
  bool LeafInputs(RegisteredModule* registered, PyObject* args,
                  PyObject* kwargs, std::vector<formulas::CallValue>* inputs) {
    OwnedRef ordered;
    if (registered->arity == kNoSignature) {
      OwnedRef values(PyDict_Values(kwargs));
      OwnedRef positional(PySequence_List(args));
      if (!values || !positional ||
          PyList_SetSlice(positional.get(), PY_SSIZE_T_MAX, PY_SSIZE_T_MAX,
                          values.get()) < 0) {
        return false;
      }
      ordered.reset(PySequence_Tuple(positional.get()));
    } else if (PyDict_Size(kwargs) == 0 &&
               PyTuple_Size(args) == registered->arity) {
      ordered.reset(Py_NewRef(args));
    } else {
      if (ordered_inputs_ == nullptr) return RaiseCleared();
      OwnedRef result(PyObject_CallFunctionObjArgs(
          ordered_inputs_, registered->signature, args, kwargs, nullptr));
      if (!result) return false;
      ordered.reset(PySequence_Tuple(result.get()));
    }
    if (!ordered) return false;
    for (Py_ssize_t i = 0, n = PyTuple_Size(ordered.get()); i < n; ++i) {
      ValueMetadata described;
      if (!describer_.Describe(PyTuple_GetItem(ordered.get(), i), &described)) {
        return false;
      }
      inputs->push_back(formulas::CallValueOf(described));
    }
    return true;
  }

  const std::int64_t handle_;
  const unsigned long thread_;
  PyObject* describe_module_;
  PyObject* ordered_inputs_;  // (signature, args, kwargs) -> tuple
  // Keys hold a reference (released by the destructor).
  absl::flat_hash_map<PyObject*, RegisteredModule> modules_;
  absl::flat_hash_set<PyObject*> seen_tensors_;
  // Whether a module class's own tensors are read from its dicts (NOTE [A
  // module's own tensors from its dicts]); its modules keep the class alive.
  absl::flat_hash_map<PyTypeObject*, bool> reads_own_dicts_;
  std::vector<OwnedRef> claimed_lists_;
  std::vector<report::LayerReport> layers_;
  std::vector<crawl::CapturedLeafCall> leaf_calls_;
  ValueDescriber describer_;
};

// ---------------------------------------------------------------------------
// The Python type.

using RecorderType = NativeType<CrawlRecorder>;

CrawlRecorder* RecorderOf(PyObject* self) { return RecorderType::Of(self); }

bool CheckArguments(const char* method, Py_ssize_t nargs, Py_ssize_t expected) {
  return dispatch::CheckArguments("CrawlRecorder", method, nargs, expected);
}

PyObject* RecorderNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  long long handle = -1;
  PyObject *describe_module, *ordered_inputs;
  if (!PyArg_ParseTuple(args, "LOO:CrawlRecorder", &handle, &describe_module,
                        &ordered_inputs)) {
    return nullptr;
  }
  return RecorderType::New(type, std::make_unique<CrawlRecorder>(
                                     handle, describe_module, ordered_inputs));
}

// register(module, path, label, metric_leaf, recurse, signature, arity)
PyObject* RecorderRegister(PyObject* self, PyObject* args) {
  PyObject *module, *path, *label, *metric_leaf, *recurse, *signature;
  int arity = kNoSignature;
  if (!PyArg_ParseTuple(args, "OUUOOOi:register", &module, &path, &label,
                        &metric_leaf, &recurse, &signature, &arity)) {
    return nullptr;
  }
  RegisteredModule registered;
  registered.signature = signature;
  registered.arity = arity;
  if (!Utf8(path, &registered.path) || !Utf8(label, &registered.label) ||
      !IsTrue(metric_leaf, &registered.metric_leaf) ||
      !IsTrue(recurse, &registered.recurse)) {
    return nullptr;
  }
  return NoneOrRaise(RecorderOf(self)->Register(module, std::move(registered)));
}

// pre_hook(module, args, kwargs): a forward pre-hook registered with_kwargs.
PyObject* RecorderPreHook(PyObject* self, PyObject* const* args,
                          Py_ssize_t nargs) {
  if (!CheckArguments("pre_hook", nargs, 3)) return nullptr;
  return NoneOrRaise(RecorderOf(self)->Enter(args[0], args[1], args[2]));
}

// post_hook(module, args, kwargs, output): a forward hook registered
// with_kwargs.
PyObject* RecorderPostHook(PyObject* self, PyObject* const* args,
                           Py_ssize_t nargs) {
  if (!CheckArguments("post_hook", nargs, 4)) return nullptr;
  return NoneOrRaise(
      RecorderOf(self)->Leave(args[0], args[1], args[2], args[3]));
}

// scope(label, entering)
PyObject* RecorderScope(PyObject* self, PyObject* const* args,
                        Py_ssize_t nargs) {
  if (!CheckArguments("scope", nargs, 2)) return nullptr;
  std::string label;
  bool entering = false;
  if (!Utf8(args[0], &label) || !IsTrue(args[1], &entering)) return nullptr;
  return NoneOrRaise(RecorderOf(self)->Scope(label, entering));
}

// report(model_totals, context, inputs) -> (report, incomplete or None);
// model_totals: (trainable, frozen, parameter bytes, buffer elements,
// buffer bytes).
PyObject* RecorderReport(PyObject* self, PyObject* args) {
  long long trainable, frozen, parameter_bytes, buffer_elements, buffer_bytes;
  PyObject *context, *inputs;
  if (!PyArg_ParseTuple(args, "(LLLLL)OO:report", &trainable, &frozen,
                        &parameter_bytes, &buffer_elements, &buffer_bytes,
                        &context, &inputs)) {
    return nullptr;
  }
  const report::ModelTensorTotals model{
      .trainable_parameters = trainable,
      .frozen_parameters = frozen,
      .parameter_bytes = parameter_bytes,
      .buffer_elements = buffer_elements,
      .buffer_bytes = buffer_bytes,
  };
  return RecorderOf(self)->Report(model, context, inputs);
}

PyMethodDef kRecorderMethods[] = {
    {"register", RecorderRegister, METH_VARARGS,
     "register(module, path, label, metric_leaf, recurse, signature, "
     "arity): a module whose calls are layer records."},
    {"pre_hook", AsCFunction(RecorderPreHook), METH_FASTCALL,
     "pre_hook(module, args, kwargs): a layer call begins."},
    {"post_hook", AsCFunction(RecorderPostHook), METH_FASTCALL,
     "post_hook(module, args, kwargs, output): a layer call ends."},
    {"scope", AsCFunction(RecorderScope), METH_FASTCALL,
     "scope(label, entering): a module without a layer record begins or "
     "ends a call."},
    {"report", RecorderReport, METH_VARARGS,
     "report(model_totals, context, inputs): the report and the strict-mode "
     "message (None when complete)."},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot kRecorderSlots[] = {
    {Py_tp_new, reinterpret_cast<void*>(RecorderNew)},
    {Py_tp_dealloc, reinterpret_cast<void*>(RecorderType::Dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(RecorderType::Traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(RecorderType::Clear)},
    {Py_tp_methods, kRecorderMethods},
    {Py_tp_doc,
     const_cast<char*>("CrawlRecorder(handle, describe_module, "
                       "ordered_inputs): one crawl's layer "
                       "records; handle < 0 for a structure-mode crawl.")},
    {0, nullptr},
};

PyType_Spec kRecorderSpec = {
    "torchscan_dispatch._hooks.CrawlRecorder", RecorderType::kBasicSize, 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,   kRecorderSlots,
};

}  // namespace

bool AddCrawlRecorder(PyObject* module) {
  return AddType(module, "CrawlRecorder", &kRecorderSpec);
}

}  // namespace torchscan::dispatch
