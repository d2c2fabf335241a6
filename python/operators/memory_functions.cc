#include "python/operators/memory_functions.h"  // Python.h first

#include <c10/core/Device.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "report/json_io.h"
#include "torchscan_dispatch/peak_memory.h"

namespace torchscan::dispatch {
namespace {

// The Python exception TorchScan 0.2 raises for the same problem:
// NotImplementedError for an unsupported backend, RuntimeError otherwise.
bool RaiseMemoryError(const absl::Status& status) {
  PyErr_SetString(status.code() == absl::StatusCode::kUnimplemented
                      ? PyExc_NotImplementedError
                      : PyExc_RuntimeError,
                  std::string(status.message()).c_str());
  return false;
}

struct OpenMemoryMeasurement {
  std::thread::id thread;
  std::unique_ptr<PeakMemoryMeasurement> measurement;
};

// The measurements begun and not yet ended, by handle.
class OpenMemoryMeasurements {
 public:
  static OpenMemoryMeasurements& Get() {
    static OpenMemoryMeasurements* open = new OpenMemoryMeasurements();
    return *open;
  }

  // c10::Device throws c10::Error for a string it cannot read.
  absl::StatusOr<std::int64_t> Begin(const std::string& device) {
    absl::StatusOr<std::unique_ptr<PeakMemoryMeasurement>> measurement =
        PeakMemoryMeasurement::Begin(c10::Device(device));
    if (!measurement.ok()) return measurement.status();
    absl::MutexLock lock(&mu_);
    const std::int64_t handle = next_handle_++;
    open_.emplace(handle, OpenMemoryMeasurement{std::this_thread::get_id(),
                                                *std::move(measurement)});
    return handle;
  }

  absl::StatusOr<PeakMemory> End(std::int64_t handle) {
    OpenMemoryMeasurement open;
    {
      absl::MutexLock lock(&mu_);
      auto it = open_.find(handle);
      if (it == open_.end()) {
        return absl::NotFoundError(
            absl::StrCat("torchscan: no open memory measurement ", handle));
      }
      if (it->second.thread != std::this_thread::get_id()) {
        return absl::FailedPreconditionError(
            absl::StrCat("torchscan: memory measurement ", handle,
                         " must be ended on the thread that began it"));
      }
      open = std::move(it->second);
      open_.erase(it);
    }
    return open.measurement->End();
  }

 private:
  absl::Mutex mu_;
  std::int64_t next_handle_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::int64_t, OpenMemoryMeasurement> open_ ABSL_GUARDED_BY(mu_);
};

PyObject* BeginPeakMemory(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!CheckArguments(kExtensionModule, "begin_peak_memory", nargs, 1))
    return nullptr;
  if (!PyUnicode_Check(args[0])) {
    PyErr_SetString(PyExc_TypeError, "begin_peak_memory: device must be a str");
    return nullptr;
  }
  std::string device;
  if (!Utf8(args[0], &device)) return nullptr;
  std::int64_t handle = 0;
  const bool ok =
      WithoutGil([&] { return OpenMemoryMeasurements::Get().Begin(device); },
                 &handle, RaiseMemoryError);
  return ok ? PyLong_FromLongLong(handle) : nullptr;
}

PyObject* EndPeakMemory(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!CheckArguments(kExtensionModule, "end_peak_memory", nargs, 1))
    return nullptr;
  std::int64_t handle = 0;
  if (!Handle(args[0], &handle)) return nullptr;
  PeakMemory memory;
  const bool ok =
      WithoutGil([&] { return OpenMemoryMeasurements::Get().End(handle); },
                 &memory, RaiseMemoryError);
  return ok ? FromJson(PeakMemoryToJson(memory)) : nullptr;
}

PyMethodDef kFunctions[] = {
    {"begin_peak_memory", AsCFunction(BeginPeakMemory), METH_FASTCALL,
     "begin_peak_memory(device) -> int: begins a peak memory measurement."},
    {"end_peak_memory", AsCFunction(EndPeakMemory), METH_FASTCALL,
     "end_peak_memory(handle) -> dict: ends it; PyTorch's memory during it."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool AddMemoryFunctions(PyObject* module) {
  return PyModule_AddFunctions(module, kFunctions) == 0;
}

}  // namespace torchscan::dispatch
