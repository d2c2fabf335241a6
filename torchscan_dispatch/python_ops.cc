// Operators under the `torchscan` namespace through which Python drives the
// counter (loaded with torch.ops.load_library). Python's context managers span
// many calls, so counting is begun and ended by handle instead of by scope.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <c10/util/Exception.h>
#include <torch/library.h>

#include "absl/synchronization/mutex.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "torchscan_dispatch/active_counting.h"
#include "torchscan_dispatch/dispatch_key.h"
#include "torchscan_dispatch/fallback_registration.h"

namespace torchscan::dispatch {
namespace {

class OpenMeasurements {
 public:
  static OpenMeasurements& Get() {
    static OpenMeasurements* open = new OpenMeasurements();
    return *open;
  }

  std::int64_t Begin() {
    auto counting = std::make_unique<ActiveCounting>();
    absl::MutexLock lock(&mu_);
    const std::int64_t handle = next_handle_++;
    open_.emplace(handle, std::move(counting));
    return handle;
  }

  std::string End(std::int64_t handle) {
    std::unique_ptr<ActiveCounting> counting;
    {
      absl::MutexLock lock(&mu_);
      auto it = open_.find(handle);
      TORCH_CHECK(it != open_.end(), "torchscan: no open measurement with handle ",
                  handle);
      TORCH_CHECK(it->second->thread() == std::this_thread::get_id(),
                  "torchscan: measurement ", handle,
                  " must be ended on the thread that began it");
      for (auto later = std::next(it); later != open_.end(); ++later) {
        TORCH_CHECK(later->second->thread() != std::this_thread::get_id(),
                    "torchscan: measurement ", later->first,
                    " began inside measurement ", handle,
                    " and must be ended first");
      }
      counting = std::move(it->second);
      open_.erase(it);
    }
    absl::StatusOr<report::FlopReport> report = counting->session().BuildReport();
    counting.reset();  // restore the thread state before anything can throw
    TORCH_CHECK(report.ok(), "torchscan: ", report.status().ToString());
    return report::DumpJson(report::FlopReportToJson(*report));
  }

 private:
  absl::Mutex mu_;
  std::int64_t next_handle_ ABSL_GUARDED_BY(mu_) = 1;
  // Ordered by handle, so later entries were begun later.
  std::map<std::int64_t, std::unique_ptr<ActiveCounting>> open_ ABSL_GUARDED_BY(mu_);
};

std::int64_t BeginCounting() { return OpenMeasurements::Get().Begin(); }

std::string EndCounting(std::int64_t handle) {
  return OpenMeasurements::Get().End(handle);
}

std::string BuildInfo() {
  report::Json info = report::Json::object();
  info["torch_version"] = TORCHSCAN_TORCH_FULL_VERSION;
  info["dispatch_key"] = c10::toString(kCountingKey);
  const absl::Status fallback = CountingFallbackStatus();
  info["counting_available"] = fallback.ok();
  info["counting_error"] = std::string(fallback.message());
  return report::DumpJson(info);
}

// Defines the operators while the library loads. A second copy of the library
// in the same process cannot define the namespace again; it keeps the first
// copy's operators instead of failing inside the dynamic loader.
class OperatorRegistration {
 public:
  OperatorRegistration() {
    try {
      definitions_.emplace(torch::Library::DEF, kOwnNamespace, std::nullopt,
                           __FILE__, __LINE__);
      definitions_->def("_begin_counting() -> int", &BeginCounting);
      definitions_->def("_end_counting(int handle) -> str", &EndCounting);
      definitions_->def("_build_info() -> str", &BuildInfo);
      // Our own control operators pass the counting key untouched.
      passthrough_.emplace(torch::Library::IMPL, kOwnNamespace, kCountingKey,
                           __FILE__, __LINE__);
      for (const char* name : {"_begin_counting", "_end_counting", "_build_info"}) {
        passthrough_->impl(name, torch::CppFunction::makeFallthrough());
      }
    } catch (const c10::Error& error) {
      passthrough_.reset();
      definitions_.reset();
    }
  }

 private:
  std::optional<torch::Library> definitions_;
  std::optional<torch::Library> passthrough_;
};

const OperatorRegistration registration;

}  // namespace
}  // namespace torchscan::dispatch
