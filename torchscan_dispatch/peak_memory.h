// Peak PyTorch memory of one workload call, per backend.
//
// CPU: PyTorch's default CPU allocator reports every allocation and free to
// the memory reporter found in the thread's PROFILER_STATE debug-info slot
// (the mechanism the profiler uses). A measurement puts its own reporter
// there, so no profiler has to run: it sees the tensors the workload's thread
// allocates (and threads PyTorch hands that thread's state to: the autograd
// engine, at::launch), not other threads'. Bytes are counted from the start
// of the call: baseline 0, peak = the most bytes alive at once.
//
// Accelerators (CUDA, and any backend with a caching DeviceAllocator): the
// allocator's statistics, as torch.cuda.max_memory_reserved reports them:
// synchronize, baseline = reserved bytes, reset peaks, workload, synchronize,
// peak = peak reserved bytes (and peak allocated bytes). These statistics are
// device-wide.

#ifndef TORCHSCAN_DISPATCH_PEAK_MEMORY_H_
#define TORCHSCAN_DISPATCH_PEAK_MEMORY_H_

#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "report/json_io.h"

namespace torchscan {

struct PeakMemory {
  // Normalized device: "cpu", "cuda:0", ...
  std::string device;
  // "pytorch_tensor_bytes" (CPU) or "pytorch_reserved_bytes" (accelerators).
  std::string metric;
  std::int64_t baseline_bytes = 0;
  std::int64_t peak_bytes = 0;
  std::int64_t delta_bytes = 0;
  // Accelerators only: the allocator's peak allocated bytes.
  std::optional<std::int64_t> allocated_peak_bytes;
};

// TorchScan 0.2's key order: device, metric, baseline, peak, delta(,
// allocated).
report::Json PeakMemoryToJson(const PeakMemory& memory);

// An open measurement on the calling thread. Begin() does everything that can
// fail before the workload runs, so a refused measurement never runs it.
class PeakMemoryMeasurement {
 public:
  static absl::StatusOr<std::unique_ptr<PeakMemoryMeasurement>> Begin(
      const c10::Device& device);
  virtual ~PeakMemoryMeasurement() = default;
  // Ends the measurement (idempotent) and returns its result.
  virtual absl::StatusOr<PeakMemory> End() = 0;
};

// Calls `workload` exactly once and measures it. Errors about the device come
// back before the workload runs; exceptions thrown by the workload propagate
// unchanged, with the measurement ended.
absl::StatusOr<PeakMemory> MeasurePeakMemory(
    const std::function<void()>& workload, const c10::Device& device);

}  // namespace torchscan

#endif  // TORCHSCAN_DISPATCH_PEAK_MEMORY_H_
