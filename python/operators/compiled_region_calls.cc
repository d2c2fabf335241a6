#include "python/operators/compiled_region_calls.h"  // Python.h first

#include <c10/core/DispatchKeySet.h>
#include <c10/util/Exception.h>
#include <c10/util/string_view.h>
#include <torch/library.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "torchscan_dispatch/compiled_graph_tally.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/dispatch_key.h"
#include "torchscan_dispatch/hidden_region.h"
#include "torchscan_dispatch/operator_info.h"
#include "torchscan_dispatch/own_operators.h"
#include "torchscan_dispatch/thread_state.h"

namespace torchscan::dispatch {
namespace {

// The module label of each open compiled region's `self` on this thread
// (nullopt: module tracking is off), innermost last.
thread_local std::vector<std::optional<std::string>> compiled_roots;

// A forward graph's root label, kept for its backward graph (same family),
// which runs later in the autograd engine, outside the compiled region.
class FamilyRoots {
 public:
  static FamilyRoots& Get() {
    static auto* roots = new FamilyRoots();
    return *roots;
  }
  void Remember(std::uint64_t session, const std::string& family,
                const std::string& label) {
    absl::MutexLock lock(&mu_);
    roots_[{session, family}] = label;
  }
  std::optional<std::string> Find(std::uint64_t session,
                                  const std::string& family) {
    absl::MutexLock lock(&mu_);
    auto it = roots_.find({session, family});
    if (it == roots_.end()) return std::nullopt;
    return it->second;
  }

