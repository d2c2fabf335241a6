#include "torchscan_dispatch/peak_memory.h"

#include <c10/core/Allocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

#ifndef TORCHSCAN_TORCH_FULL_VERSION
#error \
    "TORCHSCAN_TORCH_FULL_VERSION must name the torch the plugin is built against"
#endif

namespace torchscan {
namespace {

constexpr char kTorchVersion[] = TORCHSCAN_TORCH_FULL_VERSION;

// Receives the CPU allocator's reports for the measuring thread.
class CpuMemoryObserver
    : public c10::MemoryReportingInfoBase,
      public std::enable_shared_from_this<CpuMemoryObserver> {
 public:
  explicit CpuMemoryObserver(std::shared_ptr<CpuMemoryObserver> enclosing)
      : enclosing_(std::move(enclosing)) {}

  bool memoryProfilingEnabled() const override { return true; }

  void reportMemoryUsage(void* ptr, std::int64_t alloc_size,
                         std::size_t total_allocated,
                         std::size_t total_reserved,
                         c10::Device device) override {
    // An enclosing measurement sees the same allocations.
    if (enclosing_) {
      enclosing_->reportMemoryUsage(ptr, alloc_size, total_allocated,
                                    total_reserved, device);
    }
    if (!device.is_cpu()) return;
    const std::int64_t live = live_.fetch_add(alloc_size) + alloc_size;
    std::int64_t peak = peak_.load();
    while (live > peak && !peak_.compare_exchange_weak(peak, live)) {
    }
  }

  std::int64_t peak() const { return peak_.load(); }

 private:
  const std::shared_ptr<CpuMemoryObserver> enclosing_;
  std::atomic<std::int64_t> live_{0};
  std::atomic<std::int64_t> peak_{0};
};

class CpuMeasurement : public PeakMemoryMeasurement {
 public:
  static absl::StatusOr<std::unique_ptr<PeakMemoryMeasurement>> Begin() {
    c10::DebugInfoBase* occupant =
        c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE);
    std::shared_ptr<CpuMemoryObserver> enclosing;
    if (occupant != nullptr) {
      auto* observer = dynamic_cast<CpuMemoryObserver*>(occupant);
      if (observer == nullptr) {
        return absl::FailedPreconditionError(
            "Peak memory measurement for 'cpu' is unavailable while a PyTorch "
            "profiler is active on this thread (it owns the allocator's "
            "reports); "
            "measure outside the profiler.");
      }
      enclosing = observer->shared_from_this();
    }
    return std::unique_ptr<PeakMemoryMeasurement>(
        new CpuMeasurement(std::move(enclosing)));
  }

  ~CpuMeasurement() override { Restore(); }

  absl::StatusOr<PeakMemory> End() override {
    Restore();
    PeakMemory memory{"cpu", "pytorch_tensor_bytes"};
    memory.baseline_bytes = 0;
    memory.peak_bytes = observer_->peak();
    memory.delta_bytes = memory.peak_bytes - memory.baseline_bytes;
    return memory;
  }

 private:
  explicit CpuMeasurement(std::shared_ptr<CpuMemoryObserver> enclosing)
      : thread_(std::this_thread::get_id()),
        previous_(c10::ThreadLocalDebugInfo::current()),
        observer_(std::make_shared<CpuMemoryObserver>(std::move(enclosing))) {
    c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE,
                                     observer_);
  }

  void Restore() {
    if (restored_) return;
    restored_ = true;
    if (std::this_thread::get_id() == thread_) {
      c10::ThreadLocalDebugInfo::_forceCurrentDebugInfo(previous_);
    }
  }

  const std::thread::id thread_;
  const std::shared_ptr<c10::ThreadLocalDebugInfo> previous_;
  const std::shared_ptr<CpuMemoryObserver> observer_;
  bool restored_ = false;
};

std::string DeviceTypeLabel(c10::DeviceType type) {
  return c10::DeviceTypeName(type, /*lower_case=*/false);
}

