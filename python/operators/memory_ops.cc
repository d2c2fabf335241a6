// Operators through which Python's measure_peak_memory drives a measurement:
// begin (every device check, before the workload runs), then end.

#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "report/json_io.h"
#include "torchscan_dispatch/own_operators.h"
#include "torchscan_dispatch/peak_memory.h"

namespace torchscan::dispatch {
namespace {

// Raises the Python exception TorchScan 0.2 raises for the same problem:
// NotImplementedError for unsupported backends, RuntimeError otherwise.
void ThrowFor(const absl::Status& status) {
  const std::string message(status.message());
  TORCH_CHECK_NOT_IMPLEMENTED(status.code() != absl::StatusCode::kUnimplemented,
                              message);
  TORCH_CHECK(false, message);
}

struct OpenMemoryMeasurement {
  std::thread::id thread;
  std::unique_ptr<PeakMemoryMeasurement> measurement;
};

class OpenMemoryMeasurements {
 public:
  static OpenMemoryMeasurements& Get() {
    static OpenMemoryMeasurements* open = new OpenMemoryMeasurements();
    return *open;
  }

  std::int64_t Begin(const std::string& device) {
    absl::StatusOr<std::unique_ptr<PeakMemoryMeasurement>> measurement =
        PeakMemoryMeasurement::Begin(c10::Device(device));
    if (!measurement.ok()) ThrowFor(measurement.status());
    absl::MutexLock lock(&mu_);
    const std::int64_t handle = next_handle_++;
    open_.emplace(handle, OpenMemoryMeasurement{std::this_thread::get_id(),
                                                *std::move(measurement)});
    return handle;
  }

  std::string End(std::int64_t handle) {
    OpenMemoryMeasurement open;
    {
      absl::MutexLock lock(&mu_);
      auto it = open_.find(handle);
      TORCH_CHECK(it != open_.end(), "torchscan: no open memory measurement ",
                  handle);
      TORCH_CHECK(it->second.thread == std::this_thread::get_id(),
                  "torchscan: memory measurement ", handle,
                  " must be ended on the thread that began it");
      open = std::move(it->second);
      open_.erase(it);
    }
    absl::StatusOr<PeakMemory> memory = open.measurement->End();
    if (!memory.ok()) ThrowFor(memory.status());
    return report::DumpJson(PeakMemoryToJson(*memory));
  }

 private:
  absl::Mutex mu_;
  std::int64_t next_handle_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::int64_t, OpenMemoryMeasurement> open_ ABSL_GUARDED_BY(mu_);
};

std::int64_t BeginPeakMemory(std::string device) {
  return OpenMemoryMeasurements::Get().Begin(device);
}

std::string EndPeakMemory(std::int64_t handle) {
  return OpenMemoryMeasurements::Get().End(handle);
}

const OwnOperators registration(
    torch::Library::FRAGMENT, {"_begin_peak_memory", "_end_peak_memory"},
    [](torch::Library& library) {
      library.def("_begin_peak_memory(str device) -> int", &BeginPeakMemory);
      library.def("_end_peak_memory(int handle) -> str", &EndPeakMemory);
    },
    __FILE__, __LINE__);

}  // namespace
}  // namespace torchscan::dispatch