 private:
  absl::Mutex mu_;
  std::map<std::pair<std::uint64_t, std::string>, std::string> roots_
      ABSL_GUARDED_BY(mu_);
};

// NOTE [The tally call's device anchor]
// `device_anchor`, a tensor of the graph (its first input), is never read
// (only its device type, metadata: whether the graph's float32 products may
// run as TF32, compute_precision.h).
// It gives the call a device: Inductor's scheduler flushes the kernels it
// has buffered before an extern call only when that call has a device, and
// it emits the frees of those kernels' inputs at the call either way; a
// device-less call at the start of a graph therefore freed a graph input
// before the fused kernel that reads it ran (UnboundLocalError in the
// generated code of a compiled Conv2d forward and backward). The operator
// is tagged flexible_layout, so the anchor never makes Inductor copy it
// into another layout.
//
// NOTE [The spec is read in place]
// Every run of a compiled graph passes its whole spec, a few hundred
// kilobytes for a transformer's graphs, also while nothing is measured.
// PyTorch's binding makes one copy of a `str` argument; the kernel reads
// that copy as a view, so the only further copy is TallyFor's, the first
// time a spec is seen. A std::string parameter copied it again on every
// call: a 400 KB spec cost an idle call 34 us instead of 16 us, and at
// 1 MB, 1.26 ms (each copy a fresh mapping of fresh pages).
void CompiledGraphFlops(std::int64_t key, c10::string_view spec,
                        c10::SymIntArrayRef symbols,
                        const std::optional<at::Tensor>& device_anchor) {
  ExecutionState& state = ThisThreadState().execution;
  CountingSession* session = CountingSession::Current();
  if (session == nullptr || state.compiling_depth > 0) return;
  const CompiledGraphTally& tally =
      TallyFor(key, absl::string_view(spec.data(), spec.size()));
  std::vector<std::int64_t> values;
  values.reserve(symbols.size());
  for (const c10::SymInt& symbol : symbols) {
    values.push_back(symbol.guard_int(__FILE__, __LINE__));
  }
  std::optional<std::string> root;
  if (!compiled_roots.empty() && compiled_roots.back()) {
    root = compiled_roots.back();
    FamilyRoots::Get().Remember(session->serial(), tally.family(), *root);
  } else if (compiled_roots.empty()) {
    root = FamilyRoots::Get().Find(session->serial(), tally.family());
  }
  ++state.tallies_recorded;
  std::optional<c10::DeviceType> device;
  if (device_anchor && device_anchor->defined()) {
    device = device_anchor->device().type();
  }
  tally.Record(*session, values, root, device);
}

const OwnOperators registration(
    torch::Library::FRAGMENT, {"compiled_graph_flops"},
    [](torch::Library& library) {
      // An explicit kernel: Inductor decomposes operators with a
      // CompositeImplicitAutograd (catch-all) kernel, and this one must stay
      // a call in the generated code.
      library.def(
          "compiled_graph_flops(int key, str spec, SymInt[] symbols, "
          "Tensor? device_anchor=None) -> ()",
          {at::Tag::flexible_layout});
      library.impl("compiled_graph_flops",
                   torch::dispatch(c10::DispatchKey::CompositeExplicitAutograd,
                                   &CompiledGraphFlops));
    },
    __FILE__, __LINE__);

// The functions below run around every compiled call and graph: each is a
// few thread-local reads and writes, with no argument conversion beyond
// ints and bytes, and none raises for a state it finds (a C++ exception is
// caught and the call answers as documented in compiled_region_calls.h).

// The module label of a compiled call's `self`: bytes, or None with module
// tracking off (nullopt). False with an error set for another type.
bool RootLabel(PyObject* label, std::optional<std::string>* out) {
  if (label == Py_None) return true;
  const char* text = PyBytes_AsString(label);
  if (text == nullptr) return false;
  out->emplace(text);
  return true;
}

PyObject* CountingKeyBits(PyObject*, PyObject*) {
  return PyLong_FromUnsignedLongLong(
      c10::DispatchKeySet(kCountingKey).raw_repr());
}

PyObject* CountingHere(PyObject*, PyObject*) {
  return PyBool_FromLong(CountingSession::Current() != nullptr);
}

PyObject* EnterCompiledCall(PyObject*, PyObject* label) {
  std::optional<std::string> root;
  if (!RootLabel(label, &root)) return nullptr;
  long entered = 0;
  try {
    if (CountingSession::Current() != nullptr) {
      compiled_roots.push_back(std::move(root));
      EnterHiddenRegion();
      entered = 1;
    }
  } catch (...) {
    entered = 0;
  }
  return PyLong_FromLong(entered);
}

PyObject* ExitCompiledCall(PyObject*, PyObject* entered) {
  const long value = PyLong_AsLong(entered);
  if (value == -1 && PyErr_Occurred()) return nullptr;
  if (value != 0) {
    ExitHiddenRegion();
    if (!compiled_roots.empty()) compiled_roots.pop_back();
  }
  Py_RETURN_NONE;
}

PyObject* ChangeCompiling(PyObject*, PyObject* delta) {
  const long value = PyLong_AsLong(delta);
  if (value == -1 && PyErr_Occurred()) return nullptr;
  ThisThreadState().execution.compiling_depth += static_cast<int>(value);
  Py_RETURN_NONE;
}

PyObject* EnterCompiledGraph(PyObject*, PyObject*) {
  ExecutionState& state = ThisThreadState().execution;
  ++state.compiled_graph_depth;
  return PyLong_FromUnsignedLongLong(state.tallies_recorded);
}

PyObject* ExitCompiledGraph(PyObject*, PyObject* before) {
  const unsigned long long tallies_before = PyLong_AsUnsignedLongLong(before);
  if (tallies_before == static_cast<unsigned long long>(-1) &&
      PyErr_Occurred()) {
    return nullptr;
  }
  ExecutionState& state = ThisThreadState().execution;
  --state.compiled_graph_depth;
  return PyLong_FromLong(CountingSession::Current() != nullptr &&
                                 state.compiling_depth == 0 &&
                                 state.tallies_recorded == tallies_before
                             ? 1
                             : 0);
}

PyObject* RecordUnseen(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!CheckArguments(kExtensionModule, "record_unseen", nargs, 2))
    return nullptr;
  const char* what = PyBytes_AsString(args[0]);
  const char* reason = what == nullptr ? nullptr : PyBytes_AsString(args[1]);
  if (reason == nullptr) return nullptr;
  long result = -1;
  try {
    if (CountingSession* session = CountingSession::Current()) {
      session->RecordCall(SyntheticOperatorInfo(what, nullptr, reason));
      result = 0;
    }
  } catch (...) {
    result = -1;
  }
  return PyLong_FromLong(result);
}

PyMethodDef kFunctions[] = {
    {"counting_key_bits", CountingKeyBits, METH_NOARGS,
     "counting_key_bits() -> int: the counting key's DispatchKeySet bits."},
    {"counting_here", CountingHere, METH_NOARGS,
     "counting_here() -> bool: a measurement's session is current on this "
     "thread."},
    {"enter_compiled_call", EnterCompiledCall, METH_O,
     "enter_compiled_call(root_label) -> int: a compiled call begins."},
    {"exit_compiled_call", ExitCompiledCall, METH_O,
     "exit_compiled_call(entered): the compiled call ended."},
    {"change_compiling", ChangeCompiling, METH_O,
     "change_compiling(delta): PyTorch starts (1) or ends (-1) compiling."},
    {"enter_compiled_graph", EnterCompiledGraph, METH_NOARGS,
     "enter_compiled_graph() -> int: a compiled graph starts running."},
    {"exit_compiled_graph", ExitCompiledGraph, METH_O,
     "exit_compiled_graph(before) -> int: 1 when it ran without a tally."},
    {"record_unseen", AsCFunction(RecordUnseen), METH_FASTCALL,
     "record_unseen(what, reason) -> int: records work no call shows."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool AddCompiledRegionFunctions(PyObject* module) {
  return PyModule_AddFunctions(module, kFunctions) == 0;
}

}  // namespace torchscan::dispatch