class AcceleratorMeasurement : public PeakMemoryMeasurement {
 public:
  static absl::StatusOr<std::unique_ptr<PeakMemoryMeasurement>> Begin(
      const c10::Device& requested) {
    const c10::DeviceType type = requested.type();
    const std::string label = DeviceTypeLabel(type);
    if (!c10::impl::hasDeviceGuardImpl(type)) {
      return absl::FailedPreconditionError(
          absl::StrCat("Requested ", label, " device '", requested.str(),
                       "' is unavailable in PyTorch ", kTorchVersion,
                       "; this torch build has no ", label,
                       " support (verify the build, driver, and hardware)."));
    }
    const c10::impl::DeviceGuardImplInterface* guard =
        c10::impl::getDeviceGuardImpl(type);
    const c10::DeviceIndex count = guard->deviceCount();
    if (count <= 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "Requested ", label, " device '", requested.str(),
          "' is unavailable in PyTorch ", kTorchVersion, "; verify the ", label,
          "-enabled build, driver, and hardware."));
    }
    const c10::DeviceIndex index =
        requested.has_index() ? requested.index() : guard->getDevice().index();
    const c10::Device device(type, index);
    if (index >= count) {
      return absl::FailedPreconditionError(
          absl::StrCat("Requested ", label, " device '", device.str(),
                       "' is unavailable in PyTorch ", kTorchVersion,
                       "; PyTorch reports ", count, " ", label, " device(s)."));
    }
    auto* allocator =
        dynamic_cast<c10::DeviceAllocator*>(c10::GetAllocator(type));
    if (allocator == nullptr) {
      return absl::UnimplementedError(
          absl::StrCat("Peak memory measurement for '", device.str(),
                       "' is unavailable in PyTorch ", kTorchVersion,
                       "; its allocator keeps no statistics."));
    }
    guard->synchronizeDevice(index);
    auto measurement = std::unique_ptr<AcceleratorMeasurement>(
        new AcceleratorMeasurement(device, guard, allocator));
    measurement->baseline_ =
        Aggregate(allocator->getDeviceStats(index).reserved_bytes).current;
    allocator->resetPeakStats(index);
    return std::unique_ptr<PeakMemoryMeasurement>(std::move(measurement));
  }

  absl::StatusOr<PeakMemory> End() override {
    guard_->synchronizeDevice(device_.index());
    const auto stats = allocator_->getDeviceStats(device_.index());
    PeakMemory memory{device_.str(), "pytorch_reserved_bytes"};
    memory.baseline_bytes = baseline_;
    memory.peak_bytes = Aggregate(stats.reserved_bytes).peak;
    memory.delta_bytes = memory.peak_bytes - memory.baseline_bytes;
    memory.allocated_peak_bytes = Aggregate(stats.allocated_bytes).peak;
    return memory;
  }

 private:
  AcceleratorMeasurement(c10::Device device,
                         const c10::impl::DeviceGuardImplInterface* guard,
                         c10::DeviceAllocator* allocator)
      : device_(device), guard_(guard), allocator_(allocator) {}

  static const c10::CachingAllocator::Stat& Aggregate(
      const c10::CachingAllocator::StatArray& stats) {
    return stats[static_cast<std::size_t>(
        c10::CachingAllocator::StatType::AGGREGATE)];
  }

  const c10::Device device_;
  const c10::impl::DeviceGuardImplInterface* guard_;
  c10::DeviceAllocator* allocator_;
  std::int64_t baseline_ = 0;
};

}  // namespace

report::Json PeakMemoryToJson(const PeakMemory& memory) {
  report::Json node = report::Json::object();
  node["device"] = memory.device;
  node["metric"] = memory.metric;
  node["baseline_bytes"] = memory.baseline_bytes;
  node["peak_bytes"] = memory.peak_bytes;
  node["delta_bytes"] = memory.delta_bytes;
  if (memory.allocated_peak_bytes) {
    node["allocated_peak_bytes"] = *memory.allocated_peak_bytes;
  }
  return node;
}

absl::StatusOr<std::unique_ptr<PeakMemoryMeasurement>>
PeakMemoryMeasurement::Begin(const c10::Device& device) {
  switch (device.type()) {
    case c10::DeviceType::CPU:
      return CpuMeasurement::Begin();
    case c10::DeviceType::CUDA:
    case c10::DeviceType::HIP:
    case c10::DeviceType::XPU:
    case c10::DeviceType::MPS:
    case c10::DeviceType::MTIA:
    case c10::DeviceType::PrivateUse1:
      return AcceleratorMeasurement::Begin(device);
    default:
      return absl::UnimplementedError(
          absl::StrCat("Peak memory measurement is not implemented for '",
                       device.str(), "' in PyTorch ", kTorchVersion, "."));
  }
}

absl::StatusOr<PeakMemory> MeasurePeakMemory(
    const std::function<void()>& workload, const c10::Device& device) {
  TS_ASSIGN_OR_RETURN(std::unique_ptr<PeakMemoryMeasurement> measurement,
                      PeakMemoryMeasurement::Begin(device));
  workload();
  return measurement->End();
}

}  // namespace torchscan
