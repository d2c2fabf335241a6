// C functions for the two calls Python's module hooks make on every module
// call of a measured workload (python/torchscan_dispatch/_module_scopes.py).
//
// Through torch.ops a call costs about a microsecond (arguments parsed
// against the schema and boxed); through ctypes about a fifth of that, which
// is most of the difference between by_module tracking that is and is not
// noticeable on a forward pass. Everything else stays an operator. Errors
// cannot cross a C boundary: a failing call returns -1 and the caller repeats
// it through the operator of the same name, which raises with the message.

#include <c10/util/Exception.h>

#include <cstdint>
#include <exception>
#include <limits>
#include <string>

#include "python/operators/open_measurements.h"
#include "torchscan_dispatch/counting_session.h"

extern "C" {

// The scope id after adding (`present` != 0) or removing `label`, which
// becomes the current scope; -1 on any error.
__attribute__((visibility("default"))) std::int64_t
torchscan_change_scope_label(std::int64_t handle, std::int64_t channel,
                             const char* label, std::int32_t present) noexcept {
  using namespace torchscan::dispatch;
  if (!IsScopeChannel(channel) || label == nullptr) return -1;
  try {
    return OpenMeasurements::Get().Session(handle).ChangeScopeLabel(
        static_cast<ScopeChannel>(channel), std::string(label), present != 0);
  } catch (const std::exception&) {
    return -1;
  }
}

// Makes scope `id` current; 0 on success, -1 on any error.
__attribute__((visibility("default"))) std::int32_t torchscan_set_scope_id(
    std::int64_t handle, std::int64_t channel, std::int64_t id) noexcept {
  using namespace torchscan::dispatch;
  if (!IsScopeChannel(channel) || id < 0 ||
      id > std::numeric_limits<std::uint32_t>::max()) {
    return -1;
  }
  try {
    return OpenMeasurements::Get()
                   .Session(handle)
                   .SetScopeId(static_cast<ScopeChannel>(channel),
                               static_cast<std::uint32_t>(id))
                   .ok()
               ? 0
               : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

}  // extern "C"
